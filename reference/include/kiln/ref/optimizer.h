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
// LARS in the two forms the MLPerf ResNet-50 references use (skipTrust: the
// trust ratio is 1; decay: wd*w is added to the gradient):
//   tf2  (mlcommons/training image_classification/tensorflow2/
//         lars_optimizer.py): trust = eta*|w| / (|g| + wd*|w| + eps) if
//         |w| > 0 and |g| > 0, else 1, of the gradient before decay;
//         g' = g + wd*w;  v = m*v + lr*trust*g';  w -= v
//         (Nesterov: w -= m*v + lr*trust*g').
//   v0_6 (training_results_v0.6 Google resnet: tf.contrib.opt.LARSOptimizer
//         with the L2 term in the loss): g' = g + wd*w;
//         trust = eta*|w| / (|g'| + wd*|w| + eps) if |w| > 0 and |g'| > 0,
//         else 1;  v = m*v + g';  w -= lr*trust*v
//         (TF ApplyMomentum; Nesterov: w -= lr*trust*(g' + m*v)).
// MLPerf's skip_list (BN gamma/beta, biases) skips both trust and decay in
// tf2; in v0.6 the skip list skips the trust ratio and the loss decides the
// decay (every non-BN variable). |.| is the L2 norm of the whole tensor.
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

/// Where LARS applies lr*trust: inside the momentum (MLPerf TF2) or to the
/// momentum of the raw decayed gradient (MLPerf v0.6). See the file comment.
enum class LarsForm { Tf2, V0_6 };

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
  LarsForm form = LarsForm::Tf2;
};

/// Checks that g and v have w's shape.
Status checkOptimizerShapes(const Tensor &w, const Tensor &g, const Tensor &v);

/// One SGD-with-momentum step; `applyDecay` says whether this parameter gets
/// weight decay (false for BN parameters and biases in the usual recipes).
void sgdMomentumUpdate(Tensor &w, const Tensor &g, Tensor &v,
                       const SgdParams &params, bool applyDecay);

/// The LARS trust ratio eta*|w| / (|g| + wd*|w| + eps), or 1 if either norm
/// is zero. `g` is the gradient the form takes the norm of (v0.6: with the
/// decay added).
double larsTrustRatio(const Tensor &w, const Tensor &g,
                      const LarsParams &params);

/// One LARS step of `params.form`: `skipTrust` sets the trust ratio to 1,
/// `decay` adds wd*w to the gradient.
void larsUpdate(Tensor &w, const Tensor &g, Tensor &v, const LarsParams &params,
                bool skipTrust, bool decay);

/// MLPerf's skip list: `skip` parameters (BN parameters and biases) get
/// neither the trust ratio nor the decay, the others both.
inline void larsUpdate(Tensor &w, const Tensor &g, Tensor &v,
                       const LarsParams &params, bool skip) {
  larsUpdate(w, g, v, params, /*skipTrust=*/skip, /*decay=*/!skip);
}

} // namespace kiln::ref

#endif // KILN_REF_OPTIMIZER_H
