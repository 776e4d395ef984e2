//===- batchnorm.h - Batch normalisation -----------------------*- C++ -*-===//
//
// Part of Kiln. Statistics are per channel (the last dimension) over all
// other dimensions, so x may be [N,H,W,C] or [N,C]. Let M be the number of
// elements per channel.
//
//   mean = sum(x)/M,  var = sum((x-mean)^2)/M            (biased)
//   y    = gamma * (x-mean)/sqrt(var+eps) + beta
//   newRunningMean = momentum*runningMean + (1-momentum)*mean
//   newRunningVar  = momentum*runningVar  + (1-momentum)*var*M/(M-1)
//
// momentum is TensorFlow's "decay" (e.g. 0.9). For M == 1 the unbiased
// variance is taken equal to the biased one (TF's FusedBatchNorm does the
// same). Reductions accumulate in double.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_REF_BATCHNORM_H
#define KILN_REF_BATCHNORM_H

#include "kiln/ref/tensor.h"

namespace kiln::ref {

struct BatchNormTrainResult {
  Tensor y;
  /// Per-channel batch mean [C].
  Tensor batchMean;
  /// Per-channel biased batch variance [C], the one used to normalise.
  Tensor batchVar;
  Tensor newRunningMean;
  Tensor newRunningVar;
};

struct BatchNormGrads {
  Tensor dx;
  Tensor dgamma;
  Tensor dbeta;
};

/// Validates x ([N,H,W,C] or [N,C]) and that every per-channel operand is [C].
Status checkBatchNormShapes(const Shape &xShape,
                            const std::vector<const Tensor *> &perChannel);

/// Training-mode forward: normalise with the batch statistics and update the
/// running statistics.
BatchNormTrainResult batchNormTrain(const Tensor &x, const Tensor &gamma,
                                    const Tensor &beta,
                                    const Tensor &runningMean,
                                    const Tensor &runningVar, float epsilon,
                                    float momentum);

/// The exact training-mode gradient (through the batch statistics):
///   xhat = (x-mean)/sqrt(var+eps), dbeta = sum dy, dgamma = sum dy*xhat,
///   dx = gamma/sqrt(var+eps) * (dy - dbeta/M - xhat*dgamma/M).
BatchNormGrads batchNormBackward(const Tensor &dy, const Tensor &x,
                                 const Tensor &gamma, const Tensor &batchMean,
                                 const Tensor &batchVar, float epsilon);

/// Inference-mode forward with the running statistics.
Tensor batchNormInference(const Tensor &x, const Tensor &gamma,
                          const Tensor &beta, const Tensor &runningMean,
                          const Tensor &runningVar, float epsilon);

} // namespace kiln::ref

#endif // KILN_REF_BATCHNORM_H
