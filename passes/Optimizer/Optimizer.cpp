//===- Optimizer.cpp - Learning-rate schedules and parameter updates ------===//

#include "passes/Optimizer/Optimizer.h"

#include "passes/Autodiff/Autodiff.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/SymbolTable.h"

#include <cmath>
#include <cstdio>
#include <optional>

using namespace mlir;

namespace kiln {

/// "2", "0.5": epochs as a user wrote them.
static std::string formatNumber(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", value);
  return text;
}

/// Whether the schedule `kind` decays over a horizon (total steps or
/// decay epochs).
static bool hasDecayHorizon(Schedule kind) {
  return kind == Schedule::LinearWarmupLinearDecay ||
         kind == Schedule::WarmupPolynomialDecay ||
         kind == Schedule::CosineDecay;
}

/// Stores `message` in `error` and fails.
static LogicalResult scheduleError(std::string &error, std::string message) {
  error = std::move(message);
  return failure();
}

/// Rejects negative settings, settings the schedule has no slot for (they
/// would be silently ignored) and settings that exclude each other.
static LogicalResult checkScheduleOptions(const ScheduleConfig &c,
                                          std::string &error) {
  if (c.lr < 0 || !(std::isfinite(c.warmupSteps) && c.warmupSteps >= 0))
    return scheduleError(
        error, "the learning rate and warmup steps must be non-negative");
  auto notEpochs = [](double e) { return !std::isfinite(e) || e < 0; };
  if (notEpochs(c.warmupEpochs) || notEpochs(c.decayEpochs) ||
      llvm::any_of(c.boundaryEpochs, notEpochs))
    return scheduleError(error,
                         "warmup-epochs, decay-epochs and boundary-epochs must "
                         "be non-negative numbers");
  std::string kind = stringifySchedule(c.kind).str();
  if (c.warmupEpochs > 0 && c.kind == Schedule::Constant)
    return scheduleError(error,
                         "warmup-epochs: the constant schedule has no warmup");
  if (c.decayEpochs > 0 && !hasDecayHorizon(c.kind))
    return scheduleError(
        error, "decay-epochs: the " + kind + " schedule has no decay horizon" +
                   (c.kind == Schedule::StepDecay
                        ? " (give its boundaries in epochs: boundary-epochs)"
                        : ""));
  if (!c.boundaryEpochs.empty() && c.kind != Schedule::StepDecay)
    return scheduleError(error, "boundary-epochs: the " + kind +
                                    " schedule has no boundaries (only "
                                    "step_decay has)");
  if (c.warmupSteps > 0 && c.warmupEpochs > 0)
    return scheduleError(error,
                         "warmup-steps and warmup-epochs exclude each other");
  if (c.totalSteps > 0 && c.decayEpochs > 0)
    return scheduleError(error,
                         "total-steps and decay-epochs exclude each other");
  if (!c.boundaries.empty() && !c.boundaryEpochs.empty())
    return scheduleError(error,
                         "boundaries and boundary-epochs exclude each other");
  return success();
}

/// Checks that the decay horizon exceeds the warmup where both are in the
/// same unit; the runtime checks the others once it has resolved them.
static LogicalResult checkScheduleLengths(const ScheduleConfig &c,
                                          std::string &error) {
  bool warmupInEpochs = c.warmupEpochs > 0;
  bool horizonInEpochs = c.decayEpochs > 0;
  if (hasDecayHorizon(c.kind) && c.totalSteps > 0 && !warmupInEpochs &&
      double(c.totalSteps) <= c.warmupSteps)
    return scheduleError(error, "total-steps (" + std::to_string(c.totalSteps) +
                                    ") must exceed warmup-steps (" +
                                    formatNumber(c.warmupSteps) + ")");
  if (horizonInEpochs && warmupInEpochs && c.decayEpochs <= c.warmupEpochs)
    return scheduleError(error, "decay-epochs (" + formatNumber(c.decayEpochs) +
                                    ") must exceed warmup-epochs (" +
                                    formatNumber(c.warmupEpochs) + ")");
  return success();
}

/// Whether the decay horizon is the run's length, which the runtime fills in.
static bool horizonFromRun(const ScheduleConfig &c) {
  bool horizonInEpochs = c.decayEpochs > 0;
  return hasDecayHorizon(c.kind) && !horizonInEpochs && c.totalSteps == 0;
}

namespace {
/// A schedule's slot values in order, and the epochs of those the runtime
/// resolves.
struct SlotList {
  std::vector<double> values;
  std::vector<std::optional<double>> epochs;
  /// The index of the decay horizon's slot, or -1.
  int64_t horizon = -1;

  void add(double value, std::optional<double> inEpochs = {}) {
    values.push_back(inEpochs ? kUnresolvedSteps : value);
    epochs.push_back(inEpochs);
  }
  void addHorizon(double value, std::optional<double> inEpochs) {
    horizon = int64_t(values.size());
    add(value, inEpochs);
  }
};
} // namespace

/// step_decay's slots: the warmup, the factor, then the boundaries in steps
/// and those in epochs.
static LogicalResult addStepDecaySlots(const ScheduleConfig &c,
                                       std::optional<double> warmupEpochs,
                                       SlotList &slots, std::string &error) {
  if (c.boundaries.empty() && c.boundaryEpochs.empty())
    return scheduleError(error,
                         "step_decay needs boundaries (or boundary-epochs)");
  slots.add(c.lr);
  slots.add(c.warmupInitLr);
  slots.add(c.warmupSteps, warmupEpochs);
  slots.add(c.factor);
  auto increasing = [](const auto &list) {
    for (size_t i = 1; i < list.size(); ++i)
      if (list[i] <= list[i - 1])
        return false;
    return true;
  };
  if (!increasing(c.boundaries) || !increasing(c.boundaryEpochs))
    return scheduleError(error, "step_decay boundaries must increase");
  for (int64_t b : c.boundaries)
    slots.add(double(b));
  for (double e : c.boundaryEpochs)
    slots.add(0, e);
  return success();
}

/// The slots of `c`'s schedule, in the order getScheduleSlotNames names them.
static LogicalResult addSlots(const ScheduleConfig &c, SlotList &slots,
                              std::string &error) {
  std::optional<double> warmupEpochs;
  if (c.warmupEpochs > 0)
    warmupEpochs = c.warmupEpochs;
  std::optional<double> decayEpochs;
  if (c.decayEpochs > 0)
    decayEpochs = c.decayEpochs;
  double w = c.warmupSteps;
  double t = horizonFromRun(c) ? kUnresolvedSteps : double(c.totalSteps);
  switch (c.kind) {
  case Schedule::Constant:
    slots.add(c.lr);
    break;
  case Schedule::LinearWarmupLinearDecay:
    if (c.peakLr <= 0)
      return scheduleError(error, "linear_warmup_linear_decay needs peak-lr");
    slots.add(c.lr);
    slots.add(w, warmupEpochs);
    slots.add(c.peakLr);
    slots.addHorizon(t, decayEpochs);
    break;
  case Schedule::WarmupPolynomialDecay:
    slots.add(c.lr);
    slots.add(w, warmupEpochs);
    slots.addHorizon(t, decayEpochs);
    slots.add(c.endLr);
    slots.add(c.power);
    break;
  case Schedule::StepDecay:
    return addStepDecaySlots(c, warmupEpochs, slots, error);
  case Schedule::CosineDecay:
    slots.add(c.lr);
    slots.add(c.warmupInitLr);
    slots.add(w, warmupEpochs);
    slots.addHorizon(t, decayEpochs);
    slots.add(c.endLr);
    break;
  }
  return success();
}

FailureOr<ScheduleSlots> scheduleSlots(const ScheduleConfig &c,
                                       std::string &error) {
  if (failed(checkScheduleOptions(c, error)) ||
      failed(checkScheduleLengths(c, error)))
    return failure();
  SlotList slots;
  if (failed(addSlots(c, slots, error)))
    return failure();

  SmallVector<std::string> names =
      getScheduleSlotNames(c.kind, int64_t(slots.values.size()));
  ScheduleSlots result;
  for (size_t i = 0; i < slots.values.size(); ++i)
    if (slots.epochs[i])
      result.epochs.push_back({names[i], *slots.epochs[i]});
  if (horizonFromRun(c))
    result.runLength = names[size_t(slots.horizon)];
  result.values = std::move(slots.values);
  return result;
}

llvm::json::Object scheduleManifestEntry(LearningRateOp op) {
  llvm::json::Object entry{
      {"kind", stringifySchedule(op.getSchedule())},
      {"variable", kScheduleVariable},
      {"slots", llvm::json::Array(getScheduleSlotNames(
                    op.getSchedule(), op.getParams().getType().getDimSize(0)))}};
  auto module = op->getParentOfType<ModuleOp>();
  auto variable =
      module ? module.lookupSymbol<VariableOp>(kScheduleVariable) : nullptr;
  if (!variable)
    return entry;
  if (auto epochs = variable->getAttrOfType<DictionaryAttr>(kScheduleEpochsAttr)) {
    llvm::json::Object slots;
    for (NamedAttribute slot : epochs)
      if (auto value = dyn_cast<FloatAttr>(slot.getValue()))
        slots[slot.getName().getValue()] = value.getValueAsDouble();
    entry["epochs"] = std::move(slots);
  }
  if (auto slot = variable->getAttrOfType<StringAttr>(kScheduleRunLengthAttr))
    entry["run_length"] = slot.getValue();
  return entry;
}

FailureOr<ParameterKinds> parseParameterKinds(StringRef option, StringRef text,
                                              std::string &error) {
  ParameterKinds kinds;
  if (text.trim() == "none")
    return kinds;
  SmallVector<StringRef> words;
  text.split(words, ',');
  for (StringRef word : words) {
    word = word.trim();
    if (word == "bn") {
      kinds.batchNorm = true;
    } else if (word == "bias") {
      kinds.bias = true;
    } else {
      error = (option + ": unknown parameter kind '" + word +
               "' (expected a comma-separated list of bn and bias, or none)")
                  .str();
      return failure();
    }
  }
  return kinds;
}

static StringRef kindName(ParameterKind kind) {
  switch (kind) {
  case ParameterKind::Weight:
    return "weight";
  case ParameterKind::BatchNorm:
    return "bn";
  case ParameterKind::Bias:
    return "bias";
  }
  llvm_unreachable("unknown parameter kind");
}

/// The kind `value` (a parameter read, or a cast of one) has as an operand
/// of `user`.
static ParameterKind kindAsOperand(Operation *user, Value value) {
  if (auto bn = dyn_cast<BatchNormTrainOp>(user))
    if (bn.getScale() == value || bn.getOffset() == value)
      return ParameterKind::BatchNorm;
  if (auto bn = dyn_cast<BatchNormInferenceOp>(user))
    if (bn.getScale() == value || bn.getOffset() == value)
      return ParameterKind::BatchNorm;
  if (auto bn = dyn_cast<BatchNormBackwardOp>(user))
    if (bn.getScale() == value)
      return ParameterKind::BatchNorm;
  if (auto dense = dyn_cast<DenseOp>(user))
    if (dense.getBias() == value)
      return ParameterKind::Bias;
  return ParameterKind::Weight;
}

FailureOr<ParameterKind> classifyParameter(VariableOp parameter) {
  auto module = parameter->getParentOfType<ModuleOp>();
  ParameterKind kind = ParameterKind::Weight;
  Operation *decidedBy = nullptr;
  LogicalResult result = success();
  module.walk([&](ReadOp read) {
    if (read.getVariable() != parameter.getSymName())
      return WalkResult::advance();
    SmallVector<Value> values = {read.getValue()};
    for (size_t i = 0; i < values.size(); ++i)
      for (OpOperand &use : values[i].getUses()) {
        Operation *user = use.getOwner();
        if (auto cast = dyn_cast<CastOp>(user)) {
          values.push_back(cast.getOutput());
          continue;
        }
        ParameterKind k = kindAsOperand(user, values[i]);
        if (k == ParameterKind::Weight || k == kind)
          continue;
        if (kind != ParameterKind::Weight) {
          InFlightDiagnostic d = parameter.emitOpError("is read as a ")
                                 << kindName(kind) << " parameter and as a "
                                 << kindName(k)
                                 << " parameter, so its weight decay and "
                                    "trust ratio exemptions are ambiguous";
          d.attachNote(decidedBy->getLoc()) << "read as " << kindName(kind);
          d.attachNote(user->getLoc()) << "read as " << kindName(k);
          result = failure();
          return WalkResult::interrupt();
        }
        kind = k;
        decidedBy = user;
      }
    return WalkResult::advance();
  });
  if (failed(result))
    return failure();
  return kind;
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

/// The gradients `step` returns, by result index, with their parameters.
static LogicalResult
collectGradients(func::FuncOp step, SymbolTable &symbols,
                 SmallVectorImpl<std::pair<unsigned, VariableOp>> &gradients) {
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
  return success();
}

/// Declares the schedule parameters as state the runtime may override, and
/// notes the slots it fills in where the lengths are in epochs or the run's.
static void declareSchedule(OpBuilder &builder, func::FuncOp step,
                            RankedTensorType paramsType,
                            const ScheduleSlots &params) {
  VariableOp schedule = declareState(
      builder, step, kScheduleVariable, paramsType, Initializer::Constant,
      DenseElementsAttr::get(paramsType, ArrayRef<double>(params.values)));
  if (!params.epochs.empty()) {
    SmallVector<NamedAttribute> epochs;
    for (const auto &[slot, value] : params.epochs)
      epochs.push_back(
          builder.getNamedAttr(slot, builder.getF64FloatAttr(value)));
    schedule->setAttr(kScheduleEpochsAttr, builder.getDictionaryAttr(epochs));
  }
  if (!params.runLength.empty())
    schedule->setAttr(kScheduleRunLengthAttr,
                      builder.getStringAttr(params.runLength));
}

/// Sets the label smoothing on every cross entropy of `step` and its
/// backward.
static void setLabelSmoothing(func::FuncOp step, FloatAttr smoothing) {
  step.walk(
      [&](SoftmaxCrossEntropyOp op) { op.setLabelSmoothingAttr(smoothing); });
  step.walk([&](SoftmaxCrossEntropyBackwardOp op) {
    op.setLabelSmoothingAttr(smoothing);
  });
}

namespace {
/// Builds each parameter's update before the step's return.
struct ParameterUpdates {
  func::FuncOp step;
  const OptimizerConfig &config;
  SymbolTable &symbols;
  OpBuilder &builder;
  Location loc;
  Value lr;

  FloatAttr f32(double v) { return builder.getF32FloatAttr(v); }

  /// Declares the momentum of `parameter` and assigns it and the parameter
  /// their updated values, computed from `gradient`.
  LogicalResult update(VariableOp parameter, Value gradient) {
    RankedTensorType type = parameter.getTensorType();
    std::string momentumName = (parameter.getSymName() + kMomentumSuffix).str();
    if (symbols.lookup(momentumName))
      return parameter.emitOpError("cannot add its momentum: @")
             << momentumName << " already exists";
    declareState(builder, step, momentumName, type, Initializer::Zeros);

    MLIRContext *context = builder.getContext();
    Value weight = ReadOp::create(
        builder, loc, type, FlatSymbolRefAttr::get(parameter.getSymNameAttr()));
    Value velocity = ReadOp::create(
        builder, loc, type, FlatSymbolRefAttr::get(context, momentumName));
    // Exemptions go by what the parameter is (batch norm, bias), as the
    // references decide by variable name, never by rank.
    FailureOr<ParameterKind> kind = classifyParameter(parameter);
    if (failed(kind))
      return failure();
    Value newWeight, newVelocity;
    if (config.kind == OptimizerKind::Sgd) {
      std::tie(newWeight, newVelocity) =
          createSgd(*kind, type, weight, gradient, velocity);
    } else {
      FailureOr<std::pair<Value, Value>> lars =
          createLars(parameter, *kind, type, weight, gradient, velocity);
      if (failed(lars))
        return failure();
      std::tie(newWeight, newVelocity) = *lars;
    }
    AssignOp::create(builder, loc, parameter.getSymName(), newWeight);
    AssignOp::create(builder, loc, momentumName, newVelocity);
    return success();
  }

  /// The weight decay of a parameter of `kind`: none if it is exempt.
  double decayOf(ParameterKind kind) {
    bool exempt = config.noDecay.contains(kind);
    return exempt ? 0.0 : config.weightDecay;
  }

  /// kiln.sgd_update's new weight and velocity.
  std::pair<Value, Value> createSgd(ParameterKind kind, RankedTensorType type,
                                    Value weight, Value gradient,
                                    Value velocity) {
    auto update = SgdUpdateOp::create(
        builder, loc, type, type, weight, gradient, velocity, lr,
        f32(config.momentum), f32(decayOf(kind)),
        config.nesterov ? builder.getUnitAttr() : UnitAttr());
    return {update.getNewWeight(), update.getNewVelocity()};
  }

  /// kiln.lars_update's new weight and velocity, or failure if `parameter`
  /// is exempt from weight decay but not from the trust ratio.
  FailureOr<std::pair<Value, Value>>
  createLars(VariableOp parameter, ParameterKind kind, RankedTensorType type,
             Value weight, Value gradient, Value velocity) {
    bool exempt = config.noDecay.contains(kind);
    bool skipTrust = config.larsSkip.contains(kind);
    // The trust ratio's denominator holds wd*|w|: both references compute
    // it only for parameters they decay.
    if (exempt && !skipTrust && config.weightDecay != 0.0)
      return parameter.emitOpError("is a ")
             << kindName(kind)
             << " parameter, exempt from weight decay (no-decay) but not "
                "from LARS's trust ratio (lars-skip), whose denominator "
                "holds the decay; list '"
             << kindName(kind) << "' in both or in neither";
    auto update = LarsUpdateOp::create(
        builder, loc, type, type, /*new_copy=*/Type(), weight, gradient,
        velocity, lr, f32(config.momentum), f32(config.larsEta),
        f32(decayOf(kind)), f32(config.larsEpsilon),
        LarsFormAttr::get(builder.getContext(), config.larsForm),
        skipTrust ? builder.getUnitAttr() : UnitAttr());
    return std::make_pair(Value(update.getNewWeight()),
                          Value(update.getNewVelocity()));
  }
};
} // namespace

/// Makes `step` return its forward results and the learning rate `lr`
/// instead of the gradients, which the updates consume.
static void returnLearningRate(func::FuncOp step, OpBuilder &builder,
                               Value lr) {
  MLIRContext *context = builder.getContext();
  Block &block = step.front();
  auto ret = cast<func::ReturnOp>(block.getTerminator());
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
}

LogicalResult applyOptimizer(func::FuncOp step, const OptimizerConfig &config) {
  auto module = step->getParentOfType<ModuleOp>();
  SymbolTable symbols(module);
  MLIRContext *context = module.getContext();
  OpBuilder builder(context);

  SmallVector<std::pair<unsigned, VariableOp>> gradients;
  if (failed(collectGradients(step, symbols, gradients)))
    return failure();
  if (symbols.lookup(kScheduleVariable))
    return step.emitOpError("already has an optimizer (@")
           << kScheduleVariable << " exists)";

  std::string error;
  FailureOr<ScheduleSlots> params = scheduleSlots(config.schedule, error);
  if (failed(params))
    return step.emitOpError("invalid learning-rate schedule: ") << error;
  auto paramsType = RankedTensorType::get({int64_t(params->values.size())},
                                          builder.getF64Type());
  declareSchedule(builder, step, paramsType, *params);

  Block &block = step.front();
  auto ret = cast<func::ReturnOp>(block.getTerminator());
  Location loc = ret.getLoc();
  // A model with dropout already takes the step (its masks depend on it):
  // the schedule reads the same argument.
  BlockArgument stepArg;
  for (BlockArgument arg : block.getArguments())
    if (step.getArgAttr(arg.getArgNumber(), "kiln.step"))
      stepArg = arg;
  if (!stepArg) {
    auto stepType = RankedTensorType::get({}, builder.getI64Type());
    stepArg = block.addArgument(stepType, step.getLoc());
    step.setFunctionType(FunctionType::get(context, block.getArgumentTypes(),
                                           step.getResultTypes()));
    step.setArgAttr(stepArg.getArgNumber(), "kiln.step",
                    builder.getUnitAttr());
  }

  builder.setInsertionPoint(ret);
  Value scheduleValues = ReadOp::create(
      builder, loc, paramsType,
      FlatSymbolRefAttr::get(context, kScheduleVariable));
  Value lr = LearningRateOp::create(builder, loc, stepArg, scheduleValues,
                                    config.schedule.kind);

  if (config.labelSmoothing > 0)
    setLabelSmoothing(step, builder.getF32FloatAttr(config.labelSmoothing));

  ParameterUpdates updates{step, config, symbols, builder, loc, lr};
  for (auto [index, parameter] : gradients)
    if (failed(updates.update(parameter, ret.getOperand(index))))
      return failure();

  returnLearningRate(step, builder, lr);
  return success();
}

} // namespace kiln
