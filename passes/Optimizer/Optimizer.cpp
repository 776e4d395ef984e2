//===- Optimizer.cpp - Learning-rate schedules and parameter updates ------===//

#include "passes/Optimizer/Optimizer.h"

#include "passes/Autodiff/Autodiff.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/SymbolTable.h"

using namespace mlir;

namespace kiln {

FailureOr<std::vector<double>> scheduleParams(const ScheduleConfig &c,
                                              std::string &error) {
  auto fail = [&](std::string message) -> FailureOr<std::vector<double>> {
    error = std::move(message);
    return failure();
  };
  if (c.lr < 0 || c.warmupSteps < 0)
    return fail("the learning rate and warmup steps must be non-negative");
  bool decays = c.kind == Schedule::LinearWarmupLinearDecay ||
                c.kind == Schedule::WarmupPolynomialDecay ||
                c.kind == Schedule::CosineDecay;
  if (decays && c.totalSteps <= c.warmupSteps)
    return fail("total-steps (" + std::to_string(c.totalSteps) +
                ") must exceed warmup-steps (" +
                std::to_string(c.warmupSteps) + ")");
  auto w = double(c.warmupSteps), t = double(c.totalSteps);
  switch (c.kind) {
  case Schedule::Constant:
    return std::vector<double>{c.lr};
  case Schedule::LinearWarmupLinearDecay:
    if (c.peakLr <= 0)
      return fail("linear_warmup_linear_decay needs peak-lr");
    return std::vector<double>{c.lr, w, c.peakLr, t};
  case Schedule::WarmupPolynomialDecay:
    return std::vector<double>{c.lr, w, t, c.endLr, c.power};
  case Schedule::StepDecay: {
    if (c.boundaries.empty())
      return fail("step_decay needs boundaries");
    std::vector<double> params = {c.lr, c.warmupInitLr, w, c.factor};
    for (size_t i = 0; i < c.boundaries.size(); ++i) {
      if (i > 0 && c.boundaries[i] <= c.boundaries[i - 1])
        return fail("step_decay boundaries must increase");
      params.push_back(double(c.boundaries[i]));
    }
    return params;
  }
  case Schedule::CosineDecay:
    return std::vector<double>{c.lr, c.warmupInitLr, w, t, c.endLr};
  }
  llvm_unreachable("unknown schedule");
}

/// Declares a state variable next to `anchor` (before it).
static VariableOp declareState(OpBuilder &builder, Operation *anchor,
                               StringRef name, RankedTensorType type,
                               Initializer init, ElementsAttr value = {}) {
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPoint(anchor);
  return VariableOp::create(
      builder, anchor->getLoc(),
      VariableKindAttr::get(builder.getContext(), VariableKind::State),
      builder.getStringAttr(name), TypeAttr::get(type),
      InitializerAttr::get(builder.getContext(), init), FloatAttr(), value,
      FlatSymbolRefAttr());
}

LogicalResult applyOptimizer(func::FuncOp step, const OptimizerConfig &config) {
  auto module = step->getParentOfType<ModuleOp>();
  SymbolTable symbols(module);
  MLIRContext *context = module.getContext();
  OpBuilder builder(context);

  // The gradients the step returns, by result index.
  SmallVector<std::pair<unsigned, VariableOp>> gradients;
  for (unsigned i = 0; i < step.getNumResults(); ++i) {
    auto name = step.getResultAttrOfType<FlatSymbolRefAttr>(i, kGradientOfAttr);
    if (!name)
      continue;
    auto parameter = symbols.lookup<VariableOp>(name.getValue());
    if (!parameter || !parameter.isParameter())
      return step.emitOpError("result ")
             << i << " is marked as the gradient of " << name
             << ", which is not a parameter";
    gradients.push_back({i, parameter});
  }
  if (gradients.empty())
    return step.emitOpError("returns no gradients: run --kiln-autodiff first");
  if (symbols.lookup(kScheduleVariable))
    return step.emitOpError("already has an optimizer (@")
           << kScheduleVariable << " exists)";

  std::string error;
  FailureOr<std::vector<double>> params =
      scheduleParams(config.schedule, error);
  if (failed(params))
    return step.emitOpError("invalid learning-rate schedule: ") << error;

  // Schedule parameters as state the runtime may override.
  auto paramsType = RankedTensorType::get({int64_t(params->size())},
                                          builder.getF64Type());
  declareState(builder, step, kScheduleVariable, paramsType,
               Initializer::Constant,
               DenseElementsAttr::get(paramsType, ArrayRef<double>(*params)));

  Block &block = step.front();
  auto ret = cast<func::ReturnOp>(block.getTerminator());
  Location loc = ret.getLoc();
  auto stepType = RankedTensorType::get({}, builder.getI64Type());
  Value stepArg = block.addArgument(stepType, step.getLoc());

  builder.setInsertionPoint(ret);
  Value scheduleValues = ReadOp::create(
      builder, loc, paramsType,
      FlatSymbolRefAttr::get(context, kScheduleVariable));
  Value lr = LearningRateOp::create(builder, loc, stepArg, scheduleValues,
                                    config.schedule.kind);

  if (config.labelSmoothing > 0) {
    auto smoothing = builder.getF32FloatAttr(config.labelSmoothing);
    step.walk([&](SoftmaxCrossEntropyOp op) { op.setLabelSmoothingAttr(smoothing); });
    step.walk([&](SoftmaxCrossEntropyBackwardOp op) {
      op.setLabelSmoothingAttr(smoothing);
    });
  }

  auto f32 = [&](double v) { return builder.getF32FloatAttr(v); };
  for (auto [index, parameter] : gradients) {
    RankedTensorType type = parameter.getTensorType();
    std::string momentumName = (parameter.getSymName() + kMomentumSuffix).str();
    if (symbols.lookup(momentumName))
      return parameter.emitOpError("cannot add its momentum: @")
             << momentumName << " already exists";
    declareState(builder, step, momentumName, type, Initializer::Zeros);

    Value gradient = ret.getOperand(index);
    Value weight = ReadOp::create(builder, loc, type,
                                  FlatSymbolRefAttr::get(parameter.getSymNameAttr()));
    Value velocity = ReadOp::create(builder, loc, type,
                                    FlatSymbolRefAttr::get(context, momentumName));
    // Batch-norm parameters and biases are not decayed (Goyal et al.,
    // MLPerf), unless asked.
    bool exempt = type.getRank() <= 1 && !config.decay1d;
    Value newWeight, newVelocity;
    if (config.kind == OptimizerKind::Sgd) {
      auto update = SgdUpdateOp::create(
          builder, loc, type, type, weight, gradient, velocity, lr,
          f32(config.momentum), f32(exempt ? 0.0 : config.weightDecay),
          config.nesterov ? builder.getUnitAttr() : UnitAttr());
      newWeight = update.getNewWeight();
      newVelocity = update.getNewVelocity();
    } else {
      auto update = LarsUpdateOp::create(
          builder, loc, type, type, /*new_copy=*/Type(), weight, gradient,
          velocity, lr, f32(config.momentum), f32(config.larsEta),
          f32(config.weightDecay), f32(config.larsEpsilon),
          exempt ? builder.getUnitAttr() : UnitAttr());
      newWeight = update.getNewWeight();
      newVelocity = update.getNewVelocity();
    }
    AssignOp::create(builder, loc, parameter.getSymName(), newWeight);
    AssignOp::create(builder, loc, momentumName, newVelocity);
  }

  // Return the forward results and the learning rate; gradients are consumed.
  SmallVector<Value> results;
  SmallVector<DictionaryAttr> resultAttrs;
  for (unsigned i = 0; i < step.getNumResults(); ++i) {
    if (step.getResultAttr(i, kGradientOfAttr))
      continue;
    results.push_back(ret.getOperand(i));
    resultAttrs.push_back(step.getResultAttrDict(i));
  }
  results.push_back(lr);
  resultAttrs.push_back(builder.getDictionaryAttr(
      builder.getNamedAttr("kiln.learning_rate", builder.getUnitAttr())));
  ret->setOperands(results);
  step.setFunctionType(FunctionType::get(context, block.getArgumentTypes(),
                                         ValueRange(results).getTypes()));
  step.setAllResultAttrs(resultAttrs);
  step.setArgAttr(block.getNumArguments() - 1, "kiln.step",
                  builder.getUnitAttr());
  return success();
}

} // namespace kiln
