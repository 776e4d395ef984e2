//===- kiln-opt.cpp - The Kiln pass driver --------------------------------===//
//
// Runs Kiln passes and pipelines over a file, for lit tests and debugging.
//
//===----------------------------------------------------------------------===//

#include "compiler/InitAll.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"

/// Hides from --help the options every LLVM library registers as it loads
/// (code generation for targets kiln-opt never runs, such as --amdgpu-*):
/// those exist before main, while MLIR registers its own (the passes,
/// pipelines and --mlir-*) when the driver asks. --help-hidden lists them.
static void hideLibraryOptions() {
  static const llvm::StringSet<> kept = {"help", "help-list", "version"};
  for (auto &entry : llvm::cl::getRegisteredOptions()) {
    llvm::cl::Option *option = entry.second;
    if (!kept.contains(entry.first) &&
        option->getOptionHiddenFlag() == llvm::cl::NotHidden)
      option->setHiddenFlag(llvm::cl::Hidden);
  }
}

/// Sets up the pass pipeline as MLIR's driver would, without the empty
/// error MLIR adds after a bad pass-option value: llvm::cl has already printed
/// the value's one clear line and hands MLIR an empty message.
static mlir::LogicalResult setupQuietly(const mlir::MlirOptMainConfig &config,
                                        mlir::PassManager &pm) {
  mlir::ScopedDiagnosticHandler dropEmpty(
      pm.getContext(), [](mlir::Diagnostic &diagnostic) {
        return mlir::success(diagnostic.getSeverity() ==
                                 mlir::DiagnosticSeverity::Error &&
                             diagnostic.str().empty());
      });
  return config.setupPassPipeline(pm);
}

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  hideLibraryOptions();
  mlir::DialectRegistry registry;
  kiln::registerAllKilnDialects(registry);
  kiln::registerAllKilnPasses();
  auto [inputFilename, outputFilename] = mlir::registerAndParseCLIOptions(
      argc, argv, "Kiln optimizer driver\n", registry);
  mlir::MlirOptMainConfig config =
      mlir::MlirOptMainConfig::createFromCLOptions();
  if (config.shouldShowDialects() || config.shouldListPasses())
    return mlir::asMainReturnCode(mlir::MlirOptMain(
        argc, argv, inputFilename, outputFilename, registry));
  mlir::MlirOptMainConfig upstream = config;
  config.setPassPipelineSetupFn([upstream](mlir::PassManager &pm) {
    return setupQuietly(upstream, pm);
  });

  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> input =
      mlir::openInputFile(inputFilename, &error);
  if (!input) {
    llvm::errs() << "kiln-opt: " << error << "\n";
    return 1;
  }
  std::unique_ptr<llvm::ToolOutputFile> output =
      mlir::openOutputFile(outputFilename, &error);
  if (!output) {
    llvm::errs() << "kiln-opt: " << error << "\n";
    return 1;
  }
  if (mlir::failed(
          mlir::MlirOptMain(output->os(), std::move(input), registry, config)))
    return 1;
  output->keep();
  return 0;
}
