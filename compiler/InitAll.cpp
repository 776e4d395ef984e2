//===- InitAll.cpp - Register what Kiln uses ------------------------------===//

#include "compiler/InitAll.h"

#include "dialects/Kiln/IR/KilnDialect.h"
#include "compiler/Pipelines.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Transforms/Passes.h"

void kiln::registerAllKilnDialects(mlir::DialectRegistry &registry) {
  registry.insert<KilnDialect, mlir::arith::ArithDialect,
                  mlir::func::FuncDialect>();
}

void kiln::registerAllKilnPasses() {
  registerKilnPasses();
  registerKilnPipelines();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSymbolDCEPass();
}
