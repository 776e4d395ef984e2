//===- KilnTrainingOps.cpp - Optimizer, schedule, allreduce ---------------===//

#include "dialects/Kiln/IR/KilnOps.h"

using namespace mlir;
using namespace kiln;

int64_t kiln::getScheduleParamCount(Schedule schedule) {
  switch (schedule) {
  case Schedule::Constant:
    return 1;
  case Schedule::LinearWarmupLinearDecay:
    return 4;
  case Schedule::WarmupPolynomialDecay:
    return 5;
  case Schedule::StepDecay:
    return 4; // plus at least one boundary
  case Schedule::CosineDecay:
    return 5;
  }
  llvm_unreachable("unknown schedule");
}

SmallVector<std::string> kiln::getScheduleSlotNames(Schedule schedule,
                                                   int64_t count) {
  SmallVector<std::string> names;
  switch (schedule) {
  case Schedule::Constant:
    names = {"lr"};
    break;
  case Schedule::LinearWarmupLinearDecay:
    names = {"lr", "warmup_steps", "peak_lr", "total_steps"};
    break;
  case Schedule::WarmupPolynomialDecay:
    names = {"lr", "warmup_steps", "total_steps", "end_lr", "power"};
    break;
  case Schedule::StepDecay:
    names = {"lr", "warmup_init_lr", "warmup_steps", "factor"};
    for (int64_t i = 4; i < count; ++i)
      names.push_back("boundary" + std::to_string(i - 4));
    break;
  case Schedule::CosineDecay:
    names = {"lr", "warmup_init_lr", "warmup_steps", "total_steps", "end_lr"};
    break;
  }
  return names;
}

LogicalResult LearningRateOp::verify() {
  int64_t have = getParams().getType().getDimSize(0);
  int64_t want = getScheduleParamCount(getSchedule());
  if (getSchedule() == Schedule::StepDecay) {
    if (ShapedType::isDynamic(have) || have < want + 1)
      return emitOpError("schedule 'step_decay' needs ")
             << want << " parameters and at least one boundary, got " << have;
    return success();
  }
  if (have != want)
    return emitOpError("schedule '")
           << stringifySchedule(getSchedule()) << "' needs " << want
           << " parameters, got " << have;
  return success();
}

LogicalResult LarsUpdateOp::verify() {
  if (Value copy = getNewCopy();
      copy && cast<RankedTensorType>(copy.getType()).getShape() !=
                  getWeight().getType().getShape())
    return emitOpError("the copy's shape differs from the weight's");
  return success();
}

LogicalResult AllReduceOp::inferReturnTypes(MLIRContext *context,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  if (adaptor.getGradients().empty())
    return emitOptionalError(loc, "kiln.allreduce: an empty bucket");
  llvm::append_range(results, adaptor.getGradients().getTypes());
  return success();
}
