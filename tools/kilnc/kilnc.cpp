//===- kilnc.cpp - The Kiln compiler --------------------------------------===//
//
// kilnc MODEL.mlir|MODEL.onnx -o EXE [--target=x86|systolic] [--batch=N]
//       [--recipe=NAME] [--optimizer=sgd|lars …] [--emit=…]
//
//===----------------------------------------------------------------------===//

#include "compiler/Driver/Driver.h"
#include "compiler/InitAll.h"
#include "passes/EnumOptionParser.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <deque>
#include <type_traits>

namespace cl = llvm::cl;

static cl::OptionCategory category("Compilation options");
static cl::OptionCategory trainCategory(
    "Training-step options (kiln-build-train-step and kiln-optimizer in "
    "passes/Passes.td; --train-option=key=value takes any of its options)");
static cl::opt<std::string> input(cl::Positional,
                                  cl::desc("<model.mlir | model.onnx>"),
                                  cl::cat(category));
static cl::opt<std::string>
    output("o",
           cl::desc("Output file (default: a.out for --emit=exe, else "
                    "standard output)"),
           cl::value_desc("file"), cl::cat(category));
static cl::opt<std::string> target("target",
                                   cl::desc("x86, or systolic (the simulated "
                                            "device: docs/systolic.md)"),
                                   cl::init("x86"), cl::cat(category));
static cl::opt<std::string> systolicProfile(
    "systolic-profile",
    cl::desc("--target=systolic: the device profile to plan for (tpuv3, "
             "tpuv2, tpuv1)"),
    cl::init("tpuv3"), cl::cat(category));
static cl::opt<std::string> precision("precision",
                                      cl::desc("fp32, or bf16 (mixed "
                                               "precision: --kiln-bf16)"),
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
                                   "convolutions with inference batch norm"),
                          cl::init(true), cl::cat(category));
static cl::opt<bool> fuseConvBatchNorm(
    "fuse-conv-batch-norm",
    cl::desc("In the eval step, run each convolution with its batch norm, "
             "residual add and relu as one library call"),
    cl::init(true), cl::cat(category));
static cl::opt<bool> fuseConvBatchNormTrain(
    "fuse-conv-batch-norm-train",
    cl::desc("In the train step, let the convolution kernels that can "
             "take the batch statistics of their training batch norm do so "
             "(no measurable gain yet: docs/performance.md)"),
    cl::init(false), cl::cat(category));
static cl::opt<std::string>
    layout("layout",
           cl::desc("Activation layouts on x86: auto (per op, by estimated "
                    "time; nhwc on CPUs without AVX-512), nhwc or blocked "
                    "(nChw16c wherever possible; AVX-512 only)"),
           cl::init("auto"), cl::cat(category));
static cl::opt<bool>
    smpi("smpi",
         cl::desc("x86: link the executable for SimGrid's smpirun instead of "
                  "mpirun: real computation timed by SMPI on a simulated "
                  "cluster (docs/scaling.md)"),
         cl::cat(category));
static cl::opt<kiln::EmitStage, false, kiln::EnumOptionParser<kiln::EmitStage>>
    emit("emit", cl::desc("The stage to write"),
         cl::init(kiln::EmitStage::Executable),
         cl::values(
             clEnumValN(kiln::EmitStage::Kiln, "kiln", "the parsed model"),
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
    "train-option",
    cl::desc("key=value for the training-step pipeline (any of its options; "
             "repeatable)"),
    cl::cat(trainCategory));
static cl::opt<std::string> initFlag(
    "init",
    cl::desc("An ONNX model's parameters: onnx (its initializers) or fresh "
             "(models/build_model.py's initializers)"),
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

namespace {
/// A training-step flag: kilnc keeps its text, to pass it on to the
/// pipeline as given (a double printed back would lose digits), and lets the
/// pass's own option print its help (description, value type, enum values
/// and default, as Passes.td declares them).
class ForwardedFlag : public cl::opt<std::string> {
public:
  explicit ForwardedFlag(const cl::Option &documented)
      : cl::opt<std::string>(documented.ArgStr, cl::cat(trainCategory)),
        documented(documented) {
    // Booleans may be given alone (--nesterov).
    setValueExpectedFlag(documented.getValueExpectedFlag());
  }
  size_t getOptionWidth() const override { return documented.getOptionWidth(); }
  void printOptionInfo(size_t globalWidth) const override {
    documented.printOptionInfo(globalWidth);
  }

private:
  const cl::Option &documented;
};
} // namespace

/// The default of one of kilnc's own options, as its help shows it.
template <typename T, typename Parser>
static std::string defaultText(cl::opt<T, false, Parser> &option) {
  const T &value = option.getDefault().getValue();
  if constexpr (std::is_same_v<T, bool>)
    return value ? "true" : "false";
  else if constexpr (std::is_same_v<T, std::string>)
    return value;
  else if constexpr (std::is_enum_v<T>) {
    const Parser &parser = option.getParser();
    for (unsigned i = 0; i < parser.getNumOptions(); ++i)
      if (parser.getOptionValue(i).compare(option.getDefault()))
        return parser.getOption(i).str();
    return "";
  } else
    return std::to_string(value);
}

/// Appends each option's default to its description: llvm::cl's help does
/// not show defaults. `descriptions` keeps the texts.
template <typename... Options>
static void showDefaults(std::deque<std::string> &descriptions,
                         Options &...options) {
  auto show = [&](auto &option) {
    descriptions.push_back(
        (option.HelpStr + " (default: " + defaultText(option) + ")").str());
    option.setDescription(descriptions.back());
  };
  (show(options), ...);
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  static std::deque<std::string> descriptions;
  showDefaults(descriptions, target, systolicProfile, precision, batch, cpu,
               stats, fuse, fuseConvBatchNorm, fuseConvBatchNormTrain, layout,
               emit, initFlag);
  // The training-step options (Passes.td declares them), one flag each
  // under the pipeline's name.
  static const kiln::TrainStepFlags trainStepFlags;
  std::vector<std::unique_ptr<ForwardedFlag>> flags;
  for (cl::Option *option : trainStepFlags.getOptions())
    flags.push_back(std::make_unique<ForwardedFlag>(*option));
  // MLIR's pass-manager and timing flags (--mlir-timing,
  // --mlir-timing-display=tree, --mlir-pass-statistics): not in --help.
  mlir::registerPassManagerCLOptions();
  mlir::registerDefaultTimingManagerCLOptions();
  cl::HideUnrelatedOptions({&category, &trainCategory});
  std::string parseErrors;
  llvm::raw_string_ostream parseErrorStream(parseErrors);
  if (!cl::ParseCommandLineOptions(argc, argv, "Kiln training compiler\n",
                                   &parseErrorStream)) {
    // llvm::cl writes a line per complaint, each starting with the tool's
    // name, and a suggestion after an unknown option: the first complaint
    // and its suggestion make the one line. (A bad value is reported by the
    // option's parser, on stderr, in one line already.)
    llvm::SmallVector<llvm::StringRef> lines;
    llvm::StringRef(parseErrors).split(lines, '\n', -1, /*KeepEmpty=*/false);
    std::string prefix = (llvm::sys::path::filename(argv[0]) + ": ").str();
    for (llvm::StringRef &line : lines) {
      line.consume_front(prefix);
      line = line.trim();
    }
    if (!lines.empty()) {
      llvm::errs() << "kilnc: " << lines[0];
      if (lines.size() > 1 && lines[1].starts_with("Did you mean"))
        llvm::errs() << " " << lines[1];
      llvm::errs() << "\n";
    }
    return 1;
  }
  if (input.empty()) {
    llvm::errs() << "kilnc: no model given (kilnc MODEL.mlir|MODEL.onnx "
                    "[options]; --help lists the options)\n";
    return 1;
  }

  std::string pipelineOptions;
  llvm::StringSet<> given;
  auto add = [&](llvm::StringRef key, llvm::StringRef value) {
    // A boolean given alone (--nesterov) is set by its name alone.
    pipelineOptions +=
        (value.empty() ? key + " " : key + "=" + value + " ").str();
    given.insert(key);
  };
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
  std::string error;
  llvm::raw_string_ostream errors(error);
  auto trainStep =
      kiln::TrainStepPipelineOptions::parse(pipelineOptions, errors);
  if (!trainStep) {
    // Empty when llvm::cl has printed the error.
    if (!error.empty())
      llvm::errs() << "kilnc: " << llvm::StringRef(error).trim() << "\n";
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
  options.smpi = smpi;
  if (layout.getNumOccurrences() > 0 && target == "systolic") {
    llvm::errs() << "kilnc: --layout chooses x86 activation layouts; the "
                    "systolic target plans its own tiling\n";
    return 1;
  }
  options.trainStep = trainStep.get();
  return kiln::compile(options);
}
