//===- Optimizer.h - Learning-rate schedules and parameter updates -*- C++ -*-===//

#ifndef KILN_PASSES_OPTIMIZER_OPTIMIZER_H
#define KILN_PASSES_OPTIMIZER_OPTIMIZER_H

#include "dialects/Kiln/IR/KilnOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <string>
#include <vector>

namespace kiln {

/// The symbol of the f64 state variable holding the schedule's parameters.
inline constexpr llvm::StringLiteral kScheduleVariable = "kiln.lr_schedule";
/// The suffix of the momentum state variable of each parameter.
inline constexpr llvm::StringLiteral kMomentumSuffix = ".momentum";

struct ScheduleConfig {
  Schedule kind = Schedule::Constant;
  double lr = 0.1;
  double peakLr = 0.0;
  double warmupInitLr = 0.0;
  int64_t warmupSteps = 0;
  int64_t totalSteps = 0;
  double endLr = 0.0;
  double power = 2.0;
  double factor = 0.1;
  std::vector<int64_t> boundaries;
};

/// The parameter slots of `config` as kiln.learning_rate documents them, or
/// an error message for an inconsistent configuration.
llvm::FailureOr<std::vector<double>>
scheduleParams(const ScheduleConfig &config, std::string &error);

enum class OptimizerKind { Sgd, Lars };

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::Sgd;
  double momentum = 0.9;
  bool nesterov = false;
  double weightDecay = 0.0;
  bool decay1d = false;
  double larsEta = 0.001;
  double larsEpsilon = 0.0;
  double labelSmoothing = 0.0;
  ScheduleConfig schedule;
};

/// Rewrites the training step `step` (built by buildTrainStep) to update
/// every parameter it returns a gradient for; see the kiln-optimizer pass.
llvm::LogicalResult applyOptimizer(mlir::func::FuncOp step,
                                   const OptimizerConfig &config);

} // namespace kiln

#endif // KILN_PASSES_OPTIMIZER_OPTIMIZER_H
