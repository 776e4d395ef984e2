//===- DeriveEval.cpp - kiln-derive-eval ----------------------------------===//

#include "passes/Passes.h"

#include "dialects/Kiln/IR/KilnOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/RegionUtils.h"

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_KILNDERIVEEVAL
#include "passes/Passes.h.inc"

namespace {
struct DeriveEvalPass : impl::KilnDeriveEvalBase<DeriveEvalPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    auto forward = symbols.lookup<func::FuncOp>(forwardFunction);
    if (!forward) {
      module.emitError("kiln-derive-eval: no function @") << forwardFunction;
      return signalPassFailure();
    }
    if (symbols.lookup(evalFunction)) {
      forward.emitOpError("cannot create '")
          << evalFunction << "': the module already has that symbol";
      return signalPassFailure();
    }
    func::FuncOp eval = forward.clone();
    eval.setSymName(evalFunction);
    symbols.insert(eval, std::next(Block::iterator(forward)));

    // Evaluation never changes the model.
    eval.walk([](AssignOp op) { op.erase(); });
    bool failedOp = false;
    eval.walk([&](BatchNormTrainOp op) {
      if (op.getResidual()) {
        op.emitOpError("with a fused residual: derive the evaluation step "
                       "before --kiln-fuse");
        failedOp = true;
        return;
      }
      if (llvm::any_of(op->getResults().drop_front(),
                       [](Value v) { return !v.use_empty(); })) {
        op.emitOpError("batch statistics are used beyond the running "
                       "statistics update; cannot derive an evaluation form");
        failedOp = true;
        return;
      }
      OpBuilder builder(op);
      Value output = BatchNormInferenceOp::create(
          builder, op.getLoc(), op.getInput(), op.getScale(), op.getOffset(),
          op.getRunningMean(), op.getRunningVar(), op.getEpsilonAttr(),
          op.getReluAttr());
      op.getOutput().replaceAllUsesWith(output);
      op.erase();
    });
    if (failedOp)
      return signalPassFailure();
    // The batch-statistics reads and updates are now dead.
    IRRewriter rewriter(&getContext());
    (void)runRegionDCE(rewriter, eval->getRegions());
  }
};
} // namespace
} // namespace kiln
