//===- optimizer.cpp - Per-parameter optimizer updates ---------------------===//
//
// Part of Kiln. See optimizer.h for the update rules and their sources.
//
//===----------------------------------------------------------------------===//

#include "kiln/ref/optimizer.h"

#include "kiln/ref/check.h"

#include <cmath>

namespace kiln::ref {

Status checkOptimizerShapes(const Tensor &w, const Tensor &g, const Tensor &v) {
  Status s = checkShape(g, w.shape, "optimizer gradient");
  if (!s.isOk())
    return s;
  return checkShape(v, w.shape, "optimizer momentum state");
}

void sgdMomentumUpdate(Tensor &w, const Tensor &g, Tensor &v,
                       const SgdParams &params, bool applyDecay) {
  KILN_REF_CHECK_OK(checkOptimizerShapes(w, g, v));
  double wd = applyDecay ? params.weightDecay : 0.0;
  double m = params.momentum, lr = params.learningRate;
  for (int64_t i = 0; i < w.size(); ++i) {
    double wi = w[i];
    double gi = static_cast<double>(g[i]) + wd * wi;
    double vi = m * v[i] + gi;
    double step = params.nesterov ? gi + m * vi : vi;
    v[i] = static_cast<float>(vi);
    w[i] = static_cast<float>(wi - lr * step);
  }
}

namespace {

double l2Norm(const Tensor &t) {
  double s = 0.0;
  for (float x : t.data)
    s += static_cast<double>(x) * x;
  return std::sqrt(s);
}

} // namespace

double larsTrustRatio(const Tensor &w, const Tensor &g,
                      const LarsParams &params) {
  double wNorm = l2Norm(w), gNorm = l2Norm(g);
  if (wNorm > 0.0 && gNorm > 0.0)
    return params.eta * wNorm /
           (gNorm + params.weightDecay * wNorm + params.epsilon);
  return 1.0;
}

void larsUpdate(Tensor &w, const Tensor &g, Tensor &v, const LarsParams &params,
                bool skipTrust, bool decay) {
  KILN_REF_CHECK_OK(checkOptimizerShapes(w, g, v));
  double wd = decay ? params.weightDecay : 0.0;
  double m = params.momentum;
  if (params.form == LarsForm::Tf2) {
    double trust = skipTrust ? 1.0 : larsTrustRatio(w, g, params);
    double scaledLr = params.learningRate * trust;
    for (int64_t i = 0; i < w.size(); ++i) {
      double wi = w[i];
      double gi = static_cast<double>(g[i]) + wd * wi;
      double vi = m * v[i] + scaledLr * gi;
      double step = params.nesterov ? m * vi + scaledLr * gi : vi;
      v[i] = static_cast<float>(vi);
      w[i] = static_cast<float>(wi - step);
    }
    return;
  }
  // v0.6: the optimizer sees the loss's gradient, L2 term included, in its
  // norm and its momentum, and scales only the step.
  Tensor decayed = g;
  for (int64_t i = 0; i < w.size(); ++i)
    decayed[i] = static_cast<float>(static_cast<double>(g[i]) + wd * w[i]);
  double trust = skipTrust ? 1.0 : larsTrustRatio(w, decayed, params);
  double scaledLr = params.learningRate * trust;
  for (int64_t i = 0; i < w.size(); ++i) {
    double wi = w[i];
    double gi = decayed[i];
    double vi = m * v[i] + gi;
    double step = params.nesterov ? gi + m * vi : vi;
    v[i] = static_cast<float>(vi);
    w[i] = static_cast<float>(wi - scaledLr * step);
  }
}

} // namespace kiln::ref
