//===- OptimizerPass.cpp - kiln-optimizer ---------------------------------===//

#include "passes/Optimizer/Optimizer.h"
#include "passes/Passes.h"

#include "llvm/ADT/StringSwitch.h"

namespace kiln {
#define GEN_PASS_DEF_KILNOPTIMIZER
#include "passes/Passes.h.inc"

namespace {
struct OptimizerPass : impl::KilnOptimizerBase<OptimizerPass> {
  using Base::Base;

  void runOnOperation() override {
    mlir::ModuleOp module = getOperation();
    OptimizerConfig config;
    if (optimizer == "sgd") {
      config.kind = OptimizerKind::Sgd;
    } else if (optimizer == "lars") {
      config.kind = OptimizerKind::Lars;
    } else {
      module.emitError("kiln-optimizer: unknown optimizer '")
          << optimizer << "' (expected sgd or lars)";
      return signalPassFailure();
    }
    std::optional<Schedule> kind = symbolizeSchedule(schedule);
    if (!kind) {
      module.emitError("kiln-optimizer: unknown schedule '") << schedule << "'";
      return signalPassFailure();
    }
    config.momentum = momentum;
    config.nesterov = nesterov;
    config.weightDecay = weightDecay;
    std::string error;
    llvm::FailureOr<ParameterKinds> exempt =
        parseParameterKinds("kiln-optimizer: no-decay", noDecay, error);
    llvm::FailureOr<ParameterKinds> skip =
        llvm::failed(exempt)
            ? llvm::FailureOr<ParameterKinds>(llvm::failure())
            : parseParameterKinds("kiln-optimizer: lars-skip", larsSkip, error);
    if (llvm::failed(skip)) {
      module.emitError(error);
      return signalPassFailure();
    }
    config.noDecay = *exempt;
    config.larsSkip = *skip;
    if (larsForm == "tf2") {
      config.larsForm = LarsForm::Tf2;
    } else if (larsForm == "v0.6") {
      config.larsForm = LarsForm::V0_6;
    } else {
      module.emitError("kiln-optimizer: unknown lars-form '")
          << larsForm << "' (expected tf2 or v0.6)";
      return signalPassFailure();
    }
    config.larsEta = larsEta;
    config.larsEpsilon = larsEpsilon;
    config.labelSmoothing = labelSmoothing;
    ScheduleConfig &s = config.schedule;
    s.kind = *kind;
    s.lr = lr;
    s.peakLr = peakLr;
    s.warmupInitLr = warmupInitLr;
    s.warmupSteps = warmupSteps;
    s.totalSteps = totalSteps;
    s.endLr = endLr;
    s.power = power;
    s.factor = factor;
    s.boundaries.assign(boundaries.begin(), boundaries.end());
    s.warmupEpochs = warmupEpochs;
    s.decayEpochs = decayEpochs;
    s.boundaryEpochs.assign(boundaryEpochs.begin(), boundaryEpochs.end());

    auto step = module.lookupSymbol<mlir::func::FuncOp>(stepFunction);
    if (!step) {
      module.emitError("kiln-optimizer: no function @") << stepFunction;
      return signalPassFailure();
    }
    if (failed(applyOptimizer(step, config)))
      signalPassFailure();
  }
};
} // namespace
} // namespace kiln
