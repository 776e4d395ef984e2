//===- Pipelines.h - Kiln's named pass pipelines ----------------*- C++ -*-===//
//
// Each stage of the compiler is a function that fills a pass manager, also
// registered as a named pipeline so kiln-opt and lit tests can run it.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_PIPELINES_H
#define KILN_COMPILER_PIPELINES_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace kiln {

/// Options of the training-step pipeline: those of kiln-autodiff,
/// kiln-insert-allreduce and kiln-optimizer, under the same names.
struct TrainStepPipelineOptions
    : public mlir::PassPipelineOptions<TrainStepPipelineOptions> {
  Option<std::string> forward{*this, "forward",
                              llvm::cl::desc("The forward function"),
                              llvm::cl::init("forward")};
  Option<std::string> step{*this, "step",
                           llvm::cl::desc("The training step to build"),
                           llvm::cl::init("train_step")};
  Option<int64_t> bucketBytes{
      *this, "bucket-bytes",
      llvm::cl::desc("Smallest gradient bucket in bytes; 0: no allreduce"),
      llvm::cl::init(25 << 20)};
  Option<std::string> optimizer{*this, "optimizer",
                                llvm::cl::desc("sgd or lars"),
                                llvm::cl::init("sgd")};
  Option<double> momentum{*this, "momentum", llvm::cl::init(0.9)};
  Option<bool> nesterov{*this, "nesterov", llvm::cl::init(false)};
  Option<double> weightDecay{*this, "weight-decay", llvm::cl::init(0.0)};
  Option<std::string> noDecay{*this, "no-decay", llvm::cl::init("bn,bias")};
  Option<std::string> larsSkip{*this, "lars-skip", llvm::cl::init("bn,bias")};
  Option<std::string> larsForm{*this, "lars-form", llvm::cl::init("tf2")};
  Option<double> larsEta{*this, "lars-eta", llvm::cl::init(0.001)};
  Option<double> larsEpsilon{*this, "lars-epsilon", llvm::cl::init(0.0)};
  Option<double> labelSmoothing{*this, "label-smoothing", llvm::cl::init(0.0)};
  Option<std::string> schedule{*this, "schedule", llvm::cl::init("constant")};
  Option<double> lr{*this, "lr", llvm::cl::init(0.1)};
  Option<double> peakLr{*this, "peak-lr", llvm::cl::init(0.0)};
  Option<double> warmupInitLr{*this, "warmup-init-lr", llvm::cl::init(0.0)};
  Option<double> warmupSteps{*this, "warmup-steps", llvm::cl::init(0.0)};
  Option<double> warmupEpochs{*this, "warmup-epochs", llvm::cl::init(0.0)};
  Option<int64_t> totalSteps{*this, "total-steps", llvm::cl::init(0)};
  Option<double> decayEpochs{*this, "decay-epochs", llvm::cl::init(0.0)};
  Option<double> endLr{*this, "end-lr", llvm::cl::init(0.0)};
  Option<double> power{*this, "power", llvm::cl::init(2.0)};
  Option<double> factor{*this, "factor", llvm::cl::init(0.1)};
  ListOption<int64_t> boundaries{*this, "boundaries"};
  ListOption<double> boundaryEpochs{*this, "boundary-epochs"};
};

/// The training recipe of a reference run, reproduced exactly
/// (docs/runtime.md "Reference recipes"): kilnc --recipe=NAME takes its
/// training-step options (the pipeline's syntax; flags given on the command
/// line come after, so they win) and its per-rank batch, and checks that the
/// model's batch norms have its momentum.
struct Recipe {
  llvm::StringRef name;
  llvm::StringRef source;
  llvm::StringRef stepOptions;
  int64_t batch;
  /// TF's batch-norm decay; models/build_model.py --bn-momentum.
  double batchNormMomentum;
};

/// The recipes kilnc knows, by name.
llvm::ArrayRef<Recipe> getRecipes();
/// The recipe called `name`, or nullptr.
const Recipe *findRecipe(llvm::StringRef name);

/// Model -> training step: autodiff, gradient buckets with their allreduce,
/// then the optimizer and the learning-rate schedule.
void buildTrainStepPipeline(mlir::OpPassManager &pm,
                            const TrainStepPipelineOptions &options);

/// Registers the pipelines above (kiln-build-train-step).
void registerKilnPipelines();

} // namespace kiln

#endif // KILN_COMPILER_PIPELINES_H
