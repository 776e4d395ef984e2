//===- eval.cpp - Scoring the eval function's logits ----------------------===//

#include "kiln/rt/exec/eval.h"

#include "kiln/rt/exec/variables.h"

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

namespace kiln::rt::exec {

Status scoreBatch(const Function &eval, const uint8_t *arena, int64_t valid,
                  EvalTotals &totals) {
  const TensorRef &logits = *eval.output("logits");
  const TensorRef &labels = *eval.input("labels");
  const int64_t classes = logits.shape[1];
  std::vector<double> row(static_cast<size_t>(classes));
  for (int64_t n = 0; n < valid; ++n) {
    int32_t label;
    std::memcpy(&label, arena + labels.offset + 4 * n, 4);
    // The pipeline checks labels against these classes (num_classes) and
    // synthetic labels are drawn from them: a label outside is a bug, and
    // dropping the example would bias the score.
    if (label < 0 || label >= classes)
      return KILN_STATUS(kInternal,
                         "eval: example " + std::to_string(n) + " of " +
                             std::to_string(valid) + " in the batch has label " +
                             std::to_string(label) + ", outside the model's " +
                             "classes 0.." + std::to_string(classes - 1));
    double maxLogit = -INFINITY;
    for (int64_t c = 0; c < classes; ++c) {
      row[static_cast<size_t>(c)] =
          loadElement(arena + logits.offset, logits.dtype, n * classes + c);
      maxLogit = std::max(maxLogit, row[static_cast<size_t>(c)]);
    }
    double target = row[static_cast<size_t>(label)];
    int64_t larger = 0;
    double sumExp = 0;
    for (int64_t c = 0; c < classes; ++c) {
      larger += row[static_cast<size_t>(c)] > target;
      sumExp += std::exp(row[static_cast<size_t>(c)] - maxLogit);
    }
    totals.examples += 1;
    totals.top1 += larger < 1;
    totals.top5 += larger < 5;
    totals.lossSum += std::log(sumExp) + maxLogit - target;
  }
  return Status::ok();
}

} // namespace kiln::rt::exec
