//===- kiln-translate.cpp - Models in other formats to kiln IR ------------===//
//
// kiln-translate --import-onnx MODEL.onnx [-o FILE] [--label-smoothing=F]
//                [--init=onnx|fresh]
//
// Prints the imported model as kiln IR (what kilnc compiles from an .onnx
// file). docs/onnx.md describes the import.
//
//===----------------------------------------------------------------------===//

#include "compiler/Import/Onnx/OnnxImport.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

namespace cl = llvm::cl;

static cl::OptionCategory category("kiln-translate options");
static cl::opt<std::string> input(cl::Positional, cl::desc("<model>"),
                                  cl::Required, cl::cat(category));
static cl::opt<std::string> output("o", cl::desc("Output file"),
                                   cl::value_desc("file"), cl::init("-"),
                                   cl::cat(category));
static cl::opt<bool> importOnnx("import-onnx",
                                cl::desc("Import an ONNX model"),
                                cl::Required, cl::cat(category));
static cl::opt<float> labelSmoothing(
    "label-smoothing", cl::desc("Label smoothing of the appended loss"),
    cl::init(0.0f), cl::cat(category));
static cl::opt<std::string> init(
    "init",
    cl::desc("Parameter initializers: onnx (the model's initializers, the "
             "default) or fresh (models/build_model.py's rules)"),
    cl::init("onnx"), cl::cat(category));

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv, "Kiln model translator\n");
  if (init != "onnx" && init != "fresh") {
    llvm::errs() << "kiln-translate: --init must be onnx or fresh, not '"
                 << init << "'\n";
    return 1;
  }
  mlir::MLIRContext context;
  llvm::SourceMgr sourceMgr;
  mlir::SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  kiln::OnnxImportOptions options;
  options.labelSmoothing = labelSmoothing;
  options.freshInit = init == "fresh";
  mlir::OwningOpRef<mlir::ModuleOp> module =
      kiln::importOnnxFile(input, context, options);
  if (!module)
    return 1;
  std::string error;
  std::unique_ptr<llvm::ToolOutputFile> file =
      mlir::openOutputFile(output, &error);
  if (!file) {
    llvm::errs() << "kiln-translate: " << error << "\n";
    return 1;
  }
  module->print(file->os());
  file->os() << "\n";
  file->keep();
  return 0;
}
