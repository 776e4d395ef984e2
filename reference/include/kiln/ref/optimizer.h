//===- optimizer.h - Per-parameter optimizer updates -----------*- C++ -*-===//
//
// Part of Kiln. Each update works on one parameter tensor w, its gradient g
// and its momentum state v (same shape as w, zero-initialised), in place.
// Arithmetic is done in double per element and stored back as fp32; norms are
// accumulated in double.
//
// SGD with momentum (PyTorch / TF MomentumOptimizer convention):
//   g' = g + wd*w            (only if the parameter is decayed)
//   v  = m*v + g'
//   w -= lr*v                (plain)
//   w -= lr*(g' + m*v)       (Nesterov, with the updated v)
//
// LARS, as the MLPerf ResNet-50 reference (mlcommons/training,
// image_classification/tensorflow2/lars_optimizer.py) does it:
//   skipped parameters (BN gamma/beta, biases): v = m*v + lr*g; w -= v
//     (no trust ratio, no weight decay);
//   others: trust = eta*|w| / (|g| + wd*|w| + eps) if |w| > 0 and |g| > 0,
//           else 1;  g' = g + wd*w;  v = m*v + lr*trust*g';  w -= v.
//   Nesterov (both kinds): w -= m*v + lr*trust*g' (trust = 1 when skipped).
// |.| is the L2 norm of the whole tensor; the norms use the gradient before
// decay is added.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_REF_OPTIMIZER_H
#define KILN_REF_OPTIMIZER_H

#include "kiln/ref/tensor.h"

namespace kiln::ref {

struct SgdParams {
  double learningRate = 0.1;
  double momentum = 0.9;
  double weightDecay = 0.0;
  bool nesterov = false;
};

struct LarsParams {
  double learningRate = 0.1;
  double momentum = 0.9;
  double weightDecay = 1e-4;
  /// The LARS coefficient ("eeta" in the TF code).
  double eta = 0.001;
  /// Added to the trust-ratio denominator. 0 is the default of TF's
  /// LARSOptimizer and of the MLPerf reference's --lars_epsilon flag (whose
  /// Keras optimizer then substitutes the Keras epsilon 1e-7 for 0); the
  /// caller passes the recipe's value explicitly.
  double epsilon = 0.0;
  bool nesterov = false;
};

/// Checks that g and v have w's shape.
Status checkOptimizerShapes(const Tensor &w, const Tensor &g, const Tensor &v);

/// One SGD-with-momentum step; `applyDecay` says whether this parameter gets
/// weight decay (false for BN parameters and biases in the usual recipes).
void sgdMomentumUpdate(Tensor &w, const Tensor &g, Tensor &v,
                       const SgdParams &params, bool applyDecay);

/// The LARS trust ratio eta*|w| / (|g| + wd*|w| + eps), or 1 if either norm
/// is zero.
double larsTrustRatio(const Tensor &w, const Tensor &g,
                      const LarsParams &params);

/// One LARS step; `skip` marks the parameters that bypass the trust ratio
/// and the weight decay (BN parameters and biases).
void larsUpdate(Tensor &w, const Tensor &g, Tensor &v, const LarsParams &params,
                bool skip);

} // namespace kiln::ref

#endif // KILN_REF_OPTIMIZER_H
