//===- EvalTraining.cpp - Learning rate, optimizer updates, allreduce
//------===//

#include "compiler/Interpreter/Evaluators.h"

#include "dialects/Kiln/IR/KilnOps.h"
#include "kiln/ref/optimizer.h"
#include "kiln/ref/schedule.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;

namespace kiln::interp::detail {

namespace {

/// A schedule parameter that counts steps: a non-negative integral double.
bool toSteps(double value, int64_t &steps) {
  if (!(value >= 0.0) || value != std::floor(value) || value > 9.0e18)
    return false;
  steps = static_cast<int64_t>(value);
  return true;
}

/// Builds the reference schedule from the op's parameter slots (see the
/// kiln.learning_rate description); `bad` names a slot that must count
/// steps but does not. A warmup may be fractional (docs/reference-kernels.md).
ref::Schedule makeSchedule(Schedule kind, const std::vector<double> &p,
                           std::string &bad) {
  auto steps = [&](size_t i, const char *name) {
    int64_t s = 0;
    if (!toSteps(p[i], s) && bad.empty())
      bad = std::string(name) + " = " + std::to_string(p[i]) +
            " is not a whole number of steps";
    return s;
  };
  auto warmup = [&](size_t i) {
    if (!(std::isfinite(p[i]) && p[i] >= 0.0) && bad.empty())
      bad = "warmup_steps = " + std::to_string(p[i]) +
            " is not a non-negative number of steps";
    return p[i];
  };
  switch (kind) {
  case Schedule::Constant:
    return ref::Schedule::constant(p[0]);
  case Schedule::LinearWarmupLinearDecay:
    return ref::Schedule::linearWarmupLinearDecay(
        {p[0], warmup(1), p[2], steps(3, "total_steps")});
  case Schedule::WarmupPolynomialDecay:
    return ref::Schedule::warmupPolynomialDecay(
        {p[0], warmup(1), steps(2, "train_steps"), p[3], p[4]});
  case Schedule::StepDecay: {
    ref::StepDecayParams s;
    s.baseLr = p[0];
    s.warmupInitLr = p[1];
    s.warmupSteps = warmup(2);
    s.factor = p[3];
    for (size_t i = 4; i < p.size(); ++i)
      s.boundaries.push_back(steps(i, "boundary"));
    return ref::Schedule::stepDecay(s);
  }
  case Schedule::CosineDecay:
    return ref::Schedule::cosineDecay(
        {p[0], p[1], warmup(2), steps(3, "total_steps"), p[4]});
  }
  return ref::Schedule::constant(p[0]);
}

LogicalResult evalLearningRate(LearningRateOp op, EvalContext &ctx) {
  const HostTensor &step = ctx.get(op.getStep());
  const HostTensor &params = ctx.get(op.getParams());
  int64_t fixed = getScheduleParamCount(op.getSchedule());
  auto have = static_cast<int64_t>(params.doubles.size());
  if (have < fixed ||
      (op.getSchedule() != Schedule::StepDecay && have != fixed))
    return ctx.error(op) << "schedule '" << stringifySchedule(op.getSchedule())
                         << "' needs " << fixed << " parameters, got " << have;
  std::string bad;
  ref::Schedule schedule = makeSchedule(op.getSchedule(), params.doubles, bad);
  if (!bad.empty())
    return ctx.error(op) << "schedule parameter " << bad;
  if (failed(ctx.check(op, ref::checkSchedule(schedule))))
    return failure();
  if (step.ints[0] < 0)
    return ctx.error(op) << "step " << step.ints[0] << " is negative";
  HostTensor lr = HostTensor::zeros(DType::F32, {});
  double value = ref::learningRate(schedule, step.ints[0]);
  lr.floats[0] = static_cast<float>(value);
  lr.wide = value;
  ctx.set(op.getLearningRate(), std::move(lr));
  return success();
}

/// Copies of w and v, checked against g, ready to be updated in place.
LogicalResult prepareUpdate(Operation *op, EvalContext &ctx, Value w, Value g,
                            Value v, ref::Tensor &weight, ref::Tensor &grad,
                            ref::Tensor &velocity) {
  weight = ctx.get(w).toRef();
  grad = ctx.get(g).toRef();
  velocity = ctx.get(v).toRef();
  return ctx.check(op, ref::checkOptimizerShapes(weight, grad, velocity));
}

LogicalResult evalSgdUpdate(SgdUpdateOp op, EvalContext &ctx) {
  ref::Tensor w, g, v;
  if (failed(prepareUpdate(op, ctx, op.getWeight(), op.getGradient(),
                           op.getVelocity(), w, g, v)))
    return failure();
  ref::SgdParams params;
  params.learningRate = ctx.get(op.getLearningRate()).floats[0];
  params.momentum = op.getMomentum().convertToFloat();
  params.weightDecay = op.getWeightDecay().convertToFloat();
  params.nesterov = op.getNesterov();
  ref::sgdMomentumUpdate(w, g, v, params,
                         /*applyDecay=*/params.weightDecay != 0.0);
  ctx.setFloat(op.getNewWeight(), std::move(w));
  ctx.setFloat(op.getNewVelocity(), std::move(v));
  return success();
}

/// kiln.fused_sgd_update: kiln.sgd_update's computation per parameter.
LogicalResult evalFusedSgdUpdate(FusedSgdUpdateOp op, EvalContext &ctx) {
  ref::SgdParams params;
  params.learningRate = ctx.get(op.getLearningRate()).floats[0];
  params.momentum = op.getMomentum().convertToFloat();
  params.weightDecay = op.getWeightDecay().convertToFloat();
  params.nesterov = op.getNesterov();
  for (unsigned i = 0, e = op.getWeights().size(); i < e; ++i) {
    ref::Tensor w, g, v;
    if (failed(prepareUpdate(op, ctx, op.getWeights()[i], op.getGradients()[i],
                             op.getVelocities()[i], w, g, v)))
      return failure();
    ref::sgdMomentumUpdate(w, g, v, params,
                           /*applyDecay=*/params.weightDecay != 0.0);
    // A copy is kiln.cast's rounding of the new weight (setFloat rounds).
    if (!op.getNewCopies().empty())
      ctx.setFloat(op.getNewCopies()[i], w);
    ctx.setFloat(op.getNewWeights()[i], std::move(w));
    ctx.setFloat(op.getNewVelocities()[i], std::move(v));
  }
  return success();
}

LogicalResult evalLarsUpdate(LarsUpdateOp op, EvalContext &ctx) {
  ref::Tensor w, g, v;
  if (failed(prepareUpdate(op, ctx, op.getWeight(), op.getGradient(),
                           op.getVelocity(), w, g, v)))
    return failure();
  ref::LarsParams params;
  params.learningRate = ctx.get(op.getLearningRate()).floats[0];
  params.momentum = op.getMomentum().convertToFloat();
  params.eta = op.getEta().convertToFloat();
  params.weightDecay = op.getWeightDecay().convertToFloat();
  params.epsilon = op.getEpsilon().convertToFloat();
  params.nesterov = false;
  params.form = op.getForm() == LarsForm::V0_6 ? ref::LarsForm::V0_6
                                               : ref::LarsForm::Tf2;
  // weight_decay is the decay added to the gradient, 0 for an exempt
  // parameter (kiln.lars_update).
  ref::larsUpdate(w, g, v, params, /*skipTrust=*/op.getSkipAdaptation(),
                  /*decay=*/params.weightDecay != 0.0);
  if (Value copy = op.getNewCopy())
    ctx.setFloat(copy, w);
  ctx.setFloat(op.getNewWeight(), std::move(w));
  ctx.setFloat(op.getNewVelocity(), std::move(v));
  return success();
}

LogicalResult evalAllReduce(AllReduceOp op, EvalContext &ctx) {
  // One rank: the mean over ranks of each gradient is the gradient.
  for (auto [in, out] : llvm::zip(op.getGradients(), op.getAveraged()))
    ctx.set(out, ctx.get(in));
  return success();
}

} // namespace

std::optional<LogicalResult> evaluateTrainingOp(Operation *op,
                                                EvalContext &ctx) {
  return llvm::TypeSwitch<Operation *, std::optional<LogicalResult>>(op)
      .Case([&](LearningRateOp o) { return evalLearningRate(o, ctx); })
      .Case([&](SgdUpdateOp o) { return evalSgdUpdate(o, ctx); })
      .Case([&](FusedSgdUpdateOp o) { return evalFusedSgdUpdate(o, ctx); })
      .Case([&](LarsUpdateOp o) { return evalLarsUpdate(o, ctx); })
      .Case([&](AllReduceOp o) { return evalAllReduce(o, ctx); })
      .Default([](Operation *) { return std::nullopt; });
}

} // namespace kiln::interp::detail
