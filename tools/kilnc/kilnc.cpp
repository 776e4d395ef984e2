//===- kilnc.cpp - The Kiln compiler --------------------------------------===//
//
// kilnc MODEL.mlir|MODEL.onnx -o EXE [--target=x86|systolic] [--batch=N]
//       [--recipe=NAME] [--optimizer=sgd|lars …] [--emit=…]
//
//===----------------------------------------------------------------------===//

#include "compiler/Driver/Driver.h"
#include "compiler/InitAll.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

namespace cl = llvm::cl;

static cl::OptionCategory category("kilnc options");
static cl::opt<std::string> input(cl::Positional, cl::desc("<model.mlir | model.onnx>"),
                                  cl::Required, cl::cat(category));
static cl::opt<std::string> output("o", cl::desc("Output file"),
                                   cl::value_desc("file"), cl::cat(category));
static cl::opt<std::string> target("target", cl::desc("x86 or systolic"),
                                   cl::init("x86"), cl::cat(category));
static cl::opt<std::string> systolicProfile(
    "systolic-profile",
    cl::desc("--target=systolic: the device profile to plan for (tpuv3, "
             "tpuv2, tpuv1)"),
    cl::init("tpuv3"), cl::cat(category));
static cl::opt<std::string> precision("precision", cl::desc("fp32 or bf16"),
                                      cl::init("fp32"), cl::cat(category));
static cl::opt<int64_t> batch("batch", cl::desc("Batch size per rank"),
                              cl::init(32), cl::cat(category));
static cl::opt<std::string> cpu("cpu", cl::desc("LLVM CPU name, or native"),
                                cl::init("native"), cl::cat(category));
static cl::opt<bool> stats("print-stats",
                           cl::desc("Print model cost, memory plan and times"),
                           cl::cat(category));
static cl::opt<bool> fuse("fuse",
                          cl::desc("Run --kiln-fuse: batch norm with relu, "
                                   "elementwise chains, optimizer updates, "
                                   "convolutions with inference batch norm "
                                   "(default on)"),
                          cl::init(true), cl::cat(category));
static cl::opt<bool> fuseConvBatchNorm(
    "fuse-conv-batch-norm",
    cl::desc("In the eval step, run each convolution with its batch norm, "
             "residual add and relu as one library call (default on)"),
    cl::init(true), cl::cat(category));
static cl::opt<bool> fuseConvBatchNormTrain(
    "fuse-conv-batch-norm-train",
    cl::desc("In the train step, let the convolution kernels that can "
             "take the batch statistics of their training batch norm do so "
             "(default off: no measurable gain yet, docs/performance.md)"),
    cl::init(false), cl::cat(category));
static cl::opt<std::string>
    layout("layout",
           cl::desc("Activation layouts on x86: auto (per op, by estimated "
                    "time; nhwc on CPUs without AVX-512), nhwc or blocked "
                    "(nChw16c wherever possible; AVX-512 only)"),
           cl::init("auto"), cl::cat(category));
static cl::opt<kiln::EmitStage> emit(
    "emit", cl::desc("The stage to write"), cl::init(kiln::EmitStage::Executable),
    cl::values(clEnumValN(kiln::EmitStage::Kiln, "kiln", "the parsed model"),
               clEnumValN(kiln::EmitStage::Train, "train", "the training step"),
               clEnumValN(kiln::EmitStage::Linalg, "linalg",
                          "loops and runtime calls over the arena"),
               clEnumValN(kiln::EmitStage::Sa, "sa",
                          "the sa dialect program (--target=systolic)"),
               clEnumValN(kiln::EmitStage::Program, "ksap",
                          "the serialized device program (--target=systolic)"),
               clEnumValN(kiln::EmitStage::LLVM, "llvm", "LLVM IR"),
               clEnumValN(kiln::EmitStage::Object, "obj", "an object file"),
               clEnumValN(kiln::EmitStage::Executable, "exe",
                          "the training executable")),
    cl::cat(category));

// Options of the training step, passed to the kiln-build-train-step
// pipeline under the same names.
static cl::list<std::string> trainOptions(
    "train-option", cl::desc("key=value for the training-step pipeline"),
    cl::cat(category));
static cl::opt<std::string> optimizerFlag("optimizer", cl::desc("sgd or lars"),
                                          cl::cat(category));
static cl::opt<std::string> initFlag(
    "init",
    cl::desc("An ONNX model's parameters: onnx (its initializers, the "
             "default) or fresh (models/build_model.py's initializers)"),
    cl::init("onnx"), cl::cat(category));
static cl::opt<uint64_t> dropoutSeed(
    "dropout-seed",
    cl::desc("The seed of every dropout mask (kiln.dropout's seed; the "
             "model's own when not given: 0 for an ONNX model)"),
    cl::cat(category));
static cl::opt<std::string> recipeFlag(
    "recipe",
    cl::desc("A reference run's training recipe: surfsara-xeon or "
             "mlperf-v0.6 (its step options and batch; flags given here "
             "override them; docs/runtime.md \"Reference recipes\")"),
    cl::cat(category));

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  // The training-step options (Passes.td declares them), one flag each
  // under the pipeline's name; --optimizer is declared above with its help.
  static const llvm::SmallVector<std::string> names =
      kiln::getTrainStepFlagNames();
  std::vector<std::unique_ptr<cl::opt<std::string>>> flags;
  for (const std::string &name : names)
    if (name != "optimizer")
      flags.push_back(std::make_unique<cl::opt<std::string>>(
          llvm::StringRef(name),
          cl::desc("Training step: see kiln-build-train-step"),
          cl::cat(category)));
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv, "Kiln training compiler\n");

  std::string pipelineOptions;
  llvm::StringSet<> given;
  auto add = [&](llvm::StringRef key, llvm::StringRef value) {
    pipelineOptions += (key + "=" + value + " ").str();
    given.insert(key);
  };
  if (optimizerFlag.getNumOccurrences())
    add("optimizer", optimizerFlag);
  for (auto &flag : flags)
    if (flag->getNumOccurrences())
      add(flag->ArgStr, *flag);
  for (const std::string &option : trainOptions) {
    pipelineOptions += option + " ";
    given.insert(llvm::StringRef(option).split('=').first.trim());
  }
  const kiln::Recipe *recipe = nullptr;
  if (recipeFlag.getNumOccurrences()) {
    recipe = kiln::findRecipe(recipeFlag);
    if (!recipe) {
      std::string names;
      for (const kiln::Recipe &r : kiln::getRecipes())
        names += (names.empty() ? "" : ", ") + r.name.str();
      llvm::errs() << "kilnc: --recipe: unknown recipe '" << recipeFlag
                   << "' (known: " << names << ")\n";
      return 1;
    }
    // The recipe's options, except those the command line sets itself.
    llvm::SmallVector<llvm::StringRef> words;
    recipe->stepOptions.split(words, ' ', -1, /*KeepEmpty=*/false);
    for (llvm::StringRef word : words)
      if (!given.contains(word.split('=').first))
        pipelineOptions += (word + " ").str();
  }
  auto trainStep = kiln::TrainStepPipelineOptions::parse(pipelineOptions);
  if (!trainStep) {
    llvm::errs() << "kilnc: invalid training-step options: " << pipelineOptions
                 << "\n";
    return 1;
  }

  kiln::CompileOptions options;
  options.input = input;
  if (initFlag != "onnx" && initFlag != "fresh") {
    llvm::errs() << "kilnc: --init must be onnx or fresh, not '" << initFlag
                 << "'\n";
    return 1;
  }
  options.onnxFreshInit = initFlag == "fresh";
  if (dropoutSeed.getNumOccurrences())
    options.dropoutSeed = dropoutSeed;
  options.output = output.empty()
                       ? (emit == kiln::EmitStage::Executable ? "a.out" : "-")
                       : output.getValue();
  options.target = target;
  options.systolicProfile = systolicProfile;
  options.precision = precision;
  options.batch =
      recipe && batch.getNumOccurrences() == 0 ? recipe->batch : batch;
  options.recipe = recipe;
  options.emit = emit;
  options.cpu = cpu;
  options.printStats = stats;
  options.fuse = fuse;
  options.fuseConvBatchNorm = fuseConvBatchNorm;
  options.fuseConvBatchNormTrain = fuseConvBatchNormTrain;
  options.layout = layout;
  if (layout.getNumOccurrences() > 0 && target == "systolic") {
    llvm::errs() << "kilnc: --layout chooses x86 activation layouts; the "
                    "systolic target plans its own tiling\n";
    return 1;
  }
  options.trainStep = trainStep.get();
  return kiln::compile(options);
}
