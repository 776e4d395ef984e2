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
    // Evaluation keeps every element: dropout is the identity (its inverted
    // scaling made the training outputs' expectation the input already).
    eval.walk([](DropoutOp op) {
      op.getOutput().replaceAllUsesWith(op.getInput());
      op.erase();
    });
    // The batch-statistics reads and updates are now dead.
    IRRewriter rewriter(&getContext());
    (void)runRegionDCE(rewriter, eval->getRegions());
    // The step only fed the dropout masks: without them the evaluation step
    // takes the images and labels alone, as for a model without dropout.
    for (unsigned i = eval.getNumArguments(); i-- > 0;)
      if (eval.getArgAttr(i, "kiln.step") && eval.getArgument(i).use_empty())
        (void)eval.eraseArgument(i);
  }
};
} // namespace
} // namespace kiln
