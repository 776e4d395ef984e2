//===- eval.cpp - Scoring the eval function's logits ----------------------===//

#include "kiln/rt/exec/eval.h"

#include "kiln/rt/exec/variables.h"

#include <cmath>
#include <cstring>
#include <vector>

namespace kiln::rt::exec {

void scoreBatch(const Function &eval, const uint8_t *arena, int64_t valid,
                EvalTotals &totals) {
  const TensorRef &logits = *eval.output("logits");
  const TensorRef &labels = *eval.input("labels");
  const int64_t classes = logits.shape[1];
  std::vector<double> row(static_cast<size_t>(classes));
  for (int64_t n = 0; n < valid; ++n) {
    int32_t label;
    std::memcpy(&label, arena + labels.offset + 4 * n, 4);
    if (label < 0 || label >= classes)
      continue; // the pipeline already rejects such labels
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
}

} // namespace kiln::rt::exec
