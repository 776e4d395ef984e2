//===- kiln-translate.cpp - Models in other formats to kiln IR ------------===//
//
// kiln-translate --import-onnx MODEL.onnx [-o FILE] [--label-smoothing=F]
//                [--init=onnx|fresh] [--split-input-file]
//                [--elide-values-larger-than=BYTES]
// kiln-translate --export-onnx MODEL.{mlir,onnx} [--weights=CKPT.safetensors]
//                [--seed=N] [--onnx-text] [--import-onnx] [--split-input-file]
//                -o OUT.onnx
// kiln-translate --export-sa-program SA.mlir [-o FILE.ksap]
//                [--split-input-file]
//
// --import-onnx prints the imported model as kiln IR (what kilnc compiles
// from an .onnx file). The model is a serialized ModelProto or ONNX's textual
// syntax; --split-input-file imports each chunk between '# -----' lines on
// its own (lit tests, as kiln-opt's). docs/onnx.md describes the import.
//
// --export-onnx writes the inference graph of a model (kiln IR, or an ONNX
// file imported first) as an ONNX model with the weights of a checkpoint or
// the model's initial values (docs/onnx.md "Exporting"); with --import-onnx
// the input is ONNX whatever its name.
//
// The translations out of MLIR are registered by the compiler
// (mlir::TranslateFromMLIRRegistration): --export-sa-program writes a
// module's sa.program as the program file kiln-sim runs (docs/systolic.md);
// --split-input-file splits MLIR input at '// -----' lines.
//
//===----------------------------------------------------------------------===//

#include "compiler/Export/Onnx/OnnxExport.h"
#include "compiler/Import/Onnx/OnnxImport.h"
#include "compiler/Target/Systolic/ExportSaProgram.h"

#include "dialects/Kiln/IR/KilnDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/ToolUtilities.h"
#include "mlir/Tools/mlir-translate/Translation.h"
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
static cl::opt<bool> importOnnx(
    "import-onnx",
    cl::desc("Import an ONNX model (with --export-onnx: the input is ONNX "
             "whatever its name)"),
    cl::cat(category));
static cl::opt<bool> exportOnnx(
    "export-onnx",
    cl::desc("Export a model's inference graph (kiln IR or an ONNX file) as "
             "an ONNX model"),
    cl::cat(category));
static cl::opt<std::string> weights(
    "weights",
    cl::desc("With --export-onnx: the variables' values, a safetensors file "
             "in Kiln's layouts (a checkpoint); default: the model's own "
             "initial values"),
    cl::value_desc("file"), cl::cat(category));
static cl::opt<uint64_t>
    seed("seed",
         cl::desc("With --export-onnx and no --weights: the seed of the random "
                  "initializers, as the executable's and kiln-run's --seed"),
         cl::init(0), cl::cat(category));
static cl::opt<bool> onnxText(
    "onnx-text",
    cl::desc("With --export-onnx: write ONNX's textual syntax instead of the "
             "serialized ModelProto"),
    cl::cat(category));
static cl::opt<float>
    labelSmoothing("label-smoothing",
                   cl::desc("Label smoothing of the appended loss"),
                   cl::init(0.0f), cl::cat(category));
static cl::opt<std::string>
    init("init",
         cl::desc("Parameter initializers: onnx (the model's initializers, the "
                  "default) or fresh (models/build_model.py's rules)"),
         cl::init("onnx"), cl::cat(category));
static cl::opt<int64_t> elideValues(
    "elide-values-larger-than",
    cl::desc("Leave initial values (dense_resource blobs) of more than this "
             "many bytes out of the printed IR, which then shows their names "
             "and types but does not compile; -1 prints every value"),
    cl::value_desc("bytes"), cl::init(64 << 10), cl::cat(category));
static cl::opt<bool> splitInputFile(
    "split-input-file",
    cl::desc("Translate each chunk between '# -----' lines (ONNX input) or "
             "'// -----' lines (MLIR input) as its own model"),
    cl::cat(category));

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  kiln::sa::registerExportSaProgramTranslation();
  // Built after the registrations, which its parser lists as flags.
  static cl::opt<const mlir::Translation *, false, mlir::TranslationParser>
      exportTranslation(cl::desc("Translations out of MLIR:"),
                        cl::cat(category));
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv, "Kiln model translator\n");
  // --import-onnx with --export-onnx says the input is ONNX whatever its
  // name (ONNX's textual syntax in a lit test).
  if ((importOnnx || exportOnnx) == (exportTranslation != nullptr)) {
    llvm::errs() << "kiln-translate: give one of --import-onnx, --export-onnx "
                    "and --export-sa-program\n";
    return 1;
  }
  if (!exportOnnx && (!weights.empty() || onnxText)) {
    llvm::errs() << "kiln-translate: --weights and --onnx-text go with "
                    "--export-onnx\n";
    return 1;
  }
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
    // A large model's values would print as hundreds of MB of hex.
    mlir::OpPrintingFlags flags;
    if (elideValues >= 0)
      flags.elideLargeResourceString(2 * elideValues + 10); // "0x", alignment
    module->print(os, flags);
    os << "\n";
    return mlir::success();
  };
  // A translation out of MLIR parses the chunk itself (with the dialects it
  // registers) in a fresh context, as for imports.
  auto exportOne = [&](std::unique_ptr<llvm::MemoryBuffer> buffer,
                       llvm::raw_ostream &os) -> llvm::LogicalResult {
    mlir::MLIRContext context;
    auto sourceMgr = std::make_shared<llvm::SourceMgr>();
    sourceMgr->AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
    mlir::SourceMgrDiagnosticHandler handler(*sourceMgr, &context);
    return (*exportTranslation)(sourceMgr, os, &context);
  };
  // The model, parsed as kiln IR or imported from ONNX, then exported.
  auto exportOnnxOne = [&](std::unique_ptr<llvm::MemoryBuffer> buffer,
                           llvm::raw_ostream &os) -> llvm::LogicalResult {
    mlir::MLIRContext context;
    context.loadDialect<kiln::KilnDialect, mlir::func::FuncDialect,
                        mlir::arith::ArithDialect>();
    // An error names the op and its location; the op's generic form after
    // it would only repeat the line.
    context.printOpOnDiagnostic(false);
    llvm::SourceMgr sourceMgr;
    mlir::SourceMgrDiagnosticHandler handler(sourceMgr, &context);
    mlir::OwningOpRef<mlir::ModuleOp> module;
    if (importOnnx || kiln::isOnnxFile(input)) {
      std::unique_ptr<llvm::MemoryBuffer> named =
          llvm::MemoryBuffer::getMemBuffer(buffer->getBuffer(), input);
      module = kiln::importOnnx(*named, context, options);
    } else {
      sourceMgr.AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
      module = mlir::parseSourceFile<mlir::ModuleOp>(sourceMgr, &context);
    }
    if (!module)
      return mlir::failure();
    kiln::OnnxExportOptions exportOptions;
    exportOptions.weights = weights;
    exportOptions.seed = seed;
    exportOptions.text = onnxText;
    return kiln::exportOnnx(*module, exportOptions, os);
  };
  llvm::LogicalResult result = mlir::failure();
  if (exportOnnx) {
    const char *marker =
        importOnnx || kiln::isOnnxFile(input) ? "# -----" : "// -----";
    result = splitInputFile
                 ? mlir::splitAndProcessBuffer(std::move(file), exportOnnxOne,
                                               out->os(), marker, marker)
                 : exportOnnxOne(std::move(file), out->os());
  } else if (importOnnx) {
    result = splitInputFile
                 ? mlir::splitAndProcessBuffer(std::move(file), importOne,
                                               out->os(), "# -----", "// -----")
                 : importOne(std::move(file), out->os());
  } else {
    result = splitInputFile ? mlir::splitAndProcessBuffer(std::move(file),
                                                          exportOne, out->os())
                            : exportOne(std::move(file), out->os());
  }
  if (mlir::failed(result))
    return 1;
  out->keep();
  return 0;
}
