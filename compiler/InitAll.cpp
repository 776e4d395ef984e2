//===- InitAll.cpp - Register what Kiln uses ------------------------------===//

#include "compiler/InitAll.h"

#include "dialects/Kiln/IR/KilnDialect.h"
#include "dialects/Sa/IR/SaDialect.h"
#include "compiler/Pipelines.h"
#include "compiler/Target/X86/LayoutCostModels.h"
#include "compiler/Target/X86/X86Target.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Transforms/Passes.h"

void kiln::registerAllKilnDialects(mlir::DialectRegistry &registry) {
  registry.insert<KilnDialect, mlir::arith::ArithDialect,
                  mlir::func::FuncDialect, mlir::linalg::LinalgDialect,
                  mlir::LLVM::LLVMDialect, mlir::math::MathDialect,
                  mlir::memref::MemRefDialect, mlir::scf::SCFDialect>();
  registerX86TargetDialects(registry);
  registerX86TargetInterfaces(registry);
  registry.insert<sa::SaDialect>();
}

void kiln::registerAllKilnPasses() {
  registerKilnPasses();
  registerKilnPipelines();
  registerX86Pipelines();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSymbolDCEPass();
}
