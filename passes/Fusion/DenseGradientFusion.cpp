//===- DenseGradientFusion.cpp - Dense gradient fusion --------------------===//
//
// A dense layer's weight and bias gradients as one op (--kiln-fuse).
//
//===----------------------------------------------------------------------===//

#include "passes/Fusion/Fuse.h"

#include "dialects/Kiln/IR/KilnOps.h"

using namespace mlir;

namespace kiln {

namespace {
/// matmul(x, dy) transpose_lhs and reduce_sum(dy) -> one
/// fused_dense_backward_weights: a dense layer's weight and bias gradients,
/// which both read its output gradient. The fused op takes the place of the
/// earlier of the two, where x must already be defined.
struct FuseDenseWeightAndBiasGradients : OpRewritePattern<ReduceSumOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReduceSumOp sum,
                                PatternRewriter &rewriter) const override {
    Value dy = sum.getInput();
    auto dyType = dyn_cast<RankedTensorType>(dy.getType());
    if (!dyType || dyType.getRank() != 2)
      return failure();
    for (Operation *user : dy.getUsers()) {
      auto matmul = dyn_cast<MatmulOp>(user);
      if (!matmul || matmul.getRhs() != dy || !matmul.getTransposeLhs() ||
          matmul.getTransposeRhs() || matmul->getBlock() != sum->getBlock() ||
          matmul.getOutput().getType().getElementType() !=
              dyType.getElementType() ||
          matmul.getLhs().getType().getElementType() != dyType.getElementType())
        continue;
      Operation *first = matmul->isBeforeInBlock(sum) ? matmul.getOperation()
                                                      : sum.getOperation();
      Operation *x = matmul.getLhs().getDefiningOp();
      if (x && x->getBlock() == first->getBlock() && !x->isBeforeInBlock(first))
        continue;
      rewriter.setInsertionPoint(first);
      auto fused = FusedDenseBackwardWeightsOp::create(
          rewriter, matmul.getLoc(), matmul.getOutput().getType(),
          sum.getOutput().getType(), matmul.getLhs(), dy);
      rewriter.replaceOp(matmul, fused.getWeightGrad());
      rewriter.replaceOp(sum, fused.getBiasGrad());
      return success();
    }
    return failure();
  }
};
} // namespace

void populateDenseGradientFusionPatterns(RewritePatternSet &patterns) {
  patterns.add<FuseDenseWeightAndBiasGradients>(patterns.getContext());
}
} // namespace kiln
