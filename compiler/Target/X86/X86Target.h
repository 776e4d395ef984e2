//===- X86Target.h - From lowered steps to an x86 object file ---*- C++ -*-===//

#ifndef KILN_COMPILER_TARGET_X86_X86TARGET_H
#define KILN_COMPILER_TARGET_X86_X86TARGET_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/IR/Module.h"

#include <memory>
#include <optional>
#include <string>

namespace kiln {

/// Adds the dialects and interfaces the x86 lowering needs to `registry`.
void registerX86TargetDialects(mlir::DialectRegistry &registry);

/// Lowers the output of --kiln-lower-to-linalg to the LLVM dialect: loops,
/// strided metadata, then every dialect to LLVM.
void buildLowerToLLVMPipeline(mlir::OpPassManager &pm);

/// Registers the pipeline above as `kiln-lower-to-llvm`.
void registerX86Pipelines();

/// Translates an LLVM-dialect module to LLVM IR and adds the manifest
/// accessor `kiln_model_manifest()` from the module's kiln.manifest.
std::unique_ptr<llvm::Module> translateToLLVMIR(mlir::ModuleOp module,
                                                llvm::LLVMContext &context);

/// Frees the bytes of the dense_resource blobs in the module's
/// kiln.initial_values once translateToLLVMIR has copied them into the LLVM
/// module: a large model would otherwise be held twice more during code
/// generation. The module's initial values are gone afterwards.
void releaseInitialValues(mlir::ModuleOp module);

/// Whether `cpu` ("native" = this host) has the LLVM subtarget feature
/// `feature` (e.g. "avx512f"); nullopt with `error` set for an unknown CPU.
std::optional<bool> cpuHasFeature(llvm::StringRef cpu, llvm::StringRef feature,
                                  std::string &error);

/// Optimizes `module` at -O3 for `cpu` ("native" = this host) and writes an
/// object file to `path`. Fills `error` on failure.
bool emitObjectFile(llvm::Module &module, llvm::StringRef cpu,
                    llvm::StringRef path, std::string &error);

} // namespace kiln

#endif // KILN_COMPILER_TARGET_X86_X86TARGET_H
