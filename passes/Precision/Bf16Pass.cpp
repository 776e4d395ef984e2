//===- Bf16Pass.cpp - kiln-bf16, kiln-bf16-weight-copies, kiln-fold-casts -===//

#include "passes/Precision/Bf16.h"
#include "passes/Passes.h"

#include "dialects/Kiln/IR/KilnOps.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_KILNBF16
#define GEN_PASS_DEF_KILNBF16WEIGHTCOPIES
#define GEN_PASS_DEF_KILNFOLDCASTS
#include "passes/Passes.h.inc"

namespace {
struct Bf16Pass : impl::KilnBf16Base<Bf16Pass> {
  using Base::Base;
  void runOnOperation() override {
    for (auto func : getOperation().getOps<mlir::func::FuncOp>())
      if (failed(castToBf16(func)))
        return signalPassFailure();
  }
};

struct Bf16WeightCopiesPass
    : impl::KilnBf16WeightCopiesBase<Bf16WeightCopiesPass> {
  using Base::Base;
  void runOnOperation() override {
    if (failed(keepBf16WeightCopies(getOperation())))
      signalPassFailure();
  }
};

struct FoldCastsPass : impl::KilnFoldCastsBase<FoldCastsPass> {
  using Base::Base;
  void runOnOperation() override {
    // The greedy driver also applies kiln.cast's folder (identity casts).
    mlir::RewritePatternSet patterns(&getContext());
    populateCastFoldingPatterns(patterns);
    if (failed(mlir::applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
} // namespace kiln
