//===- loss.h - Softmax cross-entropy with label smoothing -----*- C++ -*-===//
//
// Part of Kiln. logits [N,K], labels int32 [N] (0-based class ids), label
// smoothing ls in [0,1]:
//   q      = (1-ls)*onehot(label) + ls/K
//   loss   = (1/N) * sum_n -sum_k q[n,k] * log_softmax(logits[n])_k
//   dlogits = dloss * (softmax(logits) - q) / N
// log_softmax uses the max-subtracted log-sum-exp, in double.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_REF_LOSS_H
#define KILN_REF_LOSS_H

#include "kiln/ref/tensor.h"

#include <cstdint>
#include <vector>

namespace kiln::ref {

/// Checks logits [N,K] (K >= 1), labels [N] with every label in [0,K), and
/// 0 <= ls <= 1. The message names the first bad label and its position.
Status checkSoftmaxCrossEntropy(const Tensor &logits,
                                const std::vector<int32_t> &labels,
                                float labelSmoothing);

/// Mean loss over the batch as a rank-0 tensor (shape {}).
Status softmaxCrossEntropy(const Tensor &logits,
                           const std::vector<int32_t> &labels,
                           float labelSmoothing, Tensor &loss);

/// As above, the loss returned in double before rounding to fp32 (used by
/// gradient checks that need the extra digits).
Status softmaxCrossEntropy(const Tensor &logits,
                           const std::vector<int32_t> &labels,
                           float labelSmoothing, double &loss);

/// dlogits for an upstream scalar gradient dloss (1 for the loss itself).
Status softmaxCrossEntropyBackward(const Tensor &logits,
                                   const std::vector<int32_t> &labels,
                                   float labelSmoothing, float dloss,
                                   Tensor &dlogits);

} // namespace kiln::ref

#endif // KILN_REF_LOSS_H
