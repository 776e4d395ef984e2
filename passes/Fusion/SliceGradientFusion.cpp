//===- SliceGradientFusion.cpp - A split's gradient as one concat ---------===//
//
// The gradient of a value split into slices (ShuffleNet's channel split,
// ONNX Split) is, after autodiff, a sum of kiln.slice_backward ops: each
// writes a full-size tensor of zeros around its part, and the adds read
// them all. When the parts tile the whole axis the sum is their
// concatenation: one copy instead of zero fills and adds (--kiln-fuse).
//
//===----------------------------------------------------------------------===//

#include "passes/Fusion/Fuse.h"

#include "dialects/Kiln/IR/KilnOps.h"

using namespace mlir;

namespace kiln {

namespace {
/// add(... add(slice_backward(dy_i), ...) ...) -> concat(dy_i in offset
/// order), for a tree of adds whose inner results and leaves have no other
/// use, whose leaves are slice_backward ops along one axis of one size,
/// and whose parts cover that axis exactly once.
struct FuseSliceGradientSum : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;

  /// Collects the slice_backward leaves of the add tree under `value`;
  /// fails at anything else or at a value with another use.
  static LogicalResult collect(Value value,
                               SmallVectorImpl<SliceBackwardOp> &leaves) {
    if (!value.hasOneUse())
      return failure();
    if (auto leaf = value.getDefiningOp<SliceBackwardOp>()) {
      leaves.push_back(leaf);
      return success();
    }
    auto add = value.getDefiningOp<AddOp>();
    if (!add)
      return failure();
    return success(succeeded(collect(add.getLhs(), leaves)) &&
                   succeeded(collect(add.getRhs(), leaves)));
  }

  LogicalResult matchAndRewrite(AddOp add,
                                PatternRewriter &rewriter) const override {
    SmallVector<SliceBackwardOp> leaves;
    if (failed(collect(add.getLhs(), leaves)) ||
        failed(collect(add.getRhs(), leaves)))
      return failure();
    uint64_t axis = leaves.front().getAxis();
    uint64_t size = leaves.front().getInputSize();
    if (llvm::any_of(leaves, [&](SliceBackwardOp leaf) {
          return leaf.getAxis() != axis || leaf.getInputSize() != size;
        }))
      return failure();
    llvm::sort(leaves, [](SliceBackwardOp a, SliceBackwardOp b) {
      return a.getStart() < b.getStart();
    });
    SmallVector<Value> parts;
    int64_t covered = 0;
    for (SliceBackwardOp leaf : leaves) {
      if (int64_t(leaf.getStart()) != covered)
        return failure(); // a gap or an overlap: not a plain concatenation
      covered += cast<RankedTensorType>(leaf.getOutputGrad().getType())
                     .getDimSize(axis);
      parts.push_back(leaf.getOutputGrad());
    }
    if (covered != int64_t(size))
      return failure();
    rewriter.replaceOpWithNewOp<ConcatOp>(add, parts, axis);
    return success();
  }
};
} // namespace

void populateSliceGradientFusionPatterns(RewritePatternSet &patterns) {
  patterns.add<FuseSliceGradientSum>(patterns.getContext());
}
} // namespace kiln
