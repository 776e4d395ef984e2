//===- kiln-opt.cpp - The Kiln pass driver --------------------------------===//
//
// Runs Kiln passes and pipelines over a file, for lit tests and debugging.
//
//===----------------------------------------------------------------------===//

#include "compiler/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Support/CommandLine.h"

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

int main(int argc, char **argv) {
  hideLibraryOptions();
  mlir::DialectRegistry registry;
  kiln::registerAllKilnDialects(registry);
  kiln::registerAllKilnPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "Kiln optimizer driver\n", registry));
}
