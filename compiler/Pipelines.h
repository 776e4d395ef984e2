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

#include <deque>

namespace kiln {

/// Options of the training-step pipeline (kiln-build-train-step). The
/// pipeline declares only its own; it takes every option of kiln-optimizer
/// as well, under the same names and in the same string, and forwards them
/// to that pass, so Passes.td is their one declaration.
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

  /// The kiln-optimizer options given with these (`key=value` words),
  /// checked by `parse`.
  std::string optimizerOptions;

  /// Parses the pipeline's options and kiln-optimizer's from one
  /// `key=value ...` string (the pipeline's syntax), or returns nullptr after
  /// saying why in one line: on `errors`, or, for a value an option's parser
  /// rejects, on stderr by llvm::cl (which leaves `errors` empty).
  static std::unique_ptr<TrainStepPipelineOptions>
  parse(llvm::StringRef options, llvm::raw_ostream &errors = llvm::errs());
};

/// The options of the training-step pipeline a compiler driver offers as
/// flags: `bucket-bytes` and every kiln-optimizer option but `step`. Each is
/// the llvm::cl option of an instance of the options that declare it (the
/// pipeline's, the pass's: Passes.td), so it prints its own help (its
/// description, value type and enum values); the description ends with the
/// option's default value, as those instances hold it.
class TrainStepFlags {
public:
  TrainStepFlags();
  ~TrainStepFlags();
  /// The options, sorted by name.
  llvm::ArrayRef<llvm::cl::Option *> getOptions() const { return options; }

private:
  std::unique_ptr<TrainStepPipelineOptions> pipeline;
  std::unique_ptr<mlir::Pass> optimizer;
  llvm::SmallVector<llvm::cl::Option *> options;
  /// The descriptions with their defaults, which the options refer to.
  std::deque<std::string> descriptions;
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
