//===- GradientCheck.cpp - Finite-difference checks of autodiff -----------===//

#include "compiler/Interpreter/GradientCheck.h"

#include "kiln/ref/init.h"
#include "passes/Autodiff/Autodiff.h"
#include "llvm/Support/Format.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <set>

using namespace mlir;

namespace kiln::interp {

namespace {

/// The loss at a parameter value; nullopt where the program is not
/// differentiable (the kink trace differs from the unperturbed one).
using Objective = llvm::function_ref<std::optional<double>(float)>;

/// The derivative at `x` (whose loss is `f0`) by the stencils described in
/// GradientCheck.h; nullopt if no step down to h/1000 finds a smooth
/// neighbourhood.
std::optional<double> numericalDerivative(float x, double f0, Objective f,
                                          double h) {
  const int offsets[4] = {-2, -1, 1, 2};
  for (double step = h; step > h * 1e-3; step /= 4) {
    // The points are the fp32 values nearest x + k*step; the stencils use the
    // spacing actually realised, and insist on even spacing where they
    // assume it.
    float pts[4];
    std::optional<double> val[4];
    for (int k = 0; k < 4; ++k) {
      pts[k] = static_cast<float>(static_cast<double>(x) + offsets[k] * step);
      val[k] = f(pts[k]);
    }
    double hm1 = static_cast<double>(x) - pts[1];
    double hp1 = static_cast<double>(pts[2]) - x;
    double hm2 = static_cast<double>(x) - pts[0];
    double hp2 = static_cast<double>(pts[3]) - x;
    if (hm1 <= 0.0 || hp1 <= 0.0)
      continue;
    double slack = 1e-3 * step;
    bool evenLeft = std::fabs(hm2 - 2 * hm1) < slack;
    bool evenRight = std::fabs(hp2 - 2 * hp1) < slack;
    if (val[0] && val[1] && val[2] && val[3] && evenLeft && evenRight &&
        std::fabs(hm1 - hp1) < slack)
      return (*val[0] - 8.0 * *val[1] + 8.0 * *val[2] - *val[3]) /
             (6.0 * (hm1 + hp1));
    if (val[1] && val[2])
      return (*val[2] - *val[1]) / (hp1 + hm1);
    if (val[2] && val[3] && evenRight)
      return (-3.0 * f0 + 4.0 * *val[2] - *val[3]) / (2.0 * hp1);
    if (val[1] && val[0] && evenLeft)
      return (3.0 * f0 - 4.0 * *val[1] + *val[0]) / (2.0 * hm1);
  }
  return std::nullopt;
}

/// The fourth-order central difference at `x` with step `h`, over the fp32
/// values nearest x +- h, x +- 2h (their realised spacing); nullopt if the
/// points are not evenly spaced or an evaluation is not smooth.
std::optional<double> centralDifference(float x, Objective f, double h) {
  float pts[4];
  const int offsets[4] = {-2, -1, 1, 2};
  for (int k = 0; k < 4; ++k)
    pts[k] = static_cast<float>(static_cast<double>(x) + offsets[k] * h);
  double hm1 = static_cast<double>(x) - pts[1];
  double hp1 = static_cast<double>(pts[2]) - x;
  double slack = 1e-3 * h;
  if (hm1 <= 0.0 || std::fabs(hm1 - hp1) > slack ||
      std::fabs((static_cast<double>(x) - pts[0]) - 2 * hm1) > slack ||
      std::fabs((static_cast<double>(pts[3]) - x) - 2 * hp1) > slack)
    return std::nullopt;
  double v[4];
  for (int k = 0; k < 4; ++k) {
    std::optional<double> value = f(pts[k]);
    if (!value)
      return std::nullopt;
    v[k] = *value;
  }
  return (v[0] - 8.0 * v[1] + 8.0 * v[2] - v[3]) / (6.0 * (hm1 + hp1));
}

/// The derivative of a smooth objective (kinks frozen). A large step has
/// truncation error; a small one amplifies the rounding noise of the fp32
/// forward pass (about `noise` in the loss, so noise / h in a quotient); and
/// the right step depends on the curvature (a batch norm over few elements
/// is far from linear). So estimate at h, h/2, ..., h/128 and take the pair
/// of consecutive estimates with the smallest error bound |difference| +
/// noise / (finer step), returning their mean. Stops early once the bound is
/// below 1e-6 of the estimate.
std::optional<double> smoothDerivative(float x, Objective f, double h,
                                       double noise) {
  constexpr int kLevels = 8;
  std::optional<double> previous;
  double bestBound = std::numeric_limits<double>::infinity(), best = 0.0;
  for (int level = 0; level < kLevels; ++level, h /= 2) {
    std::optional<double> d = centralDifference(x, f, h);
    if (!d)
      continue;
    if (previous) {
      double bound = std::fabs(*d - *previous) + noise / h;
      if (bound < bestBound) {
        bestBound = bound;
        best = (*d + *previous) / 2;
      }
      if (bound <= 1e-6 * std::fabs(*d))
        break;
    }
    previous = d;
  }
  if (!previous)
    return std::nullopt;
  return std::isfinite(bestBound) ? best : *previous;
}

/// The elements to check: all of a small tensor; otherwise the one with the
/// largest |gradient| (where an error matters most) plus a deterministic
/// random choice, in increasing order.
std::vector<int64_t> chooseSamples(const HostTensor &gradient,
                                   const std::string &name, int64_t samples,
                                   uint64_t seed) {
  int64_t n = gradient.numElements();
  std::vector<int64_t> chosen;
  if (n <= samples) {
    for (int64_t i = 0; i < n; ++i)
      chosen.push_back(i);
    return chosen;
  }
  std::set<int64_t> set;
  auto largest = std::max_element(
      gradient.floats.begin(), gradient.floats.end(),
      [](float a, float b) { return std::fabs(a) < std::fabs(b); });
  set.insert(largest - gradient.floats.begin());
  ref::RandomStream stream(seed, "kiln-run.gradient-check." + name);
  for (uint64_t draw = 0; static_cast<int64_t>(set.size()) < samples; ++draw)
    set.insert(static_cast<int64_t>(
        stream.uniformInt(draw, static_cast<uint64_t>(n))));
  return std::vector<int64_t>(set.begin(), set.end());
}

double lossValue(const HostTensor &loss) {
  return loss.wide ? *loss.wide : static_cast<double>(loss.floats[0]);
}

} // namespace

LogicalResult checkGradients(func::FuncOp step, func::FuncOp forward,
                             ArrayRef<HostTensor> inputs, VariableStore &store,
                             const GradientCheckOptions &options,
                             llvm::raw_ostream &out) {
  CallOptions stepOptions;
  stepOptions.roundBf16 = false;
  stepOptions.context = "gradient check";
  FailureOr<CallResult> stepResult = call(step, inputs, store, stepOptions);
  if (failed(stepResult))
    return failure();

  struct Gradient {
    std::string parameter;
    HostTensor value;
  };
  std::vector<Gradient> gradients;
  for (unsigned i = 0; i < step.getNumResults(); ++i)
    if (auto name =
            step.getResultAttrOfType<FlatSymbolRefAttr>(i, kGradientOfAttr))
      gradients.push_back({name.getValue().str(), stepResult->results[i]});
  if (gradients.empty())
    return step.emitError() << "@" << step.getSymName()
                            << " returns no kiln.gradient_of results: build it "
                               "with --kiln-autodiff";

  unsigned numForwardArgs = forward.getNumArguments();
  if (numForwardArgs > inputs.size())
    return forward.emitError()
           << "@" << forward.getSymName() << " takes " << numForwardArgs
           << " arguments, more than @" << step.getSymName();
  ArrayRef<HostTensor> forwardInputs = inputs.take_front(numForwardArgs);
  auto lossType =
      RankedTensorType::get({}, Float32Type::get(forward.getContext()));
  if (forward.getNumResults() == 0 || forward.getResultTypes()[0] != lossType)
    return forward.emitError() << "@" << forward.getSymName()
                               << " must return the loss (tensor<f32>) first";

  KinkPattern baseline;
  CallOptions forwardOptions;
  forwardOptions.roundBf16 = false;
  forwardOptions.context = "gradient check";
  forwardOptions.recordKinks = &baseline;
  FailureOr<CallResult> base =
      call(forward, forwardInputs, store, forwardOptions);
  if (failed(base))
    return failure();
  forwardOptions.recordKinks = nullptr;
  bool freeze = options.kinks == KinkHandling::Freeze;
  if (freeze)
    forwardOptions.frozenKinks = &baseline;
  double loss0 = lossValue(base->results[0]);

  // The loss is computed from fp32 intermediates, so each evaluation carries
  // a relative rounding error of about one fp32 epsilon, which a difference
  // quotient with step h turns into an absolute error of eps * |L| / h.
  // Gradients below that floor cannot be resolved and count as zero.
  double lossNoise =
      std::numeric_limits<float>::epsilon() * std::max(1.0, std::fabs(loss0));
  double noiseFloor = lossNoise / (freeze ? options.step / 8 : options.step);

  bool evaluationFailed = false;
  int failedParameters = 0, uncheckedParameters = 0;
  double largestError = 0.0;
  std::string largestAt;
  for (const Gradient &g : gradients) {
    HostTensor *param = store.lookup(g.parameter);
    if (!param || !isFloat(param->type))
      return step.emitError() << "gradient of @" << g.parameter
                              << ", which is not a floating-point variable";
    if (param->shape != g.value.shape)
      return step.emitError()
             << "the gradient of @" << g.parameter << " is tensor<"
             << typeString(g.value) << ">, the parameter tensor<"
             << typeString(*param) << ">";

    double maxAnalytic = 0.0;
    for (float v : g.value.floats)
      maxAnalytic = std::max(maxAnalytic, std::fabs(static_cast<double>(v)));
    std::vector<int64_t> samples =
        chooseSamples(g.value, g.parameter, options.samples, options.seed);
    double maxNumeric = 0.0, maxDiff = 0.0;
    int64_t worst = -1, atKink = 0;
    double worstNumeric = 0.0;
    for (int64_t index : samples) {
      auto i = static_cast<size_t>(index);
      float original = param->floats[i];
      auto objective = [&](float value) -> std::optional<double> {
        param->floats[i] = value;
        KinkPattern pattern;
        CallOptions o = forwardOptions;
        if (!freeze)
          o.recordKinks = &pattern;
        FailureOr<CallResult> r = call(forward, forwardInputs, store, o);
        param->floats[i] = original;
        if (failed(r)) {
          evaluationFailed = true;
          return std::nullopt;
        }
        if (!freeze && !(pattern == baseline))
          return std::nullopt;
        return lossValue(r->results[0]);
      };
      std::optional<double> numeric =
          freeze
              ? smoothDerivative(original, objective, options.step, lossNoise)
              : numericalDerivative(original, loss0, objective, options.step);
      if (evaluationFailed)
        return failure();
      if (!numeric) {
        // Every neighbour, however close, changes the kink trace: the
        // unperturbed point itself sits on a kink (e.g. a zero batch-norm
        // scale leaves ReLU inputs at exactly 0), where the program's
        // subgradient need not match either one-sided derivative.
        ++atKink;
        continue;
      }
      maxNumeric = std::max(maxNumeric, std::fabs(*numeric));
      double diff =
          std::fabs(static_cast<double>(g.value.floats[i]) - *numeric);
      if (worst < 0 || diff > maxDiff) {
        maxDiff = diff;
        worst = index;
        worstNumeric = *numeric;
      }
    }
    double scale = std::max({maxAnalytic, maxNumeric, noiseFloor});
    double error = maxDiff / scale;
    bool checked = atKink < static_cast<int64_t>(samples.size());
    bool ok = error <= options.tolerance;
    if (!ok)
      ++failedParameters;
    else if (!checked)
      ++uncheckedParameters;
    if (error >= largestError) {
      largestError = error;
      largestAt = g.parameter;
    }
    out << "@" << g.parameter << " " << typeString(g.value) << ": "
        << samples.size() - atKink << "/" << g.value.numElements()
        << " elements, max |grad| "
        << llvm::format("%.3e", std::max(maxAnalytic, maxNumeric)) << ", error "
        << llvm::format("%.3e", error)
        << (!ok       ? " FAILED"
            : checked ? " ok"
                      : " unchecked");
    if (std::max(maxAnalytic, maxNumeric) < noiseFloor)
      out << " (below the noise floor " << llvm::format("%.1e", noiseFloor)
          << ")";
    if (atKink)
      out << " (" << atKink << " sampled elements at a kink, skipped)";
    if (!ok)
      out << "; worst element " << worst << ": analytic "
          << llvm::format("%.9g", g.value.floats[static_cast<size_t>(worst)])
          << ", numeric " << llvm::format("%.9g", worstNumeric);
    out << "\n";
  }
  if (failedParameters) {
    out << "gradient check FAILED: " << failedParameters << " of "
        << gradients.size() << " parameters above tolerance "
        << llvm::format("%.3e", options.tolerance) << " (largest error "
        << llvm::format("%.3e", largestError) << " at @" << largestAt << ")\n";
    return failure();
  }
  out << "gradient check passed: " << gradients.size() << " parameters ("
      << uncheckedParameters << " unchecked), largest error "
      << llvm::format("%.3e", largestError) << " (tolerance "
      << llvm::format("%.3e", options.tolerance) << ")\n";
  return success();
}

} // namespace kiln::interp
