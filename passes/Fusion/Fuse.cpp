//===- Fuse.cpp - Fusion patterns of the training step --------------------===//

#include "passes/Fusion/Fuse.h"

#include "dialects/Kiln/IR/KilnOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "passes/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_KILNFUSE
#include "passes/Passes.h.inc"

namespace {
/// relu(batch_norm(x).output) -> batch_norm(x) relu, when the relu is the
/// only user of the normalized output.
template <typename BatchNormOp>
struct FuseBatchNormRelu : OpRewritePattern<ReluOp> {
  using OpRewritePattern<ReluOp>::OpRewritePattern;
  LogicalResult matchAndRewrite(ReluOp relu,
                                PatternRewriter &rewriter) const override {
    auto bn = relu.getInput().template getDefiningOp<BatchNormOp>();
    if (!bn || bn.getRelu() || !bn.getOutput().hasOneUse())
      return failure();
    rewriter.modifyOpInPlace(bn, [&] { bn.setRelu(true); });
    rewriter.replaceOp(relu, bn.getOutput());
    return success();
  }
};

/// batch_norm_backward(relu_backward(dy, y), ...) -> batch_norm_backward(dy,
/// ..., relu_output y): the mask is applied while the gradient is read.
struct FuseReluBackwardIntoBatchNormBackward
    : OpRewritePattern<BatchNormBackwardOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(BatchNormBackwardOp bn,
                                PatternRewriter &rewriter) const override {
    auto mask = bn.getOutputGrad().getDefiningOp<ReluBackwardOp>();
    if (!mask || bn.getReluOutput() || !mask->hasOneUse() ||
        mask.getOutput().getType() != bn.getInput().getType())
      return failure();
    rewriter.replaceOpWithNewOp<BatchNormBackwardOp>(
        bn, mask.getOutputGrad(), bn.getInput(), bn.getScale(),
        bn.getBatchMean(), bn.getBatchVar(), mask.getOutput(),
        bn.getEpsilonAttr());
    rewriter.eraseOp(mask);
    return success();
  }
};

struct FusePass : impl::KilnFuseBase<FusePass> {
  using Base::Base;
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateBatchNormReluFusionPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace

void populateBatchNormReluFusionPatterns(RewritePatternSet &patterns) {
  patterns.add<FuseBatchNormRelu<BatchNormTrainOp>,
               FuseBatchNormRelu<BatchNormInferenceOp>,
               FuseReluBackwardIntoBatchNormBackward>(patterns.getContext());
}

} // namespace kiln
