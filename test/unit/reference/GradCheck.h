//===- GradCheck.h - Finite-difference helpers for the kernel tests -------===//
//
// Part of Kiln. Finite differences computed in double around fp32 parameters:
// fourth-order central differences where the objective is smooth, lower-order
// or one-sided stencils next to a kink (a ReLU input changing sign). The
// spacing used is the one realised by the fp32 perturbed values, so rounding
// x + k*h to fp32 does not bias the quotient.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TEST_UNIT_REFERENCE_GRADCHECK_H
#define KILN_TEST_UNIT_REFERENCE_GRADCHECK_H

#include "kiln/ref/tensor.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace kiln::ref::test {

/// A tensor with elements uniform in [lo, hi).
inline Tensor randomTensor(const Shape &shape, std::mt19937 &rng,
                           float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  Tensor t(shape);
  for (float &x : t.data)
    x = dist(rng);
  return t;
}

/// sum_i r_i * y_i in double: the scalar objective whose gradient wrt y is r.
inline double dot(const Tensor &r, const Tensor &y) {
  EXPECT_EQ(r.shape, y.shape);
  double s = 0.0;
  for (size_t i = 0; i < r.data.size(); ++i)
    s += static_cast<double>(r.data[i]) * y.data[i];
  return s;
}

/// An objective evaluated at the current parameter values; std::nullopt
/// means "not differentiable here" (e.g. a ReLU input changed sign), which
/// makes the check retry with a smaller step.
using Objective = std::function<std::optional<double>()>;

/// The numerical derivative of `f` with respect to element `i` of `param`
/// (perturbed in place and restored). Uses the fourth-order central stencil
/// over x-2h..x+2h when `f` is differentiable on all of it; when a kink lies
/// on one side (f returns nullopt there), the second-order central stencil
/// over x-h..x+h or a second-order one-sided stencil on the smooth side;
/// otherwise retries with h/4. Returns nullopt if no step works.
inline std::optional<double> numericalDerivative(Tensor &param, size_t i,
                                                 const Objective &f, double h) {
  float orig = param.data[i];
  std::optional<double> f0 = f();
  if (!f0)
    return std::nullopt;
  for (double step = h; step > h * 1e-3; step /= 4) {
    // Evaluate at the fp32 values nearest to x + k*step; the stencils below
    // assume equally spaced points, so use the spacing actually realised.
    float pts[4];
    std::optional<double> val[4];
    const int offsets[4] = {-2, -1, 1, 2};
    for (int k = 0; k < 4; ++k) {
      pts[k] = static_cast<float>(orig + offsets[k] * step);
      param.data[i] = pts[k];
      val[k] = f();
    }
    param.data[i] = orig;
    double hm1 = static_cast<double>(orig) - pts[1];
    double hp1 = static_cast<double>(pts[2]) - orig;
    double hm2 = static_cast<double>(orig) - pts[0];
    double hp2 = static_cast<double>(pts[3]) - orig;
    bool evenly = std::fabs(hm1 - hp1) < 1e-3 * step &&
                  std::fabs(hm2 - 2 * hm1) < 1e-3 * step &&
                  std::fabs(hp2 - 2 * hp1) < 1e-3 * step;
    if (val[0] && val[1] && val[2] && val[3] && evenly) {
      double hh = (hm1 + hp1) / 2;
      return (*val[0] - 8.0 * *val[1] + 8.0 * *val[2] - *val[3]) / (12.0 * hh);
    }
    if (val[1] && val[2])
      return (*val[2] - *val[1]) / (hp1 + hm1);
    if (val[2] && val[3] && std::fabs(hp2 - 2 * hp1) < 1e-3 * step)
      return (-3.0 * *f0 + 4.0 * *val[2] - *val[3]) / (2.0 * hp1);
    if (val[1] && val[0] && std::fabs(hm2 - 2 * hm1) < 1e-3 * step)
      return (3.0 * *f0 - 4.0 * *val[1] + *val[0]) / (2.0 * hm1);
  }
  return std::nullopt;
}

/// numericalDerivative for every element of `param`.
inline std::vector<double> numericalGradient(Tensor &param, const Objective &f,
                                             double h) {
  std::vector<double> grad(param.data.size());
  for (size_t i = 0; i < param.data.size(); ++i) {
    std::optional<double> d = numericalDerivative(param, i, f, h);
    EXPECT_TRUE(d.has_value())
        << "no differentiable neighbourhood for element " << i;
    grad[i] = d.value_or(0.0);
  }
  return grad;
}

/// max_i |a_i - n_i| / max(max_i |n_i|, max_i |a_i|): the error relative to
/// the largest gradient component of the tensor.
inline double relativeError(const Tensor &analytic,
                            const std::vector<double> &numeric) {
  double diff = 0.0, scale = 0.0;
  for (size_t i = 0; i < numeric.size(); ++i) {
    diff = std::max(diff, std::fabs(analytic.data[i] - numeric[i]));
    scale = std::max({scale, std::fabs(numeric[i]),
                      std::fabs(static_cast<double>(analytic.data[i]))});
  }
  return scale > 0.0 ? diff / scale : diff;
}

/// Checks the analytic gradient `analytic` of `f` wrt `param`.
inline void expectGradient(const std::string &what, Tensor &param,
                           const Tensor &analytic, const Objective &f,
                           double h = 1e-2, double tolerance = 1e-3) {
  ASSERT_EQ(analytic.shape, param.shape) << what;
  std::vector<double> numeric = numericalGradient(param, f, h);
  double err = relativeError(analytic, numeric);
  EXPECT_LT(err, tolerance) << what << ": relative error " << err;
  double maxAbs = 0.0;
  for (double g : numeric)
    maxAbs = std::max(maxAbs, std::fabs(g));
  EXPECT_GT(maxAbs, 0.0) << what << ": gradient identically zero";
}

/// Wraps a plain objective (always differentiable).
inline Objective smooth(std::function<double()> f) {
  return [f = std::move(f)]() -> std::optional<double> { return f(); };
}

} // namespace kiln::ref::test

#endif // KILN_TEST_UNIT_REFERENCE_GRADCHECK_H
