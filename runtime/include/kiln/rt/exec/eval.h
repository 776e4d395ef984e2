//===- eval.h - Top-1 / top-5 accuracy with the eval function ---*- C++ -*-===//
//
// Runs the compiled eval step over every validation record of this rank
// (the pipeline's eval path: center crop, no flip, in order, a final partial
// batch kept) and scores its logits: top-k counts an example when fewer than
// k classes have a strictly larger logit than the true class, and the loss is
// the mean softmax cross entropy in double, computed here from the logits.
// Only the batch's first `valid` examples count: the padding that fills a
// final partial batch is told apart by that count, never by its label. Sums
// are reduced over the ranks. BN statistics are each rank's own, as in
// training.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RT_EXEC_EVAL_H
#define KILN_RT_EXEC_EVAL_H

#include "kiln/base/status.h"
#include "kiln/rt/exec/manifest.h"

#include <cstdint>
#include <functional>

namespace kiln::rt::exec {

struct EvalTotals {
  double examples = 0;
  double top1 = 0; ///< correct counts before reduction, fractions after
  double top5 = 0;
  double lossSum = 0;
};

/// Adds the first `valid` examples of a scored batch (logits and labels in
/// their arena slots) to `totals`. kInternal if one of them has a label
/// outside the logits' classes (the pipeline rejects those).
Status scoreBatch(const Function &eval, const uint8_t *arena, int64_t valid,
                  EvalTotals &totals);

} // namespace kiln::rt::exec

#endif // KILN_RT_EXEC_EVAL_H
