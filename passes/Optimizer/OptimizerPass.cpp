//===- OptimizerPass.cpp - kiln-optimizer ---------------------------------===//

#include "passes/Optimizer/Optimizer.h"
#include "passes/Passes.h"

namespace kiln {
#define GEN_PASS_DEF_KILNOPTIMIZER
#include "passes/Passes.h.inc"

namespace {
struct OptimizerPass : impl::KilnOptimizerBase<OptimizerPass> {
  using Base::Base;

  /// Every option's name: each is registered with the pass's options, which
  /// `llvm::cl` keeps as a subcommand of its own.
  llvm::SmallVector<std::string> getOptionNames() const {
    llvm::SmallVector<std::string> names;
    for (llvm::cl::SubCommand *options : stepFunction.Subs)
      for (const auto &entry : llvm::cl::getRegisteredOptions(*options))
        names.push_back(entry.first.str());
    llvm::sort(names);
    return names;
  }

  void runOnOperation() override {
    mlir::ModuleOp module = getOperation();
    OptimizerConfig config;
    config.kind = optimizer;
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
    config.larsForm = larsForm;
    config.larsEta = larsEta;
    config.larsEpsilon = larsEpsilon;
    config.labelSmoothing = labelSmoothing;
    ScheduleConfig &s = config.schedule;
    s.kind = schedule;
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

llvm::SmallVector<std::string> getOptimizerOptionNames() {
  return OptimizerPass().getOptionNames();
}
} // namespace kiln
