//===- X86Target.cpp - From lowered steps to an x86 object file -----------===//

#include "compiler/Target/X86/X86Target.h"

#include "compiler/Target/X86/ManifestBuffer.h"
#include "dialects/Kiln/IR/InitialValue.h"

#include "passes/Conversion/KilnToLinalg/KilnToLinalg.h"
#include "passes/Passes.h"

#include "kiln/rt/cpu_features.h"
#include "kiln/rt/model.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVM.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVM.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"

using namespace mlir;

namespace kiln {

void registerX86TargetDialects(DialectRegistry &registry) {
  registry.insert<affine::AffineDialect, cf::ControlFlowDialect,
                  ub::UBDialect>();
  registerConvertFuncToLLVMInterface(registry);
  arith::registerConvertArithToLLVMInterface(registry);
  cf::registerConvertControlFlowToLLVMInterface(registry);
  registerConvertMathToLLVMInterface(registry);
  registerConvertMemRefToLLVMInterface(registry);
  index::registerConvertIndexToLLVMInterface(registry);
  ub::registerConvertUBToLLVMInterface(registry);
  // vector<16xT> elements of nChw16c loops (broadcasts, splat constants).
  vector::registerConvertVectorToLLVMInterface(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
}

void buildLowerToLLVMPipeline(OpPassManager &pm) {
  // Parallel dimensions become scf.parallel, which runs on the thread pool.
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToParallelLoopsPass());
  pm.addPass(createKilnOutlineParallelLoops());
  pm.addPass(createLowerAffinePass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  // expand-strided-metadata introduces affine.apply: lower it again.
  pm.addPass(createLowerAffinePass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  // Per function: the steps are short sequences of calls and the loops live
  // in small kernels, so this stays fast (and runs functions in parallel).
  pm.addNestedPass<func::FuncOp>(createSCFToControlFlowPass());
  pm.addPass(createConvertToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCanonicalizerPass());
}

void registerX86Pipelines() {
  PassPipelineRegistration<>(
      "kiln-lower-to-llvm",
      "Lowers the output of --kiln-lower-to-linalg to the LLVM dialect",
      buildLowerToLLVMPipeline);
}

std::unique_ptr<llvm::Module> translateToLLVMIR(ModuleOp module,
                                                llvm::LLVMContext &context) {
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, context, "kiln_model");
  if (!llvmModule)
    return nullptr;
  // Kernels stay functions: inlining them back would rebuild one huge step
  // for the optimizer to chew on, for no gain (each runs a whole loop nest).
  for (llvm::Function &fn : *llvmModule)
    if (fn.getName().starts_with("kiln_kernel_"))
      fn.addFnAttr(llvm::Attribute::NoInline);
  // The manifest, as the FlatBuffers buffer of its schema behind an accessor
  // that also gives its size (model.h).
  flatbuffers::DetachedBuffer manifest;
  if (auto attr = module->getAttrOfType<StringAttr>(kManifestAttr)) {
    // The initial values the manifest refers to ("data"): raw bytes of the
    // attributes in kiln.initial_values, not copied until the builder's.
    auto values = module->getAttrOfType<DictionaryAttr>(kInitialValuesAttr);
    auto lookup = [&](StringRef name) -> llvm::Expected<ArrayRef<char>> {
      auto value =
          values ? dyn_cast_or_null<ElementsAttr>(values.get(name)) : nullptr;
      if (!value)
        return llvm::createStringError(
            ("no initial value under this name in " + kInitialValuesAttr)
                .str());
      return getInitialValueBytes(value);
    };
    llvm::Expected<flatbuffers::DetachedBuffer> bytes =
        buildManifestBuffer(attr.getValue(), lookup);
    if (!bytes) {
      // Not module.emitError: its note would print the whole module.
      emitError(module.getLoc(), "kiln.manifest: ")
          << llvm::toString(bytes.takeError());
      return nullptr;
    }
    manifest = std::move(*bytes);
  }
  // getRaw: one copy of the bytes (LLVM owns its constants), not one
  // ConstantInt per byte.
  auto *data = llvm::ConstantDataArray::getRaw(
      StringRef(reinterpret_cast<const char *>(manifest.data()),
                manifest.size()),
      manifest.size(), llvm::Type::getInt8Ty(context));
  auto *global = new llvm::GlobalVariable(
      *llvmModule, data->getType(), /*isConstant=*/true,
      llvm::GlobalValue::PrivateLinkage, data, "kiln_model_manifest_data");
  // FlatBuffers reads scalars in place: align as the largest (8 bytes).
  global->setAlignment(llvm::Align(8));
  auto *ptrType = llvm::PointerType::get(context, 0);
  auto *fnType = llvm::FunctionType::get(ptrType, {ptrType},
                                         /*isVarArg=*/false);
  auto *fn = llvm::Function::Create(fnType, llvm::GlobalValue::ExternalLinkage,
                                    KILN_RT_MODEL_MANIFEST_SYMBOL, *llvmModule);
  llvm::IRBuilder<> builder(llvm::BasicBlock::Create(context, "entry", fn));
  builder.CreateStore(builder.getInt64(manifest.size()), fn->getArg(0));
  builder.CreateRet(global);
  return llvmModule;
}

void releaseInitialValues(ModuleOp module) {
  auto values = module->getAttrOfType<DictionaryAttr>(kInitialValuesAttr);
  if (!values)
    return;
  for (NamedAttribute entry : values)
    if (auto resource = dyn_cast<DenseResourceElementsAttr>(entry.getValue()))
      if (auto *blob = resource.getRawHandle().getResource())
        blob->setBlob(AsmResourceBlob());
}

/// kiln_model_target (model.h): the CPU the code is generated for and the
/// extensions of cpu_features.h it has, which the runtime checks before it
/// runs any of the code.
static void addTargetDescription(llvm::Module &module,
                                 const llvm::TargetMachine &machine) {
  const llvm::MCSubtargetInfo *info = machine.getMCSubtargetInfo();
  std::string json =
      "{\"cpu\": \"" + machine.getTargetCPU().str() + "\", \"features\": [";
  llvm::StringRef separator = "";
#define KILN_RECORD_FEATURE(feature)                                           \
  if (info->checkFeatures("+" feature)) {                                      \
    json += separator.str() + "\"" feature "\"";                               \
    separator = ", ";                                                          \
  }
  KILN_CPU_FEATURES(KILN_RECORD_FEATURE)
#undef KILN_RECORD_FEATURE
  json += "]}";

  llvm::LLVMContext &context = module.getContext();
  auto *data = llvm::ConstantDataArray::getString(context, json, true);
  auto *global = new llvm::GlobalVariable(
      module, data->getType(), /*isConstant=*/true,
      llvm::GlobalValue::PrivateLinkage, data, "kiln_model_target_data");
  auto *fnType = llvm::FunctionType::get(llvm::PointerType::get(context, 0),
                                         /*isVarArg=*/false);
  auto *fn = llvm::Function::Create(fnType, llvm::GlobalValue::ExternalLinkage,
                                    KILN_RT_MODEL_TARGET_SYMBOL, module);
  llvm::IRBuilder<> builder(llvm::BasicBlock::Create(context, "entry", fn));
  builder.CreateRet(global);
}

/// The target machine of `cpu` ("native": this host, with the features it
/// reports); null with `error` set for a name LLVM does not know.
static std::unique_ptr<llvm::TargetMachine>
createTargetMachine(llvm::StringRef cpu, std::string &error) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return nullptr;
  std::string cpuName =
      cpu == "native" ? llvm::sys::getHostCPUName().str() : cpu.str();
  // LLVM would only warn about an unknown name, then fail deep inside code
  // generation; its name is also recorded for the runtime (kiln_model_target).
  std::unique_ptr<llvm::MCSubtargetInfo> generic(
      target->createMCSubtargetInfo(triple, "x86-64", ""));
  if (!generic || !generic->isCPUStringValid(cpuName)) {
    error = "--cpu=" + cpuName +
            ": not a CPU LLVM knows (`llc-22 -mcpu=help` lists them; "
            "native, the default, is this machine's)";
    return nullptr;
  }
  std::string features;
  if (cpu == "native") {
    llvm::SubtargetFeatures list;
    for (const auto &[name, enabled] : llvm::sys::getHostCPUFeatures())
      list.AddFeature(name, enabled);
    features = list.getString();
  }
  llvm::TargetOptions options;
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, cpuName, features, options, llvm::Reloc::PIC_, std::nullopt,
      llvm::CodeGenOptLevel::Aggressive));
  if (!machine)
    error = "cannot create a target machine for CPU '" + cpuName + "'";
  return machine;
}

std::optional<bool> cpuHasFeature(llvm::StringRef cpu, llvm::StringRef feature,
                                  std::string &error) {
  std::unique_ptr<llvm::TargetMachine> machine =
      createTargetMachine(cpu, error);
  if (!machine)
    return std::nullopt;
  return machine->getMCSubtargetInfo()->checkFeatures(("+" + feature).str());
}

bool emitObjectFile(llvm::Module &module, llvm::StringRef cpu,
                    llvm::StringRef path, std::string &error) {
  std::unique_ptr<llvm::TargetMachine> machine =
      createTargetMachine(cpu, error);
  if (!machine)
    return false;
  llvm::Triple triple = machine->getTargetTriple();
  std::string cpuName = machine->getTargetCPU().str();
  std::string features = machine->getTargetFeatureString().str();
  module.setTargetTriple(triple);
  module.setDataLayout(machine->createDataLayout());
  addTargetDescription(module, *machine);
  for (llvm::Function &fn : module)
    if (!fn.isDeclaration()) {
      fn.addFnAttr("target-cpu", cpuName);
      if (!features.empty())
        fn.addFnAttr("target-features", features);
    }

  // -O3 with the target's cost model: this is where the loops vectorize.
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder builder(machine.get());
  builder.registerModuleAnalyses(mam);
  builder.registerCGSCCAnalyses(cgam);
  builder.registerFunctionAnalyses(fam);
  builder.registerLoopAnalyses(lam);
  builder.crossRegisterProxies(lam, fam, cgam, mam);
  builder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3)
      .run(module, mam);

  std::error_code ec;
  llvm::raw_fd_ostream out(path, ec, llvm::sys::fs::OF_None);
  if (ec) {
    error = "cannot write '" + path.str() + "': " + ec.message();
    return false;
  }
  llvm::legacy::PassManager codegen;
  if (machine->addPassesToEmitFile(codegen, out, nullptr,
                                   llvm::CodeGenFileType::ObjectFile)) {
    error = "the target cannot emit object files";
    return false;
  }
  codegen.run(module);
  return true;
}

} // namespace kiln
