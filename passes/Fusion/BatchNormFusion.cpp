//===- BatchNormFusion.cpp - Batch norm fusion ----------------------------===//
//
// Batch norm with the relu and residual add after it, and the relu mask
// before its backward pass (--kiln-fuse).
//
//===----------------------------------------------------------------------===//

#include "passes/Fusion/Fuse.h"

#include "dialects/Kiln/IR/KilnOps.h"

using namespace mlir;

namespace kiln {

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

/// add(batch_norm_train(x).output, r) -> batch_norm_train(x) residual r,
/// when the add is the only user of the normalized output and r is defined
/// before the batch norm (which keeps its place): the residual connection
/// of a ResNet block, added in the normalizing pass. Of a downsampling
/// block's two batch norms, the later one takes the earlier one's output.
struct FuseResidualIntoBatchNormTrain : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AddOp add,
                                PatternRewriter &rewriter) const override {
    for (unsigned i = 0; i < 2; ++i) {
      auto bn = add->getOperand(i).getDefiningOp<BatchNormTrainOp>();
      Value residual = add->getOperand(1 - i);
      if (!bn || bn.getRelu() || bn.getResidual() ||
          !bn.getOutput().hasOneUse() ||
          residual.getType() != bn.getOutput().getType() ||
          add.getOutput().getType() != bn.getOutput().getType())
        continue;
      Operation *def = residual.getDefiningOp();
      bool definedBefore =
          def ? def->getBlock() == bn->getBlock() && def->isBeforeInBlock(bn)
              : residual.getParentBlock() == bn->getBlock();
      if (!definedBefore)
        continue;
      rewriter.setInsertionPoint(bn);
      auto fused = BatchNormTrainOp::create(
          rewriter, bn.getLoc(), bn.getInput(), bn.getScale(), bn.getOffset(),
          bn.getRunningMean(), bn.getRunningVar(), residual,
          bn.getEpsilonAttr(), bn.getMomentumAttr(), UnitAttr());
      rewriter.replaceOp(add, fused.getOutput());
      rewriter.replaceOp(bn, fused.getResults());
      return success();
    }
    return failure();
  }
};

/// batch_norm_backward(relu_backward(dy, y), x, ...) -> batch_norm_backward(dy,
/// x, ..., relu_offset beta), when y is batch_norm_train(x) of the same
/// statistics, rectified (by its relu flag or a relu op) or not, without a
/// residual: the mask is recomputed from x while the gradient is read, and y
/// need not be read.
struct FuseReluBackwardIntoBatchNormBackward
    : OpRewritePattern<BatchNormBackwardOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(BatchNormBackwardOp bn,
                                PatternRewriter &rewriter) const override {
    auto mask = bn.getOutputGrad().getDefiningOp<ReluBackwardOp>();
    if (!mask || bn.getReluOffset() || !mask->hasOneUse())
      return failure();
    // y > 0 exactly where the normalized value is, rectified or not.
    Value y = mask.getOutput();
    if (auto relu = y.getDefiningOp<ReluOp>())
      y = relu.getInput();
    auto forward = y.getDefiningOp<BatchNormTrainOp>();
    if (!forward || forward.getOutput() != y || forward.getResidual() ||
        forward.getInput() != bn.getInput() ||
        forward.getScale() != bn.getScale() ||
        forward.getBatchMean() != bn.getBatchMean() ||
        forward.getBatchVar() != bn.getBatchVar() ||
        forward.getEpsilon() != bn.getEpsilon())
      return failure();
    rewriter.replaceOpWithNewOp<BatchNormBackwardOp>(
        bn, mask.getOutputGrad(), bn.getInput(), bn.getScale(),
        bn.getBatchMean(), bn.getBatchVar(), forward.getOffset(),
        bn.getEpsilonAttr());
    rewriter.eraseOp(mask);
    return success();
  }
};
} // namespace

void populateBatchNormReluFusionPatterns(RewritePatternSet &patterns) {
  patterns.add<FuseBatchNormRelu<BatchNormTrainOp>,
               FuseBatchNormRelu<BatchNormInferenceOp>,
               FuseResidualIntoBatchNormTrain,
               FuseReluBackwardIntoBatchNormBackward>(patterns.getContext());
}
} // namespace kiln
