//===- loss.cpp - Softmax cross-entropy with label smoothing ---------------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "kiln/ref/loss.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

namespace kiln::ref {

Status checkSoftmaxCrossEntropy(const Tensor &logits,
                                const std::vector<int32_t> &labels,
                                float labelSmoothing) {
  if (logits.rank() != 2 || logits.dim(1) < 1)
    return invalidArgumentError(
        "softmax cross-entropy: logits must be [N,K] with K >= 1, got " +
        shapeToString(logits.shape));
  if (static_cast<int64_t>(logits.data.size()) != numElements(logits.shape))
    return invalidArgumentError(
        "softmax cross-entropy: logits data size mismatch");
  if (static_cast<int64_t>(labels.size()) != logits.dim(0))
    return invalidArgumentError(
        "softmax cross-entropy: " + std::to_string(labels.size()) +
        " labels for " + std::to_string(logits.dim(0)) + " rows of logits");
  if (!(labelSmoothing >= 0.0f && labelSmoothing <= 1.0f))
    return invalidArgumentError("softmax cross-entropy: label smoothing " +
                                std::to_string(labelSmoothing) +
                                " outside [0, 1]");
  int64_t k = logits.dim(1);
  for (size_t n = 0; n < labels.size(); ++n)
    if (labels[n] < 0 || labels[n] >= k)
      return invalidArgumentError("softmax cross-entropy: label " +
                                  std::to_string(labels[n]) + " of example " +
                                  std::to_string(n) + " outside [0, " +
                                  std::to_string(k) + ")");
  return Status::ok();
}

namespace {

/// log_softmax of row n, in double, via the max-subtracted log-sum-exp.
std::vector<double> logSoftmaxRow(const Tensor &logits, int64_t n) {
  int64_t k = logits.dim(1);
  double mx = logits.at(n, 0);
  for (int64_t j = 1; j < k; ++j)
    mx = std::max(mx, static_cast<double>(logits.at(n, j)));
  double sum = 0.0;
  for (int64_t j = 0; j < k; ++j)
    sum += std::exp(logits.at(n, j) - mx);
  double lse = mx + std::log(sum);
  std::vector<double> out(static_cast<size_t>(k));
  for (int64_t j = 0; j < k; ++j)
    out[static_cast<size_t>(j)] = logits.at(n, j) - lse;
  return out;
}

/// The smoothed target q[n, j].
double target(int64_t j, int32_t label, double ls, int64_t k) {
  return (j == label ? 1.0 - ls : 0.0) + ls / static_cast<double>(k);
}

} // namespace

Status softmaxCrossEntropy(const Tensor &logits,
                           const std::vector<int32_t> &labels,
                           float labelSmoothing, double &loss) {
  Status s = checkSoftmaxCrossEntropy(logits, labels, labelSmoothing);
  if (!s.isOk())
    return s;
  int64_t n = logits.dim(0), k = logits.dim(1);
  double total = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    std::vector<double> logp = logSoftmaxRow(logits, i);
    for (int64_t j = 0; j < k; ++j) {
      double q = target(j, labels[static_cast<size_t>(i)], labelSmoothing, k);
      if (q != 0.0)
        total -= q * logp[static_cast<size_t>(j)];
    }
  }
  loss = n > 0 ? total / static_cast<double>(n) : 0.0;
  return Status::ok();
}

Status softmaxCrossEntropy(const Tensor &logits,
                           const std::vector<int32_t> &labels,
                           float labelSmoothing, Tensor &loss) {
  double value = 0.0;
  Status s = softmaxCrossEntropy(logits, labels, labelSmoothing, value);
  if (!s.isOk())
    return s;
  loss = Tensor::filled(Shape{}, static_cast<float>(value));
  return Status::ok();
}

Status softmaxCrossEntropyBackward(const Tensor &logits,
                                   const std::vector<int32_t> &labels,
                                   float labelSmoothing, float dloss,
                                   Tensor &dlogits) {
  Status s = checkSoftmaxCrossEntropy(logits, labels, labelSmoothing);
  if (!s.isOk())
    return s;
  int64_t n = logits.dim(0), k = logits.dim(1);
  Tensor out(logits.shape);
  double scale = n > 0 ? static_cast<double>(dloss) / static_cast<double>(n)
                       : 0.0;
  for (int64_t i = 0; i < n; ++i) {
    std::vector<double> logp = logSoftmaxRow(logits, i);
    for (int64_t j = 0; j < k; ++j) {
      double q = target(j, labels[static_cast<size_t>(i)], labelSmoothing, k);
      out.at(i, j) = static_cast<float>(
          scale * (std::exp(logp[static_cast<size_t>(j)]) - q));
    }
  }
  dlogits = std::move(out);
  return Status::ok();
}

} // namespace kiln::ref
