//===- Optimizer.h - Learning-rate schedules and parameter updates -*- C++ -*-===//

#ifndef KILN_PASSES_OPTIMIZER_OPTIMIZER_H
#define KILN_PASSES_OPTIMIZER_OPTIMIZER_H

#include "dialects/Kiln/IR/KilnOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"
#include "passes/EnumOptionParser.h"
#include "llvm/Support/JSON.h"

#include <string>
#include <vector>

namespace kiln {

/// The symbol of the f64 state variable holding the schedule's parameters.
inline constexpr llvm::StringLiteral kScheduleVariable = "kiln.lr_schedule";
/// The suffix of the momentum state variable of each parameter.
inline constexpr llvm::StringLiteral kMomentumSuffix = ".momentum";
/// On the schedule variable: the step slots given in epochs, a dictionary
/// from slot name to epochs (f64). The manifest's `schedule.epochs`.
inline constexpr llvm::StringLiteral kScheduleEpochsAttr = "kiln.epochs";
/// On the schedule variable: the horizon slot that takes the run's length (a
/// string). The manifest's `schedule.run_length`.
inline constexpr llvm::StringLiteral kScheduleRunLengthAttr = "kiln.run_length";
/// The value of a step slot the runtime fills in: no valid step count, so
/// an interpreter or a runtime that does not fill it stops on it.
inline constexpr double kUnresolvedSteps = -1.0;

struct ScheduleConfig {
  Schedule kind = Schedule::Constant;
  double lr = 0.1;
  double peakLr = 0.0;
  double warmupInitLr = 0.0;
  /// May be fractional (MLPerf v0.6 warms up over 977.45 steps).
  double warmupSteps = 0;
  int64_t totalSteps = 0;
  double endLr = 0.0;
  double power = 2.0;
  double factor = 0.1;
  std::vector<int64_t> boundaries;
  /// The same lengths in epochs (0 or empty: not given).
  double warmupEpochs = 0.0;
  double decayEpochs = 0.0;
  std::vector<double> boundaryEpochs;
};

/// The schedule variable's contents.
struct ScheduleSlots {
  /// One per slot as kiln.learning_rate documents them; kUnresolvedSteps in
  /// the slots below.
  std::vector<double> values;
  /// Slots given in epochs, with their epochs.
  std::vector<std::pair<std::string, double>> epochs;
  /// The horizon slot that takes the run's length, or empty.
  std::string runLength;
};

/// The slots of `config`, or an error message for an inconsistent
/// configuration (naming the options).
llvm::FailureOr<ScheduleSlots> scheduleSlots(const ScheduleConfig &config,
                                             std::string &error);

/// The manifest's `schedule` entry for `op` (docs/model-abi.md): its kind,
/// variable and slot names, and which slots the runtime fills in. Both the
/// x86 manifest and the systolic program's info carry it.
llvm::json::Object scheduleManifestEntry(LearningRateOp op);

enum class OptimizerKind { Sgd, Lars };

/// The options of `pass`, an instance of kiln-optimizer, sorted by name:
/// what a driver that forwards them to the pass offers as flags, with their
/// descriptions, value types and values as Passes.td declares them.
llvm::SmallVector<llvm::cl::Option *> getOptimizerOptions(mlir::Pass &pass);

/// What a parameter is, decided by the ops that read it (not by its rank):
/// a batch norm's scale or offset, a dense layer's bias, or anything else.
enum class ParameterKind { Weight, BatchNorm, Bias };

/// A set of parameter kinds, as the no-decay and lars-skip options list
/// them: "bn", "bias", "bn,bias" or "none".
struct ParameterKinds {
  bool batchNorm = false;
  bool bias = false;
  bool contains(ParameterKind kind) const {
    return (kind == ParameterKind::BatchNorm && batchNorm) ||
           (kind == ParameterKind::Bias && bias);
  }
};

/// Parses a kind list; `error` names the option and the word it rejects.
llvm::FailureOr<ParameterKinds> parseParameterKinds(llvm::StringRef option,
                                                    llvm::StringRef text,
                                                    std::string &error);

/// The kind of `parameter` from every kiln.read of it in its module (through
/// casts): a batch norm's scale or offset, a dense layer's bias, otherwise a
/// weight. Fails, with a diagnostic naming both ops, when one parameter is
/// read as both a batch-norm parameter and a bias.
llvm::FailureOr<ParameterKind> classifyParameter(VariableOp parameter);

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::Sgd;
  double momentum = 0.9;
  bool nesterov = false;
  double weightDecay = 0.0;
  /// Kinds not decayed (Goyal et al. and MLPerf TF2: batch norm and biases;
  /// tensorflow/tpu and MLPerf v0.6 decay every non-batch-norm variable).
  ParameterKinds noDecay{/*batchNorm=*/true, /*bias=*/true};
  /// Kinds whose LARS trust ratio is 1 (MLPerf's skip_list).
  ParameterKinds larsSkip{/*batchNorm=*/true, /*bias=*/true};
  LarsForm larsForm = LarsForm::Tf2;
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

// kiln-optimizer's enum options (Passes.td) name their values in errors.
KILN_ENUM_OPTION_PARSER(::kiln::OptimizerKind)
KILN_ENUM_OPTION_PARSER(::kiln::LarsForm)
KILN_ENUM_OPTION_PARSER(::kiln::Schedule)

#endif // KILN_PASSES_OPTIMIZER_OPTIMIZER_H
