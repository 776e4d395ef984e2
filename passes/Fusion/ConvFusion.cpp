//===- ConvFusion.cpp - Convolution fusion --------------------------------===//
//
// Convolutions with the bias, batch norm, residual add and relu after them
// (--kiln-fuse).
//
//===----------------------------------------------------------------------===//

#include "passes/Fusion/Fuse.h"

#include "dialects/Kiln/IR/KilnOps.h"
#include "kiln/rt/kernel_rules.h"

using namespace mlir;

namespace kiln {

/// Whether a batch norm may fuse with `conv`: the fused ops carry neither
/// groups nor a bias (a grouped convolution stays unfused: its kernels,
/// depthwise ones above all, are not those the fused ops were built and
/// measured for; a biased one is conv2d(x, w) + b, whose batch norm folds
/// the bias away, a rewrite of its own that no exporter needs).
static bool batchNormFusible(Conv2DOp conv) {
  return conv.getGroups() == 1 && !conv.getBias();
}

namespace {
/// batch_norm_inference(conv2d(x, w)) -> fused_conv2d_batch_norm, when the
/// batch norm is the convolution's only user: fixed statistics make the
/// batch norm a per-channel scale and shift of the convolution's output.
struct FuseConvBatchNormInference : OpRewritePattern<BatchNormInferenceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(BatchNormInferenceOp bn,
                                PatternRewriter &rewriter) const override {
    auto conv = bn.getInput().getDefiningOp<Conv2DOp>();
    if (!conv || !conv->hasOneUse() || !batchNormFusible(conv) ||
        conv.getOutput().getType() != bn.getOutput().getType())
      return failure();
    rewriter.replaceOpWithNewOp<FusedConv2DBatchNormOp>(
        bn, bn.getOutput().getType(), conv.getInput(), conv.getFilter(),
        bn.getScale(), bn.getOffset(), bn.getMean(), bn.getVariance(),
        /*residual=*/Value(), conv.getStridesAttr(), conv.getPaddingAttr(),
        conv.getDilationsAttr(), bn.getEpsilonAttr(), bn.getReluAttr());
    rewriter.eraseOp(conv);
    return success();
  }
};

/// Whether the x86 runtime runs `conv` on its fused-tile Winograd kernel,
/// the one kernel that takes an output's statistics as it writes it (the
/// runtime's rule, kiln/rt/kernel_rules.h). After any other kernel the
/// runtime reads the output once more for the statistics, which the batch
/// norm's own pass does faster (Fashion-MNIST ResNet-20: the stem, strided
/// and 1x1 convolutions 0.1-0.3 ms slower per call each).
static bool kernelTakesStatistics(Conv2DOp conv) {
  RankedTensorType x = conv.getInput().getType(),
                   y = conv.getOutput().getType();
  ArrayRef<int64_t> w = conv.getFilter().getType().getShape();
  ArrayRef<int64_t> strides = conv.getStrides(),
                    dilations = conv.getDilations(),
                    padding = conv.getPadding();
  rt::ConvGeometry geometry;
  geometry.kernelH = w[0];
  geometry.kernelW = w[1];
  geometry.strideH = strides[0];
  geometry.strideW = strides[1];
  geometry.dilationH = dilations[0];
  geometry.dilationW = dilations[1];
  geometry.padTop = padding[0];
  geometry.padBottom = padding[1];
  geometry.padLeft = padding[2];
  geometry.padRight = padding[3];
  geometry.inputChannels = w[2];
  geometry.outputChannels = w[3];
  if (!ShapedType::isDynamic(y.getDimSize(1)) &&
      !ShapedType::isDynamic(y.getDimSize(2)))
    geometry.outputPixels = y.getDimSize(1) * y.getDimSize(2);
  return rt::fusedTileWinogradApplies(rt::ConvPass::Forward, geometry,
                                      x.getElementType().isBF16());
}

/// batch_norm_train(conv2d(x, w)) -> fused_conv2d_batch_norm_train at the
/// batch norm's place, residual and relu included, when the convolution's
/// kernel takes the batch statistics as it writes (kernelTakesStatistics)
/// and every other reader of its output (the batch-norm backward) comes
/// after the batch norm.
struct FuseConvBatchNormTrain : OpRewritePattern<BatchNormTrainOp> {
  FuseConvBatchNormTrain(MLIRContext *context, bool anyKernel)
      : OpRewritePattern(context), anyKernel(anyKernel) {}
  LogicalResult matchAndRewrite(BatchNormTrainOp bn,
                                PatternRewriter &rewriter) const override {
    auto conv = bn.getInput().getDefiningOp<Conv2DOp>();
    if (!conv || conv->getBlock() != bn->getBlock() ||
        !batchNormFusible(conv) || (!anyKernel && !kernelTakesStatistics(conv)))
      return failure();
    for (Operation *user : conv->getUsers())
      if (user != bn &&
          (user->getBlock() != bn->getBlock() || !bn->isBeforeInBlock(user)))
        return failure();
    rewriter.setInsertionPoint(bn);
    // The convolution's location: a profile by model line keeps the
    // convolution, most of the op's time, on its own line.
    auto fused = FusedConv2DBatchNormTrainOp::create(
        rewriter, conv.getLoc(), conv.getOutput().getType(),
        bn.getOutput().getType(), bn.getBatchMean().getType(),
        bn.getBatchVar().getType(), bn.getNewRunningMean().getType(),
        bn.getNewRunningVar().getType(), conv.getInput(), conv.getFilter(),
        bn.getScale(), bn.getOffset(), bn.getRunningMean(), bn.getRunningVar(),
        bn.getResidual(), conv.getStridesAttr(), conv.getPaddingAttr(),
        conv.getDilationsAttr(), bn.getEpsilonAttr(), bn.getMomentumAttr(),
        bn.getReluAttr());
    rewriter.replaceOp(bn, fused->getResults().drop_front());
    rewriter.replaceOp(conv, fused.getConvOutput());
    return success();
  }

private:
  bool anyKernel;
};

/// The fused convolution whose output `value` is, if nothing else reads that
/// output and it has neither a residual nor a relu yet (the order of the
/// fused op is conv, batch norm, residual, relu).
static FusedConv2DBatchNormOp openFusedConv(Value value) {
  auto fused = value.getDefiningOp<FusedConv2DBatchNormOp>();
  if (!fused || !fused->hasOneUse() || fused.getRelu())
    return nullptr;
  return fused;
}

/// add(fused_conv2d_batch_norm(...), r) -> fused_conv2d_batch_norm(...)
/// residual r: the residual connection of a ResNet block.
struct FuseResidualIntoConv : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AddOp add,
                                PatternRewriter &rewriter) const override {
    for (unsigned i = 0; i < 2; ++i) {
      FusedConv2DBatchNormOp fused = openFusedConv(add->getOperand(i));
      Value residual = add->getOperand(1 - i);
      if (!fused || fused.getResidual() ||
          residual.getType() != add.getOutput().getType() ||
          fused.getOutput().getType() != add.getOutput().getType())
        continue;
      // The add's place: the residual is defined before it.
      rewriter.setInsertionPoint(add);
      auto merged = FusedConv2DBatchNormOp::create(
          rewriter, fused.getLoc(), add.getOutput().getType(), fused.getInput(),
          fused.getFilter(), fused.getScale(), fused.getOffset(),
          fused.getMean(), fused.getVariance(), residual,
          fused.getStridesAttr(), fused.getPaddingAttr(),
          fused.getDilationsAttr(), fused.getEpsilonAttr(), UnitAttr());
      rewriter.replaceOp(add, merged.getOutput());
      rewriter.eraseOp(fused);
      return success();
    }
    return failure();
  }
};

/// relu(fused_conv2d_batch_norm(...)) -> fused_conv2d_batch_norm(...) relu.
struct FuseReluIntoConv : OpRewritePattern<ReluOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReluOp relu,
                                PatternRewriter &rewriter) const override {
    FusedConv2DBatchNormOp fused = openFusedConv(relu.getInput());
    if (!fused)
      return failure();
    rewriter.modifyOpInPlace(
        fused, [&] { fused.setReluAttr(rewriter.getUnitAttr()); });
    rewriter.replaceOp(relu, fused.getOutput());
    return success();
  }
};

/// The f32 value a bf16 bias was rounded from, if it is one: the input of a
/// kiln.cast, or for a read of a weight copy (--kiln-bf16-weight-copies),
/// a read of the f32 variable it copies (reads see the values at the start
/// of the step, and the copy is its variable's rounding then). Null if not.
static Value f32Source(Value bias, PatternRewriter &rewriter) {
  auto isF32 = [](Value v) {
    return cast<RankedTensorType>(v.getType()).getElementType().isF32();
  };
  if (auto rounded = bias.getDefiningOp<CastOp>())
    return isF32(rounded.getInput()) ? rounded.getInput() : Value();
  auto read = bias.getDefiningOp<ReadOp>();
  if (!read)
    return Value();
  auto copy = SymbolTable::lookupNearestSymbolFrom<VariableOp>(
      read, read.getVariableAttr());
  if (!copy || copy.getInit() != Initializer::Copy || !copy.getOfAttr())
    return Value();
  auto source = SymbolTable::lookupNearestSymbolFrom<VariableOp>(
      copy, copy.getOfAttr());
  if (!source)
    return Value();
  auto type = cast<RankedTensorType>(source.getType());
  if (!type.getElementType().isF32())
    return Value();
  return ReadOp::create(rewriter, read.getLoc(), type, copy.getOfAttr());
}

/// bias_add(conv2d(x, w), b) -> conv2d(x, w) bias b, when the bias add is
/// the convolution's only user: the library adds the bias as it writes each
/// output block (oneDNN's convolution with bias) instead of a pass over the
/// output. The bias gradient, a reduction of dy that autodiff built from
/// the bias add, stays as it is. A bf16 step rounds the bias to bf16 for the
/// bias add; the convolution takes the f32 value before that rounding, as it
/// takes a fused batch norm's shift.
struct FuseBiasIntoConv : OpRewritePattern<BiasAddOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(BiasAddOp add,
                                PatternRewriter &rewriter) const override {
    auto conv = add.getInput().getDefiningOp<Conv2DOp>();
    if (!conv || !conv->hasOneUse() || conv.getBias() ||
        conv.getOutput().getType() != add.getOutput().getType())
      return failure();
    // The bias add's place: the bias is defined before it.
    rewriter.setInsertionPoint(add);
    Value bias = add.getBias();
    if (!cast<RankedTensorType>(bias.getType()).getElementType().isF32())
      bias = f32Source(bias, rewriter);
    if (!bias)
      return failure();
    auto biased = Conv2DOp::create(
        rewriter, conv.getLoc(), add.getOutput().getType(), conv.getInput(),
        conv.getFilter(), bias, conv.getStridesAttr(), conv.getPaddingAttr(),
        conv.getDilationsAttr(), conv.getGroupsAttr());
    biased->setDiscardableAttrs(conv->getDiscardableAttrDictionary());
    rewriter.replaceOp(add, biased.getOutput());
    rewriter.eraseOp(conv);
    return success();
  }
};
} // namespace

void populateConvBiasFusionPatterns(RewritePatternSet &patterns) {
  patterns.add<FuseBiasIntoConv>(patterns.getContext());
}

void populateConvBatchNormFusionPatterns(RewritePatternSet &patterns) {
  patterns
      .add<FuseConvBatchNormInference, FuseResidualIntoConv, FuseReluIntoConv>(
          patterns.getContext());
}

void populateConvBatchNormTrainFusionPatterns(RewritePatternSet &patterns) {
  patterns.add<FuseConvBatchNormTrain>(patterns.getContext(),
                                       /*anyKernel=*/false);
}

void populateConvBatchNormTrainFusionPatternsAnyKernel(
    RewritePatternSet &patterns) {
  patterns.add<FuseConvBatchNormTrain>(patterns.getContext(),
                                       /*anyKernel=*/true);
}
} // namespace kiln
