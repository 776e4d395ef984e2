//===- LayoutPass.cpp - kiln-layout ---------------------------------------===//

#include "passes/Layout/AssignLayouts.h"
#include "passes/Passes.h"

#include "dialects/Kiln/IR/KilnOps.h"

namespace kiln {
#define GEN_PASS_DEF_KILNLAYOUT
#include "passes/Passes.h.inc"

namespace {
struct KilnLayoutPass : impl::KilnLayoutBase<KilnLayoutPass> {
  using KilnLayoutBase::KilnLayoutBase;

  void runOnOperation() override {
    mlir::func::FuncOp func = getOperation();
    if (failed(verifyLayouts(func)))
      return signalPassFailure();
    applyLayouts(func, chooseLayouts(func, mode));
    // The lowering indexes every operand as its layout says: check the
    // result, so that a wrong interface answer fails here, named.
    if (failed(verifyLayouts(func)))
      return signalPassFailure();
  }
};
} // namespace
} // namespace kiln
