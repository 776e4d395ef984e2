//===- kiln-run.cpp - The Kiln reference interpreter ----------------------===//
//
// Runs a function of a kiln module on the reference kernels, or checks the
// gradients of a training step by finite differences. The logic lives in
// compiler/Interpreter (Runner.h); this file parses flags and the input.
// See docs/kiln-run.md.
//
//===----------------------------------------------------------------------===//

#include "compiler/Interpreter/Runner.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/ToolUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

#include <cstdlib>

using namespace llvm;

namespace {
cl::OptionCategory category("kiln-run options");

cl::opt<std::string> inputFile(cl::Positional, cl::desc("<input .mlir>"),
                               cl::init("-"), cl::cat(category));
cl::opt<std::string> function(
    "function",
    cl::desc("Function to run (default: train_step if present, else forward)"),
    cl::cat(category));
cl::opt<uint64_t> seed("seed",
                       cl::desc("Seed of variable initializers, synthetic "
                                "inputs and gradient-check samples"),
                       cl::init(0), cl::cat(category));
cl::opt<std::string>
    loadPath("load", cl::desc("Load every variable from this safetensors file"),
             cl::cat(category));
cl::opt<std::string> savePath(
    "save", cl::desc("Save every variable to this safetensors file at the end"),
    cl::cat(category));
cl::opt<std::string> inputsPath(
    "inputs",
    cl::desc("Safetensors file holding the arguments as arg0, arg1, ..."),
    cl::cat(category));
cl::opt<bool> syntheticInputs(
    "synthetic-inputs",
    cl::desc("Synthesize the arguments: normal(0,1) floats, uniform labels"),
    cl::cat(category));
cl::opt<int64_t> batch("batch", cl::desc("Batch size of synthetic inputs"),
                       cl::init(0), cl::cat(category));
cl::opt<int64_t> steps("steps", cl::desc("Number of calls"), cl::init(1),
                       cl::cat(category));
cl::opt<int64_t> firstStep("first-step",
                           cl::desc("Step number passed to the first call"),
                           cl::init(0), cl::cat(category));
cl::opt<bool> printResults("print-results",
                           cl::desc("Print every result of every call"),
                           cl::cat(category));
cl::opt<unsigned> printLimit("print-limit",
                             cl::desc("Values printed per result"),
                             cl::init(16), cl::cat(category));
cl::opt<std::string> saveResultsPath(
    "save-results",
    cl::desc("Save the last call's results as result0, result1, ..."),
    cl::cat(category));
cl::opt<std::string> checkGradients(
    "check-gradients", cl::ValueOptional,
    cl::desc("Check the step's gradients by finite differences of @forward; "
             "the value is the tolerance (default 1e-3)"),
    cl::value_desc("tolerance"), cl::cat(category));
cl::opt<int64_t> checkSamples("check-samples",
                              cl::desc("Elements checked per parameter"),
                              cl::init(16), cl::cat(category));
cl::opt<double> checkStep("check-step",
                          cl::desc("Largest finite-difference step"),
                          cl::init(0.1), cl::cat(category));
cl::opt<kiln::interp::KinkHandling> checkKinks(
    "check-kinks", cl::desc("How finite differences treat ReLU/max-pool kinks"),
    cl::values(clEnumValN(kiln::interp::KinkHandling::Freeze, "freeze",
                          "replay the unperturbed point's masks (default)"),
               clEnumValN(kiln::interp::KinkHandling::Detect, "detect",
                          "avoid kinks: one-sided stencils, smaller steps")),
    cl::init(kiln::interp::KinkHandling::Freeze), cl::cat(category));
cl::opt<bool> splitInputFile(
    "split-input-file",
    cl::desc("Run each chunk of the input between '// -----' lines as its own "
             "module (as kiln-opt does)"),
    cl::cat(category));
cl::opt<std::string> forwardFunction(
    "forward-function",
    cl::desc("The forward function a gradient check differentiates"),
    cl::init("forward"), cl::cat(category));
} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv, "Kiln reference interpreter\n");

  kiln::interp::RunOptions options;
  options.function = function;
  options.seed = seed;
  options.loadPath = loadPath;
  options.savePath = savePath;
  options.inputs.path = inputsPath;
  options.inputs.synthetic = syntheticInputs;
  options.inputs.batch = batch;
  options.steps = steps;
  options.firstStep = firstStep;
  options.printResults = printResults;
  options.printLimit = printLimit;
  options.saveResultsPath = saveResultsPath;
  options.forwardFunction = forwardFunction;
  if (syntheticInputs && !inputsPath.empty()) {
    errs() << "kiln-run: --inputs and --synthetic-inputs exclude each other\n";
    return 1;
  }
  if (steps < 1 || firstStep < 0) {
    errs() << "kiln-run: --steps must be positive and --first-step "
              "non-negative\n";
    return 1;
  }
  if (checkGradients.getNumOccurrences()) {
    kiln::interp::GradientCheckOptions check;
    if (!checkGradients.empty()) {
      char *end = nullptr;
      check.tolerance = std::strtod(checkGradients.c_str(), &end);
      if (*end != '\0' || !(check.tolerance > 0)) {
        errs() << "kiln-run: --check-gradients=" << checkGradients
               << ": the tolerance must be a positive number\n";
        return 1;
      }
    }
    if (checkSamples < 1 || !(checkStep > 0)) {
      errs() << "kiln-run: --check-samples and --check-step must be positive\n";
      return 1;
    }
    check.samples = checkSamples;
    check.step = checkStep;
    check.kinks = checkKinks;
    options.gradientCheck = check;
  }

  mlir::DialectRegistry registry;
  kiln::interp::registerInterpreterDialects(registry);

  std::string error;
  std::unique_ptr<MemoryBuffer> buffer = mlir::openInputFile(inputFile, &error);
  if (!buffer) {
    errs() << "kiln-run: " << error << "\n";
    return 1;
  }
  auto process = [&](std::unique_ptr<MemoryBuffer> chunk,
                     raw_ostream &os) -> mlir::LogicalResult {
    mlir::MLIRContext context(registry);
    // The messages name the op and its location; a dump of the op (a whole
    // function, for an argument error) would bury them.
    context.printOpOnDiagnostic(false);
    SourceMgr sourceMgr;
    sourceMgr.AddNewSourceBuffer(std::move(chunk), SMLoc());
    mlir::SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
    // Parsing verifies the module: bad IR fails here with its diagnostics.
    mlir::OwningOpRef<mlir::ModuleOp> module =
        mlir::parseSourceFile<mlir::ModuleOp>(sourceMgr, &context);
    if (!module)
      return mlir::failure();
    return kiln::interp::run(*module, options, os);
  };
  if (splitInputFile)
    return mlir::succeeded(mlir::splitAndProcessBuffer(
               std::move(buffer), process, outs(), mlir::kDefaultSplitMarker,
               mlir::kDefaultSplitMarker))
               ? 0
               : 1;
  return mlir::succeeded(process(std::move(buffer), outs())) ? 0 : 1;
}
