//===- Pipelines.cpp - Kiln's named pass pipelines ------------------------===//

#include "compiler/Pipelines.h"

#include "passes/Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Regex.h"

#include <cstdio>

namespace kiln {

/// Splits `options` into its `key[=value]` words: spaces separate them
/// except inside quotes and braces, as PassOptions::parseFromString reads.
static llvm::SmallVector<llvm::StringRef>
splitOptions(llvm::StringRef options) {
  llvm::SmallVector<llvm::StringRef> words;
  size_t start = 0, depth = 0;
  char quote = 0;
  for (size_t i = 0, e = options.size(); i <= e; ++i) {
    char c = i < e ? options[i] : ' ';
    if (quote) {
      quote = c == quote ? 0 : quote;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '{') {
      ++depth;
    } else if (c == '}' && depth > 0) {
      --depth;
    } else if (c == ' ' && depth == 0) {
      if (i > start)
        words.push_back(options.slice(start, i));
      start = i + 1;
    }
  }
  return words;
}

std::unique_ptr<TrainStepPipelineOptions>
TrainStepPipelineOptions::parse(llvm::StringRef options,
                                llvm::raw_ostream &errors) {
  std::unique_ptr<mlir::Pass> pass = createKilnOptimizer();
  llvm::StringSet<> known = {"forward", "bucket-bytes"};
  for (llvm::cl::Option *option : getOptimizerOptions(*pass))
    known.insert(option->ArgStr);
  std::string own, optimizer;
  for (llvm::StringRef word : splitOptions(options)) {
    llvm::StringRef key = word.split('=').first;
    if (!known.contains(key)) {
      errors << "kiln-build-train-step has no option '" << key << "'";
      return nullptr;
    }
    // Both the pipeline and kiln-optimizer have a `step`.
    if (key == "forward" || key == "bucket-bytes" || key == "step")
      own += (word + " ").str();
    if (key != "forward" && key != "bucket-bytes")
      optimizer += (word + " ").str();
  }
  auto result = std::make_unique<TrainStepPipelineOptions>();
  if (failed(result->parseFromString(own, errors)))
    return nullptr;
  // Checked now, so that a bad value fails before anything is compiled.
  if (failed(
          pass->initializeOptions(optimizer, [&](const llvm::Twine &message) {
            errors << message;
            return mlir::failure();
          })))
    return nullptr;
  result->optimizerOptions = std::move(optimizer);
  return result;
}

/// The values PassOptions::print writes ("{key=value ...}"), by key. Lists
/// left at their default are not written.
static llvm::StringMap<std::string> printedValues(llvm::StringRef printed) {
  llvm::StringMap<std::string> values;
  printed = printed.drop_until([](char c) { return c == '{'; });
  if (!printed.consume_front("{") || !printed.consume_back("}"))
    return values;
  for (llvm::StringRef word : splitOptions(printed)) {
    auto [key, value] = word.split('=');
    values[key] = value.str();
  }
  return values;
}

/// A double as Passes.td would write it: raw_ostream prints doubles as %e
/// ("1.000000e-01"), which PassOptions::print keeps.
static std::string readableNumber(llvm::StringRef text) {
  static const llvm::Regex exponentForm("^-?[0-9]\\.[0-9]{6}e[-+][0-9]+$");
  double value;
  if (!exponentForm.match(text) || text.getAsDouble(value))
    return text.str();
  // The shortest form that reads back as the same double.
  for (int digits = 1; digits <= 17; ++digits) {
    char shortest[32];
    std::snprintf(shortest, sizeof(shortest), "%.*g", digits, value);
    double back;
    if (!llvm::StringRef(shortest).getAsDouble(back) && back == value)
      return shortest;
  }
  return text.str();
}

TrainStepFlags::TrainStepFlags()
    : pipeline(std::make_unique<TrainStepPipelineOptions>()),
      optimizer(createKilnOptimizer()) {
  std::string pipelinePrinted, optimizerPrinted;
  llvm::raw_string_ostream pipelineOs(pipelinePrinted);
  pipeline->print(pipelineOs);
  llvm::raw_string_ostream optimizerOs(optimizerPrinted);
  optimizer->printAsTextualPipeline(optimizerOs);
  llvm::StringMap<std::string> defaults = printedValues(optimizerPrinted);
  defaults["bucket-bytes"] =
      printedValues(pipelinePrinted).lookup("bucket-bytes");

  for (llvm::cl::Option *option : getOptimizerOptions(*optimizer))
    if (option->ArgStr != "step")
      options.push_back(option);
  options.push_back(&pipeline->bucketBytes);
  llvm::sort(options, [](llvm::cl::Option *a, llvm::cl::Option *b) {
    return a->ArgStr < b->ArgStr;
  });
  for (llvm::cl::Option *option : options) {
    auto found = defaults.find(option->ArgStr);
    std::string value =
        found == defaults.end() ? "none" : readableNumber(found->second);
    descriptions.push_back(
        (option->HelpStr + " (default: " + value + ")").str());
    option->setDescription(descriptions.back());
  }
}

TrainStepFlags::~TrainStepFlags() = default;

void buildTrainStepPipeline(mlir::OpPassManager &pm,
                            const TrainStepPipelineOptions &options) {
  KilnAutodiffOptions autodiff;
  autodiff.forwardFunction = options.forward;
  autodiff.stepFunction = options.step;
  pm.addPass(createKilnAutodiff(autodiff));

  if (options.bucketBytes > 0) {
    KilnInsertAllReduceOptions allreduce;
    allreduce.stepFunction = options.step;
    allreduce.bucketBytes = options.bucketBytes;
    pm.addPass(createKilnInsertAllReduce(allreduce));
  }

  std::unique_ptr<mlir::Pass> optimizer = createKilnOptimizer();
  // `parse` checked these options.
  (void)optimizer->initializeOptions(
      options.optimizerOptions,
      [](const llvm::Twine &) { return mlir::failure(); });
  pm.addPass(std::move(optimizer));
  pm.addPass(mlir::createCSEPass());
}

llvm::ArrayRef<Recipe> getRecipes() {
  static const Recipe kRecipes[] = {
      // tensorflow/tpu models/official/resnet/resnet_main.py (TF 1.6 era):
      // Nesterov MomentumOptimizer, L2 on every non-batch-norm variable, with
      // SURFsara/Intel's gradual_warmup_then_dec(0.1, 260, 4.8, step, 4680)
      // at global batch 24576 (256 nodes x 2 workers x 48), BN decay 0.95.
      {"surfsara-xeon", "SURFsara/Intel ResNet-50 on 512 Xeon workers",
       "optimizer=sgd nesterov=true momentum=0.9 weight-decay=5e-5 "
       "no-decay=bn schedule=linear_warmup_linear_decay lr=0.1 peak-lr=4.8 "
       "warmup-steps=260 total-steps=4680",
       48, 0.95},
      // training_results_v0.6 Google resnet (lars_util.py with
      // tf.contrib.opt.LARSOptimizer, skip_list ['batch_normalization',
      // 'bias'], L2 on every non-batch-norm variable): base LR 31.2, 25
      // warmup epochs of 1281167 / 32768 steps = 977.452850341796875 (exact
      // in binary), polynomial decay (power 2) to 1e-4 over the run,
      // momentum 0.9, weight decay 1e-4, epsilon 1e-5, label smoothing 0.1;
      // batch 32768 over 512 cores of 64.
      {"mlperf-v0.6", "MLPerf v0.6 ResNet-50 on a TPUv3-512 pod",
       "optimizer=lars lars-form=v0.6 momentum=0.9 weight-decay=1e-4 "
       "no-decay=bn lars-skip=bn,bias lars-eta=0.001 lars-epsilon=1e-5 "
       "label-smoothing=0.1 schedule=warmup_polynomial_decay lr=31.2 "
       "warmup-steps=977.452850341796875 end-lr=1e-4 power=2",
       64, 0.9},
  };
  return kRecipes;
}

const Recipe *findRecipe(llvm::StringRef name) {
  for (const Recipe &recipe : getRecipes())
    if (recipe.name == name)
      return &recipe;
  return nullptr;
}

void registerKilnPipelines() {
  mlir::registerPassPipeline(
      "kiln-build-train-step",
      "Builds the full training step from a model: autodiff, gradient "
      "allreduce buckets, optimizer and learning-rate schedule (the options "
      "below and every option of kiln-optimizer)",
      [](mlir::OpPassManager &pm, llvm::StringRef text,
         llvm::function_ref<mlir::LogicalResult(const llvm::Twine &)>
             errorHandler) {
        std::string error;
        llvm::raw_string_ostream errors(error);
        std::unique_ptr<TrainStepPipelineOptions> options =
            TrainStepPipelineOptions::parse(text, errors);
        if (!options)
          // An empty message: llvm::cl has printed it.
          return error.empty() ? mlir::failure() : errorHandler(error);
        buildTrainStepPipeline(pm, *options);
        return mlir::success();
      },
      [](llvm::function_ref<void(const mlir::detail::PassOptions &)> print) {
        print(TrainStepPipelineOptions());
      });
}

} // namespace kiln
