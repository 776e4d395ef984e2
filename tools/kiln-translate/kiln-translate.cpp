//===- kiln-translate.cpp - Models in other formats to kiln IR ------------===//
//
// kiln-translate --import-onnx MODEL.onnx [-o FILE] [--label-smoothing=F]
//                [--init=onnx|fresh] [--split-input-file]
//
// Prints the imported model as kiln IR (what kilnc compiles from an .onnx
// file). The model is a serialized ModelProto or ONNX's textual syntax;
// --split-input-file imports each chunk between '# -----' lines on its own
// (lit tests, as kiln-opt's). docs/onnx.md describes the import.
//
//===----------------------------------------------------------------------===//

#include "compiler/Import/Onnx/OnnxImport.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/ToolUtilities.h"
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
static cl::opt<bool> importOnnx("import-onnx", cl::desc("Import an ONNX model"),
                                cl::Required, cl::cat(category));
static cl::opt<float>
    labelSmoothing("label-smoothing",
                   cl::desc("Label smoothing of the appended loss"),
                   cl::init(0.0f), cl::cat(category));
static cl::opt<std::string>
    init("init",
         cl::desc("Parameter initializers: onnx (the model's initializers, the "
                  "default) or fresh (models/build_model.py's rules)"),
         cl::init("onnx"), cl::cat(category));
static cl::opt<bool> splitInputFile(
    "split-input-file",
    cl::desc("Import each chunk between '# -----' lines as its own model"),
    cl::cat(category));

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv, "Kiln model translator\n");
  if (init != "onnx" && init != "fresh") {
    llvm::errs() << "kiln-translate: --init must be onnx or fresh, not '"
                 << init << "'\n";
    return 1;
  }
  kiln::OnnxImportOptions options;
  options.labelSmoothing = labelSmoothing;
  options.freshInit = init == "fresh";
  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> file = mlir::openInputFile(input, &error);
  if (!file) {
    llvm::errs() << "kiln-translate: " << error << "\n";
    return 1;
  }
  std::unique_ptr<llvm::ToolOutputFile> out =
      mlir::openOutputFile(output, &error);
  if (!out) {
    llvm::errs() << "kiln-translate: " << error << "\n";
    return 1;
  }
  // A fresh context per model, so that one chunk's error leaves the next
  // unaffected.
  auto importOne = [&](std::unique_ptr<llvm::MemoryBuffer> buffer,
                       llvm::raw_ostream &os) -> llvm::LogicalResult {
    mlir::MLIRContext context;
    llvm::SourceMgr sourceMgr;
    mlir::SourceMgrDiagnosticHandler handler(sourceMgr, &context);
    // Errors and the module name go by the file, not the chunk.
    std::unique_ptr<llvm::MemoryBuffer> named =
        llvm::MemoryBuffer::getMemBuffer(buffer->getBuffer(), input);
    mlir::OwningOpRef<mlir::ModuleOp> module =
        kiln::importOnnx(*named, context, options);
    if (!module)
      return mlir::failure();
    module->print(os);
    os << "\n";
    return mlir::success();
  };
  llvm::LogicalResult result =
      splitInputFile
          ? mlir::splitAndProcessBuffer(std::move(file), importOne, out->os(),
                                        "# -----", "// -----")
          : importOne(std::move(file), out->os());
  if (mlir::failed(result))
    return 1;
  out->keep();
  return 0;
}
