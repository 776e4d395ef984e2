//===- AutodiffPass.cpp - kiln-autodiff -----------------------------------===//

#include "passes/Autodiff/Autodiff.h"
#include "passes/Passes.h"

#include "dialects/Kiln/IR/KilnOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"

namespace kiln {
#define GEN_PASS_DEF_KILNAUTODIFF
#include "passes/Passes.h.inc"

namespace {
struct AutodiffPass : impl::KilnAutodiffBase<AutodiffPass> {
  using Base::Base;
  void runOnOperation() override {
    mlir::ModuleOp module = getOperation();
    auto forward = module.lookupSymbol<mlir::func::FuncOp>(forwardFunction);
    if (!forward) {
      module.emitError("kiln-autodiff: no function @") << forwardFunction;
      return signalPassFailure();
    }
    if (failed(buildTrainStep(forward, stepFunction)))
      signalPassFailure();
  }
};
} // namespace
} // namespace kiln
