//===- OptimizerPass.cpp - kiln-optimizer ---------------------------------===//

#include "passes/Optimizer/Optimizer.h"
#include "passes/Passes.h"

namespace kiln {
#define GEN_PASS_DEF_KILNOPTIMIZER
#include "passes/Passes.h.inc"

namespace {
struct OptimizerPass : impl::KilnOptimizerBase<OptimizerPass> {
  using Base::Base;

  /// Every option, as llvm::cl registered it: the pass's options are a
  /// subcommand of their own.
  llvm::SmallVector<llvm::cl::Option *> getOptions() const {
    llvm::SmallVector<llvm::cl::Option *> options;
    for (llvm::cl::SubCommand *sub : stepFunction.Subs)
      for (const auto &entry : llvm::cl::getRegisteredOptions(*sub))
        options.push_back(entry.second);
    llvm::sort(options, [](llvm::cl::Option *a, llvm::cl::Option *b) {
      return a->ArgStr < b->ArgStr;
    });
    return options;
  }

  /// The configuration the options describe, or why they describe none.
  llvm::FailureOr<OptimizerConfig> getConfig(std::string &error) const {
    OptimizerConfig config;
    config.kind = optimizer;
    config.momentum = momentum;
    config.nesterov = nesterov;
    config.weightDecay = weightDecay;
    llvm::FailureOr<ParameterKinds> exempt =
        parseParameterKinds("kiln-optimizer: no-decay", noDecay, error);
    if (llvm::failed(exempt))
      return llvm::failure();
    llvm::FailureOr<ParameterKinds> skip =
        parseParameterKinds("kiln-optimizer: lars-skip", larsSkip, error);
    if (llvm::failed(skip))
      return llvm::failure();
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
    return config;
  }

  /// Checks the options as a whole when they are given as text (kiln-opt,
  /// a pipeline string, kilnc's flags), so that a bad combination is one
  /// line before anything runs rather than an error on the module.
  llvm::LogicalResult
  initializeOptions(llvm::StringRef options,
                    llvm::function_ref<llvm::LogicalResult(const llvm::Twine &)>
                        errorHandler) override {
    if (llvm::failed(
            Base::initializeOptions(options, [&](const llvm::Twine &message) {
              // llvm::cl reports a bad value itself, on stderr, and leaves
              // the message empty: one line is enough.
              std::string text = message.str();
              llvm::StringRef line = llvm::StringRef(text).rtrim();
              return line.empty() ? llvm::failure() : errorHandler(line);
            })))
      return llvm::failure();
    std::string error;
    llvm::FailureOr<OptimizerConfig> config = getConfig(error);
    if (llvm::failed(config))
      return errorHandler(error);
    if (llvm::failed(scheduleSlots(config->schedule, error)))
      return errorHandler("kiln-optimizer: invalid learning-rate schedule: " +
                          error);
    return llvm::success();
  }

  void runOnOperation() override {
    mlir::ModuleOp module = getOperation();
    std::string error;
    llvm::FailureOr<OptimizerConfig> config = getConfig(error);
    if (llvm::failed(config)) {
      module.emitError(error);
      return signalPassFailure();
    }

    auto step = module.lookupSymbol<mlir::func::FuncOp>(stepFunction);
    if (!step) {
      module.emitError("kiln-optimizer: no function @") << stepFunction;
      return signalPassFailure();
    }
    if (failed(applyOptimizer(step, *config)))
      signalPassFailure();
  }
};
} // namespace

llvm::SmallVector<llvm::cl::Option *> getOptimizerOptions(mlir::Pass &pass) {
  assert(pass.getTypeID() == mlir::TypeID::get<OptimizerPass>() &&
         "not a kiln-optimizer");
  return static_cast<OptimizerPass &>(pass).getOptions();
}
} // namespace kiln
