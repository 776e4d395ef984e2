//===- Driver.cpp - kilnc: model file to training executable --------------===//

#include "compiler/Driver/Driver.h"

#include "compiler/InitAll.h"
#include "compiler/Target/X86/X86Target.h"
#include "passes/Analysis/ModelStats.h"
#include "passes/Conversion/KilnToLinalg/KilnToLinalg.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>

#ifdef KILN_HAVE_RUNTIME
#include "link_config.h"
#endif

using namespace mlir;

namespace kiln {

namespace {
/// Wall time of each stage, printed with --stats.
class StageTimer {
public:
  explicit StageTimer(bool enabled) : enabled(enabled) {}
  void done(llvm::StringRef stage) {
    auto now = std::chrono::steady_clock::now();
    if (enabled)
      llvm::errs() << llvm::format("kilnc: %-28s %8.3f s\n", stage.str().c_str(),
                                   std::chrono::duration<double>(now - last).count());
    last = now;
  }

private:
  bool enabled;
  std::chrono::steady_clock::time_point last = std::chrono::steady_clock::now();
};
} // namespace

/// Writes `print` to the output file (or stdout for "-").
static int writeOutput(const std::string &path,
                       llvm::function_ref<void(llvm::raw_ostream &)> print) {
  std::string error;
  auto file = openOutputFile(path.empty() ? "-" : path, &error);
  if (!file) {
    llvm::errs() << "kilnc: " << error << "\n";
    return 1;
  }
  print(file->os());
  file->keep();
  return 0;
}

static void printPlanSummary(ModuleOp module) {
  auto attr = module->getAttrOfType<StringAttr>(kManifestAttr);
  if (!attr)
    return;
  llvm::Expected<llvm::json::Value> manifest = llvm::json::parse(attr.getValue());
  if (!manifest) {
    llvm::consumeError(manifest.takeError());
    return;
  }
  const llvm::json::Object *root = manifest->getAsObject();
  auto mib = [](std::optional<int64_t> bytes) {
    return double(bytes.value_or(0)) / (1 << 20);
  };
  llvm::errs() << llvm::format(
      "kilnc: memory plan: arena %.1f MiB (variables %.1f MiB)\n",
      mib(root->getInteger("arena_bytes")),
      mib(root->getInteger("persistent_bytes")));
  if (const llvm::json::Object *functions = root->getObject("functions"))
    for (const auto &[name, value] : *functions) {
      const llvm::json::Object *f = value.getAsObject();
      const llvm::json::Array *scratch = f->getArray("scratch");
      int64_t used = (*scratch)[1].getAsInteger().value_or(0) -
                     (*scratch)[0].getAsInteger().value_or(0);
      llvm::errs() << llvm::format(
          "kilnc:   %-5s scratch %.1f MiB (%.1f MiB without reuse)\n",
          name.str().c_str(), double(used) / (1 << 20),
          mib(f->getInteger("scratch_unplanned_bytes")));
    }
}

static LogicalResult runPasses(ModuleOp module,
                               llvm::function_ref<void(PassManager &)> fill) {
  PassManager pm(module.getContext());
  fill(pm);
  return pm.run(module);
}

/// Links the object with the runtime into an executable.
static int link(const std::string &object, const std::string &output) {
  llvm::ErrorOr<std::string> clang = llvm::sys::findProgramByName("clang++-22");
  if (!clang) {
    llvm::errs() << "kilnc: cannot find clang++-22 to link with\n";
    return 1;
  }
#ifdef KILN_HAVE_RUNTIME
  SmallVector<llvm::StringRef> args = {*clang, "-fuse-ld=lld", object, "-o",
                                       output, KILN_RT_LINK_ARGS};
#else
  (void)object;
  (void)output;
  llvm::errs() << "kilnc: this build has no runtime (KILN_BUILD_RUNTIME=OFF); "
                  "use --emit=obj\n";
  return 1;
#endif
  std::string error;
  int status = llvm::sys::ExecuteAndWait(*clang, args, std::nullopt, {}, 0, 0,
                                         &error);
  if (status != 0) {
    llvm::errs() << "kilnc: linking " << output << " failed"
                 << (error.empty() ? "" : ": " + error) << "\n";
    return 1;
  }
  return 0;
}

int compile(const CompileOptions &options) {
  DialectRegistry registry;
  registerAllKilnDialects(registry);
  MLIRContext context(registry);
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  StageTimer timer(options.printStats);

  if (options.target != "x86") {
    llvm::errs() << "kilnc: target '" << options.target
                 << "' is not available yet (x86 is)\n";
    return 1;
  }
  if (options.precision != "fp32" && options.precision != "bf16") {
    llvm::errs() << "kilnc: unknown precision '" << options.precision
                 << "' (expected fp32 or bf16)\n";
    return 1;
  }
  if (options.batch <= 0) {
    llvm::errs() << "kilnc: --batch must be positive\n";
    return 1;
  }

  OwningOpRef<ModuleOp> module =
      parseSourceFile<ModuleOp>(options.input, sourceMgr, &context);
  if (!module)
    return 1;
  timer.done("parse and verify");
  if (options.emit == EmitStage::Kiln)
    return writeOutput(options.output, [&](auto &os) { module->print(os); });

  if (failed(runPasses(*module, [&](PassManager &pm) {
        pm.addPass(createKilnDeriveEval());
        if (options.precision == "bf16")
          pm.addPass(createKilnBf16());
        buildTrainStepPipeline(pm, *options.trainStep);
        pm.addNestedPass<func::FuncOp>(createKilnFoldCasts());
        if (options.fuse)
          pm.addNestedPass<func::FuncOp>(createKilnFuse());
      })))
    return 1;
  timer.done("autodiff and optimizer");
  if (options.printStats)
    printModelStats(computeModelStats(*module), llvm::errs(), /*perOp=*/false);
  if (options.emit == EmitStage::Train)
    return writeOutput(options.output, [&](auto &os) { module->print(os); });

  if (failed(runPasses(*module, [&](PassManager &pm) {
        KilnSpecializeBatchOptions batch;
        batch.batch = options.batch;
        pm.addPass(createKilnSpecializeBatch(batch));
        pm.addPass(createKilnLowerToLinalg());
      })))
    return 1;
  timer.done("memory plan and lowering");
  if (options.printStats)
    printPlanSummary(*module);
  if (options.emit == EmitStage::Linalg)
    return writeOutput(options.output, [&](auto &os) { module->print(os); });

  if (failed(runPasses(*module, buildLowerToLLVMPipeline)))
    return 1;
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateToLLVMIR(*module, llvmContext);
  if (!llvmModule) {
    llvm::errs() << "kilnc: translation to LLVM IR failed\n";
    return 1;
  }
  timer.done("lowering to LLVM IR");
  if (options.emit == EmitStage::LLVM)
    return writeOutput(options.output, [&](auto &os) { llvmModule->print(os, nullptr); });

  std::string object = options.emit == EmitStage::Object
                           ? options.output
                           : options.output + ".o";
  std::string error;
  if (!emitObjectFile(*llvmModule, options.cpu, object, error)) {
    llvm::errs() << "kilnc: " << error << "\n";
    return 1;
  }
  timer.done("LLVM -O3 and code generation");
  if (options.emit == EmitStage::Object)
    return 0;
  int status = link(object, options.output);
  llvm::sys::fs::remove(object);
  timer.done("link");
  return status;
}

} // namespace kiln
