//===- batchnorm.cpp - Batch normalisation ---------------------------------===//
//
// Part of Kiln. The channel is the last dimension; every kernel views x as a
// [M, C] matrix (M = product of the leading dimensions).
//
//===----------------------------------------------------------------------===//

#include "kiln/ref/batchnorm.h"

#include "kiln/ref/check.h"

#include <cmath>

namespace kiln::ref {

Status checkBatchNormShapes(const Shape &xShape,
                            const std::vector<const Tensor *> &perChannel) {
  if (xShape.size() != 4 && xShape.size() != 2)
    return invalidArgumentError(
        "batch norm: input must be [N,H,W,C] or [N,C], got " +
        shapeToString(xShape));
  int64_t c = xShape.back();
  if (c < 1 || numElements(xShape) < 1)
    return invalidArgumentError("batch norm: empty input " +
                                shapeToString(xShape));
  for (const Tensor *t : perChannel) {
    Status s = checkShape(*t, Shape{c}, "batch norm per-channel operand");
    if (!s.isOk())
      return s;
  }
  return Status::ok();
}

namespace {

/// Rows (elements per channel) and channels of x viewed as [M, C].
struct ChannelView {
  int64_t m, c;
  explicit ChannelView(const Shape &xShape)
      : m(numElements(xShape) / xShape.back()), c(xShape.back()) {}
  size_t idx(int64_t row, int64_t ch) const {
    return static_cast<size_t>(row * c + ch);
  }
};

} // namespace

BatchNormTrainResult batchNormTrain(const Tensor &x, const Tensor &gamma,
                                    const Tensor &beta,
                                    const Tensor &runningMean,
                                    const Tensor &runningVar, float epsilon,
                                    float momentum) {
  KILN_REF_CHECK_OK(checkBatchNormShapes(
      x.shape, {&gamma, &beta, &runningMean, &runningVar}));
  ChannelView v(x.shape);
  Shape cShape{v.c};
  BatchNormTrainResult r{Tensor(x.shape), Tensor(cShape), Tensor(cShape),
                         Tensor(cShape), Tensor(cShape)};
  for (int64_t ch = 0; ch < v.c; ++ch) {
    double sum = 0.0;
    for (int64_t row = 0; row < v.m; ++row)
      sum += x.data[v.idx(row, ch)];
    double mean = sum / static_cast<double>(v.m);
    double sq = 0.0;
    for (int64_t row = 0; row < v.m; ++row) {
      double d = x.data[v.idx(row, ch)] - mean;
      sq += d * d;
    }
    double var = sq / static_cast<double>(v.m);
    double unbiased =
        v.m > 1 ? sq / static_cast<double>(v.m - 1) : var;
    double invStd = 1.0 / std::sqrt(var + static_cast<double>(epsilon));
    for (int64_t row = 0; row < v.m; ++row) {
      double xhat = (x.data[v.idx(row, ch)] - mean) * invStd;
      r.y.data[v.idx(row, ch)] =
          static_cast<float>(static_cast<double>(gamma[ch]) * xhat + beta[ch]);
    }
    double mom = momentum;
    r.batchMean[ch] = static_cast<float>(mean);
    r.batchVar[ch] = static_cast<float>(var);
    r.newRunningMean[ch] =
        static_cast<float>(mom * runningMean[ch] + (1.0 - mom) * mean);
    r.newRunningVar[ch] =
        static_cast<float>(mom * runningVar[ch] + (1.0 - mom) * unbiased);
  }
  return r;
}

BatchNormGrads batchNormBackward(const Tensor &dy, const Tensor &x,
                                 const Tensor &gamma, const Tensor &batchMean,
                                 const Tensor &batchVar, float epsilon) {
  KILN_REF_CHECK_OK(
      checkBatchNormShapes(x.shape, {&gamma, &batchMean, &batchVar}));
  KILN_REF_CHECK_OK(checkShape(dy, x.shape, "batch norm backward dy"));
  ChannelView v(x.shape);
  Shape cShape{v.c};
  BatchNormGrads r{Tensor(x.shape), Tensor(cShape), Tensor(cShape)};
  double m = static_cast<double>(v.m);
  for (int64_t ch = 0; ch < v.c; ++ch) {
    double mean = batchMean[ch];
    double invStd =
        1.0 / std::sqrt(static_cast<double>(batchVar[ch]) + epsilon);
    double sumDy = 0.0, sumDyXhat = 0.0;
    for (int64_t row = 0; row < v.m; ++row) {
      double xhat = (x.data[v.idx(row, ch)] - mean) * invStd;
      sumDy += dy.data[v.idx(row, ch)];
      sumDyXhat += dy.data[v.idx(row, ch)] * xhat;
    }
    double scale = gamma[ch] * invStd;
    for (int64_t row = 0; row < v.m; ++row) {
      double xhat = (x.data[v.idx(row, ch)] - mean) * invStd;
      r.dx.data[v.idx(row, ch)] = static_cast<float>(
          scale * (dy.data[v.idx(row, ch)] - sumDy / m - xhat * sumDyXhat / m));
    }
    r.dgamma[ch] = static_cast<float>(sumDyXhat);
    r.dbeta[ch] = static_cast<float>(sumDy);
  }
  return r;
}

Tensor batchNormInference(const Tensor &x, const Tensor &gamma,
                          const Tensor &beta, const Tensor &runningMean,
                          const Tensor &runningVar, float epsilon) {
  KILN_REF_CHECK_OK(checkBatchNormShapes(
      x.shape, {&gamma, &beta, &runningMean, &runningVar}));
  ChannelView v(x.shape);
  Tensor y(x.shape);
  for (int64_t ch = 0; ch < v.c; ++ch) {
    double invStd =
        1.0 / std::sqrt(static_cast<double>(runningVar[ch]) + epsilon);
    for (int64_t row = 0; row < v.m; ++row)
      y.data[v.idx(row, ch)] = static_cast<float>(
          static_cast<double>(gamma[ch]) *
              (static_cast<double>(x.data[v.idx(row, ch)]) - runningMean[ch]) *
              invStd +
          beta[ch]);
  }
  return y;
}

} // namespace kiln::ref
