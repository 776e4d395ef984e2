//===- Driver.cpp - kilnc: model file to training executable --------------===//

#include "compiler/Driver/Driver.h"

#include "compiler/Import/Onnx/OnnxImport.h"

#include "compiler/InitAll.h"
#include "compiler/Target/Systolic/ExportSaProgram.h"
#include "compiler/Target/X86/X86Target.h"
#include "dialects/Kiln/IR/KilnOps.h"
#include "passes/Analysis/ModelStats.h"
#include "passes/Conversion/KilnToLinalg/KilnToLinalg.h"
#include "passes/Optimizer/Optimizer.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cstdio>

#ifdef KILN_HAVE_RUNTIME
#include "link_config.h"
#endif
#ifdef KILN_HAVE_SIMHOST
#include "simhost_link_config.h"
#endif
#ifdef KILN_HAVE_SMPI_RUNTIME
#include "smpi_link_config.h"
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

/// Runs the passes `fill` adds, with MLIR's pass-manager flags given to kilnc
/// (--mlir-timing, --mlir-pass-statistics, ...): each stage reports its own.
static LogicalResult runPasses(ModuleOp module,
                               llvm::function_ref<void(PassManager &)> fill) {
  PassManager pm(module.getContext());
  if (failed(applyPassManagerCLOptions(pm)))
    return failure();
  applyDefaultTimingPassManagerCLOptions(pm);
  fill(pm);
  return pm.run(module);
}

/// Links the object with a runtime's archives (`runtimeArgs`, the link line
/// of link_config.h or simhost_link_config.h) into an executable.
static int link(const std::string &object, const std::string &output,
                llvm::ArrayRef<llvm::StringRef> runtimeArgs) {
  llvm::ErrorOr<std::string> clang = llvm::sys::findProgramByName("clang++-22");
  if (!clang) {
    llvm::errs() << "kilnc: cannot find clang++-22 to link with\n";
    return 1;
  }
  SmallVector<llvm::StringRef> args = {*clang, "-fuse-ld=lld", object, "-o",
                                       output};
  args.append(runtimeArgs.begin(), runtimeArgs.end());
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

/// The x86 runtime's link line (runtime/exec), or with `smpi` the shared
/// object smpirun loads (runtime/smpi).
static int linkX86(const std::string &object, const std::string &output,
                   bool smpi) {
  if (smpi) {
#ifdef KILN_HAVE_SMPI_RUNTIME
    return link(object, output, {"-shared", KILN_RT_SMPI_LINK_ARGS});
#else
    llvm::errs() << "kilnc: --smpi: this build has no runtime for SimGrid's "
                    "SMPI (KILN_BUILD_RUNTIME=OFF)\n";
    return 1;
#endif
  }
#ifdef KILN_HAVE_RUNTIME
  return link(object, output, {KILN_RT_LINK_ARGS});
#else
  (void)object;
  (void)output;
  llvm::errs() << "kilnc: this build has no runtime (KILN_BUILD_RUNTIME=OFF); "
                  "use --emit=obj\n";
  return 1;
#endif
}

//===----------------------------------------------------------------------===//
// The systolic target
//===----------------------------------------------------------------------===//

/// The info JSON of kiln/rt/sa_program.h: which program buffers are the
/// step's images, labels, step counter, loss, logits and learning rate (the
/// conversion binds arguments and results by position), and the schedule's
/// slot names. Fails if the training step does not have the shape the host
/// runtime drives.
static FailureOr<std::string> describeProgram(ModuleOp module,
                                              const CompileOptions &options) {
  auto step = module.lookupSymbol<func::FuncOp>("train_step");
  if (!step)
    return module.emitError("kilnc: no train_step function"), failure();
  llvm::json::Object inputs, outputs;
  FunctionType type = step.getFunctionType();
  for (unsigned i = 0; i < type.getNumInputs(); ++i) {
    auto t = dyn_cast<RankedTensorType>(type.getInput(i));
    std::string binding = "arg" + std::to_string(i);
    if (step.getArgAttr(i, "kiln.step"))
      inputs["step"] = binding;
    else if (t && t.getRank() == 4)
      inputs["images"] = binding;
    else if (t && t.getRank() == 1 && t.getElementType().isInteger(32))
      inputs["labels"] = binding;
  }
  for (unsigned i = 0; i < type.getNumResults(); ++i) {
    auto t = dyn_cast<RankedTensorType>(type.getResult(i));
    std::string binding = "result" + std::to_string(i);
    if (step.getResultAttr(i, "kiln.learning_rate"))
      outputs["learning_rate"] = binding;
    else if (t && t.getRank() == 0 && !outputs.get("loss"))
      outputs["loss"] = binding;
    else if (t && t.getRank() == 2)
      outputs["logits"] = binding;
  }
  for (const char *name : {"images", "labels", "step"})
    if (!inputs.get(name))
      return step.emitError("kilnc: the training step has no ")
                 << name << " input for the systolic host runtime",
             failure();
  for (const char *name : {"loss", "logits", "learning_rate"})
    if (!outputs.get(name))
      return step.emitError("kilnc: the training step has no ")
                 << name << " result for the systolic host runtime",
             failure();
  llvm::json::Object info{
      {"model", module.getSymName() ? *module.getSymName() : "model"},
      {"batch", options.batch},
      {"precision", options.precision},
      {"profile", options.systolicProfile},
      {"inputs", std::move(inputs)},
      {"outputs", std::move(outputs)},
      // Only the training step is lowered to the device (the conversion has
      // no inference batch norm yet).
      {"eval", false}};
  step.walk([&](LearningRateOp op) {
    info["schedule"] = scheduleManifestEntry(op);
  });
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::json::Value(std::move(info));
  return text;
}

/// An LLVM module defining kiln_sa_program_v1 (kiln/rt/sa_program.h): the
/// program's bytes, their size and the info JSON.
static std::unique_ptr<llvm::Module>
embedProgram(llvm::LLVMContext &context, llvm::ArrayRef<uint8_t> bytes,
             llvm::StringRef info) {
  auto module = std::make_unique<llvm::Module>("kiln_sa_program", context);
  auto *data = new llvm::GlobalVariable(
      *module, llvm::ArrayType::get(llvm::Type::getInt8Ty(context), bytes.size()),
      /*isConstant=*/true, llvm::GlobalValue::PrivateLinkage,
      llvm::ConstantDataArray::get(context, bytes), "kiln_sa_program_v1.data");
  data->setAlignment(llvm::Align(16)); // FlatBuffers reads scalars in place
  llvm::Constant *infoInit = llvm::ConstantDataArray::getString(context, info);
  auto *infoText = new llvm::GlobalVariable(
      *module, infoInit->getType(), /*isConstant=*/true,
      llvm::GlobalValue::PrivateLinkage, infoInit, "kiln_sa_program_v1.info");
  auto *i32 = llvm::Type::getInt32Ty(context);
  auto *i64 = llvm::Type::getInt64Ty(context);
  auto *ptr = llvm::PointerType::getUnqual(context);
  auto *type = llvm::StructType::create(context, {i32, i32, ptr, i64, ptr},
                                        "kiln_rt_sa_program_v1_t");
  llvm::Constant *fields[] = {
      llvm::ConstantInt::get(i32, 1), // KILN_RT_SA_PROGRAM_ABI_VERSION
      llvm::ConstantInt::get(i32, 0), data,
      llvm::ConstantInt::get(i64, bytes.size()), infoText};
  new llvm::GlobalVariable(*module, type, /*isConstant=*/true,
                           llvm::GlobalValue::ExternalLinkage,
                           llvm::ConstantStruct::get(type, fields),
                           "kiln_sa_program_v1");
  return module;
}

/// The systolic back half: the training step (already built) to an sa
/// program, serialized, embedded in an object file and linked with the
/// simulator's host runtime.
static int compileSystolic(ModuleOp module, const CompileOptions &options,
                           StageTimer &timer) {
  FailureOr<std::string> info = describeProgram(module, options);
  if (failed(info))
    return 1;
  if (failed(runPasses(module, [&](PassManager &pm) {
        KilnSpecializeBatchOptions batch;
        batch.batch = options.batch;
        pm.addPass(createKilnSpecializeBatch(batch));
        KilnConvertToSaOptions sa;
        sa.profile = options.systolicProfile;
        pm.addPass(createKilnConvertToSa(sa));
      })))
    return 1;
  timer.done("kiln -> sa (tiling, planning)");
  if (options.emit == EmitStage::Sa)
    return writeOutput(options.output, [&](auto &os) { module->print(os); });

  FailureOr<std::unique_ptr<sim::Program>> program =
      sa::exportSaProgram(module, "kilnc");
  if (failed(program))
    return 1;
  std::vector<uint8_t> bytes = sim::serializeProgram(**program);
  timer.done("serialize the program");
  if (options.emit == EmitStage::Program) {
    if (options.output.empty() || options.output == "-") {
      llvm::errs() << "kilnc: --emit=ksap needs -o FILE\n";
      return 1;
    }
    kiln::Status saved = sim::saveProgram(**program, options.output);
    if (!saved.isOk()) {
      llvm::errs() << "kilnc: " << saved.message() << "\n";
      return 1;
    }
    return 0;
  }

  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      embedProgram(llvmContext, bytes, *info);
  if (options.emit == EmitStage::LLVM)
    return writeOutput(options.output,
                       [&](auto &os) { llvmModule->print(os, nullptr); });
  std::string object = options.emit == EmitStage::Object
                           ? options.output
                           : options.output + ".o";
  std::string error;
  if (!emitObjectFile(*llvmModule, options.cpu, object, error)) {
    llvm::errs() << "kilnc: " << error << "\n";
    return 1;
  }
  timer.done("object file");
  if (options.emit == EmitStage::Object)
    return 0;
#ifdef KILN_HAVE_SIMHOST
  int status = link(object, options.output, {KILN_SIMHOST_LINK_ARGS});
#else
  llvm::errs() << "kilnc: this build has no systolic host runtime "
                  "(KILN_BUILD_RUNTIME=OFF); use --emit=obj or --emit=ksap\n";
  int status = 1;
#endif
  llvm::sys::fs::remove(object);
  timer.done("link");
  return status;
}

/// The x86 CPU can run what is asked of it: nChw16c needs AVX-512 (else the
/// layout mode becomes nhwc), bf16 needs avx512bw. Returns the layout mode.
static FailureOr<LayoutMode> checkX86Cpu(const CompileOptions &options,
                                         LayoutMode layoutMode) {
  std::string error;
  std::optional<bool> avx512 = cpuHasFeature(options.cpu, "avx512f", error);
  if (!avx512) {
    llvm::errs() << "kilnc: " << error << "\n";
    return failure();
  }
  // oneDNN 2.6 runs 16-channel blocks (nChw16c) with its JIT kernels on
  // AVX-512 CPUs only; elsewhere every such convolution falls back to its
  // reference kernel, hundreds of times slower than NHWC's AVX2 kernels.
  if (!*avx512 && layoutMode == LayoutMode::Blocked) {
    llvm::errs() << "kilnc: --layout=blocked (nChw16c) needs an AVX-512 "
                    "CPU and --cpu="
                 << options.cpu
                 << " has no avx512f; use --layout=nhwc or auto\n";
    return failure();
  }
  if (!*avx512)
    layoutMode = LayoutMode::Nhwc;
  // oneDNN 2.6 creates bf16 convolutions for avx512_core (F, BW, VL, DQ)
  // and newer only: elsewhere the executable could not even start.
  std::optional<bool> avx512bw = cpuHasFeature(options.cpu, "avx512bw", error);
  if (options.precision == "bf16" && avx512bw && !*avx512bw) {
    llvm::errs() << "kilnc: --precision=bf16 needs an AVX-512 CPU "
                    "(oneDNN's bf16 kernels need avx512bw) and --cpu="
                 << options.cpu
                 << " has none; compile with --precision=fp32 here, or "
                    "for an AVX-512 CPU with --cpu=NAME\n";
    return failure();
  }
  return layoutMode;
}

/// LLVM IR -> object file -> executable linked with the runtime (or just
/// the object, for --emit=obj).
static int emitX86Executable(llvm::Module &llvmModule,
                             const CompileOptions &options, StageTimer &timer) {
  std::string object = options.emit == EmitStage::Object
                           ? options.output
                           : options.output + ".o";
  std::string error;
  if (!emitObjectFile(llvmModule, options.cpu, object, error)) {
    llvm::errs() << "kilnc: " << error << "\n";
    return 1;
  }
  timer.done("LLVM -O3 and code generation");
  if (options.emit == EmitStage::Object)
    return 0;
  int status = linkX86(object, options.output, options.smpi);
  llvm::sys::fs::remove(object);
  timer.done("link");
  return status;
}

/// Checks the options that need no model. Returns the layout mode
/// --kiln-layout gets (the given one; nhwc on x86 CPUs without AVX-512), or
/// failure after printing why.
static FailureOr<LayoutMode> checkOptions(const CompileOptions &options) {
  if (options.target != "x86" && options.target != "systolic") {
    llvm::errs() << "kilnc: unknown target '" << options.target
                 << "' (expected x86 or systolic)\n";
    return failure();
  }
  bool systolic = options.target == "systolic";
  if (systolic && options.smpi) {
    llvm::errs() << "kilnc: --smpi links an x86 executable; a systolic "
                    "target's pod is simulated by kiln-comm-replay --program "
                    "(docs/scaling.md)\n";
    return failure();
  }
  if (systolic && options.emit == EmitStage::Linalg) {
    llvm::errs() << "kilnc: --emit=linalg is a stage of the x86 target; the "
                    "systolic target writes kiln, train, sa, ksap, llvm, obj "
                    "or exe\n";
    return failure();
  }
  if (!systolic &&
      (options.emit == EmitStage::Sa || options.emit == EmitStage::Program)) {
    llvm::errs() << "kilnc: --emit=sa and --emit=ksap need --target=systolic\n";
    return failure();
  }
  if (options.precision != "fp32" && options.precision != "bf16") {
    llvm::errs() << "kilnc: unknown precision '" << options.precision
                 << "' (expected fp32 or bf16)\n";
    return failure();
  }
  std::optional<LayoutMode> layoutMode =
      llvm::StringSwitch<std::optional<LayoutMode>>(options.layout)
          .Case("auto", LayoutMode::Auto)
          .Case("nhwc", LayoutMode::Nhwc)
          .Case("blocked", LayoutMode::Blocked)
          .Default(std::nullopt);
  if (!layoutMode) {
    llvm::errs() << "kilnc: unknown layout '" << options.layout
                 << "' (expected auto, nhwc or blocked)\n";
    return failure();
  }
  // The input pipeline's limit (kiln_rt_dataset_config_t.batch_size).
  constexpr int64_t kMaxBatch = int64_t(1) << 20;
  if (options.batch <= 0 || options.batch > kMaxBatch) {
    llvm::errs() << "kilnc: --batch must be in 1.." << kMaxBatch << ", got "
                 << options.batch << "\n";
    return failure();
  }
  if (systolic)
    return *layoutMode;
  return checkX86Cpu(options, *layoutMode);
}

/// The model file (MLIR or ONNX), parsed and verified; null after an error.
static OwningOpRef<ModuleOp> loadModel(const CompileOptions &options,
                                       MLIRContext &context,
                                       llvm::SourceMgr &sourceMgr) {
  OwningOpRef<ModuleOp> module;
  if (isOnnxFile(options.input)) {
    OnnxImportOptions onnx;
    onnx.freshInit = options.onnxFreshInit;
    module = importOnnxFile(options.input, context, onnx);
  } else {
    module = parseSourceFile<ModuleOp>(options.input, sourceMgr, &context);
  }
  if (module && options.dropoutSeed) {
    IntegerAttr seed = Builder(&context).getI64IntegerAttr(
        static_cast<int64_t>(*options.dropoutSeed));
    module->walk([&](DropoutOp op) { op.setSeedAttr(seed); });
  }
  return module;
}

/// The batch-norm momentum is the model's (build_model.py --bn-momentum),
/// so a recipe can only check it.
static LogicalResult checkRecipeMomentum(ModuleOp module,
                                         const Recipe &recipe) {
  float expected = float(recipe.batchNormMomentum);
  WalkResult checked = module->walk([&](BatchNormTrainOp bn) {
    if (bn.getMomentum().convertToFloat() == expected)
      return WalkResult::advance();
    auto text = [](double v) {
      char buffer[32];
      std::snprintf(buffer, sizeof(buffer), "%g", v);
      return std::string(buffer);
    };
    std::string want = text(recipe.batchNormMomentum);
    bn.emitError("kilnc: --recipe=")
        << recipe.name << " uses batch-norm momentum " << want
        << ", this batch norm has " << text(bn.getMomentum().convertToFloat())
        << "; build the model with models/build_model.py --bn-momentum "
        << want;
    return WalkResult::interrupt();
  });
  return failure(checked.wasInterrupted());
}

/// Model -> training and evaluation steps, with the target's precision,
/// fusion and layout passes.
static LogicalResult buildSteps(ModuleOp module, const CompileOptions &options,
                                LayoutMode layoutMode) {
  bool systolic = options.target == "systolic";
  return runPasses(module, [&](PassManager &pm) {
    pm.addPass(createKilnDeriveEval());
    if (options.precision == "bf16")
      pm.addPass(createKilnBf16());
    buildTrainStepPipeline(pm, *options.trainStep);
    // The systolic program reads the f32 weights through their casts
    // and rounds them on the device.
    if (options.precision == "bf16" && !systolic)
      pm.addPass(createKilnBf16WeightCopies());
    pm.addNestedPass<func::FuncOp>(createKilnFoldCasts());
    // kiln-convert-to-sa lowers batch norm and relu as separate ops
    // (the device's vector unit runs them back to back on chip).
    if (options.fuse && !systolic) {
      KilnFuseOptions fuse;
      fuse.convBatchNorm = options.fuseConvBatchNorm;
      fuse.convBatchNormTrain = options.fuseConvBatchNormTrain;
      pm.addNestedPass<func::FuncOp>(createKilnFuse(fuse));
    }
    // Layouts are the x86 library's business; the systolic planner
    // chooses its own tiling.
    if (!systolic) {
      KilnLayoutOptions layout;
      layout.mode = layoutMode;
      pm.addNestedPass<func::FuncOp>(createKilnLayout(layout));
    }
  });
}

/// The x86 stages after the training step: memory plan and lowering, LLVM
/// IR, object file, executable (as far as --emit asks).
static int compileX86(ModuleOp module, const CompileOptions &options,
                      StageTimer &timer) {
  if (failed(runPasses(module, [&](PassManager &pm) {
        KilnSpecializeBatchOptions batch;
        batch.batch = options.batch;
        pm.addPass(createKilnSpecializeBatch(batch));
        pm.addPass(createKilnLowerToLinalg());
      })))
    return 1;
  timer.done("memory plan and lowering");
  if (options.printStats)
    printPlanSummary(module);
  if (options.emit == EmitStage::Linalg)
    return writeOutput(options.output, [&](auto &os) { module->print(os); });

  if (failed(runPasses(module, buildLowerToLLVMPipeline)))
    return 1;
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateToLLVMIR(module, llvmContext);
  if (!llvmModule) {
    llvm::errs() << "kilnc: translation to LLVM IR failed\n";
    return 1;
  }
  releaseInitialValues(module);
  timer.done("lowering to LLVM IR");
  if (options.emit == EmitStage::LLVM)
    return writeOutput(options.output, [&](auto &os) { llvmModule->print(os, nullptr); });
  return emitX86Executable(*llvmModule, options, timer);
}

int compile(const CompileOptions &options) {
  DialectRegistry registry;
  registerAllKilnDialects(registry);
  MLIRContext context(registry);
  // An error names the op by file, line and column in the model; the op
  // printed after it (MLIR's default) would be the whole module for errors
  // on the module, hundreds of lines of a half-compiled model.
  context.printOpOnDiagnostic(false);
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  StageTimer timer(options.printStats);

  FailureOr<LayoutMode> layoutMode = checkOptions(options);
  if (failed(layoutMode))
    return 1;
  OwningOpRef<ModuleOp> module = loadModel(options, context, sourceMgr);
  if (!module)
    return 1;
  timer.done("parse and verify");
  if (options.recipe && failed(checkRecipeMomentum(*module, *options.recipe)))
    return 1;
  if (options.emit == EmitStage::Kiln)
    return writeOutput(options.output, [&](auto &os) { module->print(os); });

  if (failed(buildSteps(*module, options, *layoutMode)))
    return 1;
  timer.done("autodiff and optimizer");
  if (options.printStats)
    printModelStats(computeModelStats(*module), llvm::errs(), /*perOp=*/false);
  if (options.emit == EmitStage::Train)
    return writeOutput(options.output, [&](auto &os) { module->print(os); });
  if (options.target == "systolic")
    return compileSystolic(*module, options, timer);
  return compileX86(*module, options, timer);
}

} // namespace kiln
