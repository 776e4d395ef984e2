//===- LowerLibraryCalls.cpp - Convolutions and matmuls as runtime calls --===//
//
// The runtime runs these with oneDNN primitives created once at start-up
// (docs/model-abi.md); the generated code only names the call.
//
//===----------------------------------------------------------------------===//

#include "passes/Conversion/KilnToLinalg/Lowering.h"

#include "dialects/Kiln/IR/KilnOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;

namespace kiln {

static llvm::json::Array toJson(ArrayRef<int64_t> values) {
  llvm::json::Array array;
  for (int64_t v : values)
    array.push_back(v);
  return array;
}

template <typename ConvOp>
static llvm::json::Object convCall(ConvOp op, StringRef kind,
                                   llvm::json::Object operands,
                                   int64_t groups = 1) {
  llvm::json::Object call{{"kind", kind},
                          {"operands", std::move(operands)},
                          {"strides", toJson(op.getStrides())},
                          {"padding", toJson(op.getPadding())},
                          {"dilations", toJson(op.getDilations())}};
  // Absent means 1: ungrouped convolutions' manifests stay as they were.
  if (groups != 1)
    call["groups"] = groups;
  return call;
}

Value emitConvolutionWithStatistics(Lowering &l,
                                    FusedConv2DBatchNormTrainOp fused) {
  Location loc = fused.getLoc();
  int64_t channels = fused.getFilter().getType().getDimSize(3);
  Value statistics = l.temporary(loc, {2, channels}, l.b.getF32Type());
  l.emitLibraryCall(
      loc, convCall(fused, "conv2d_forward",
                    llvm::json::Object{
                        {"input", l.describe(fused.getInput())},
                        {"filter", l.describe(fused.getFilter(),
                                              /*activation=*/false)},
                        {"output", l.describe(fused.getConvOutput())},
                        {"statistics", l.describeTemporary(statistics)}}));
  return statistics;
}

/// The eval step's convolution + batch norm (+ residual, + ReLU) as one
/// library convolution.
static void lowerFusedConvBatchNorm(Lowering &l, FusedConv2DBatchNormOp fused) {
  Location loc = fused.getLoc();
  // Batch norm with fixed statistics is conv(x, w) * scale + shift per
  // output channel = conv(x, w * scale) + shift: the filter is scaled here
  // and the shift becomes the convolution's bias, which the library adds
  // for free (post-op multiplies and adds would be slower).
  auto filterType = fused.getFilter().getType();
  int64_t channels = filterType.getDimSize(3);
  Type f32 = l.b.getF32Type();
  Value scale = l.temporary(loc, {channels}, f32);
  Value bias = l.temporary(loc, {channels}, f32);
  emitBatchNormCoefficients(
      l, loc, l.view(fused.getScale()), l.view(fused.getOffset()),
      l.view(fused.getMean()), l.view(fused.getVariance()),
      fused.getEpsilon().convertToFloat(), scale, bias);
  Value filter = l.view(fused.getFilter());
  Value scaled =
      l.temporary(loc, filterType.getShape(), filterType.getElementType());
  MLIRContext *ctx = l.b.getContext();
  l.generic(
      loc, ValueRange{filter, scale}, scaled,
      {AffineMap::getMultiDimIdentityMap(4, ctx),
       AffineMap::get(4, 0, getAffineDimExpr(3, ctx)),
       AffineMap::getMultiDimIdentityMap(4, ctx)},
      SmallVector<utils::IteratorType>(4, utils::IteratorType::parallel),
      [&](OpBuilder &nb, Location loc, ValueRange a) {
        Value w =
            arith::MulFOp::create(nb, loc, widenToF32(nb, loc, a[0]), a[1]);
        linalg::YieldOp::create(
            nb, loc, narrowTo(nb, loc, w, filterType.getElementType()));
      });
  llvm::json::Object operands{{"input", l.describe(fused.getInput())},
                              {"filter", l.describeTemporary(scaled)},
                              {"bias", l.describeTemporary(bias)},
                              {"output", l.describe(fused.getOutput())}};
  if (Value residual = fused.getResidual())
    operands["residual"] = l.describe(residual);
  llvm::json::Object call =
      convCall(fused, "conv2d_forward", std::move(operands));
  if (fused.getRelu())
    call["relu"] = true;
  l.emitLibraryCall(loc, std::move(call));
}

LogicalResult lowerLibraryCall(Lowering &l, Operation *op) {
  Location loc = op->getLoc();
  if (auto conv = dyn_cast<Conv2DOp>(op)) {
    llvm::json::Object operands{
        {"input", l.describe(conv.getInput())},
        {"filter", l.describe(conv.getFilter(), /*activation=*/false)},
        {"output", l.describe(conv.getOutput())}};
    if (Value bias = conv.getBias())
      operands["bias"] = l.describe(bias);
    l.emitLibraryCall(loc, convCall(conv, "conv2d_forward", std::move(operands),
                                    int64_t(conv.getGroups())));
    return success();
  }
  if (auto fused = dyn_cast<FusedConv2DBatchNormOp>(op)) {
    lowerFusedConvBatchNorm(l, fused);
    return success();
  }
  if (auto conv = dyn_cast<Conv2DBackwardDataOp>(op)) {
    l.emitLibraryCall(
        loc, convCall(conv, "conv2d_backward_data",
                      llvm::json::Object{{"output_grad", l.describe(conv.getOutputGrad())},
                       {"filter", l.describe(conv.getFilter(), /*activation=*/false)},
                       {"input_grad", l.describe(conv.getInputGrad())}},
                      int64_t(conv.getGroups())));
    return success();
  }
  if (auto conv = dyn_cast<Conv2DBackwardFilterOp>(op)) {
    l.emitLibraryCall(
        loc, convCall(conv, "conv2d_backward_filter",
                      llvm::json::Object{{"input", l.describe(conv.getInput())},
                       {"output_grad", l.describe(conv.getOutputGrad())},
                       {"filter_grad", l.describe(conv.getFilterGrad(), /*activation=*/false)}},
                      int64_t(conv.getGroups())));
    return success();
  }
  if (auto dense = dyn_cast<DenseOp>(op)) {
    llvm::json::Object operands{{"input", l.describe(dense.getInput())},
                                {"weight", l.describe(dense.getWeight())},
                                {"output", l.describe(dense.getOutput())}};
    if (Value bias = dense.getBias())
      operands["bias"] = l.describe(bias);
    l.emitLibraryCall(loc, llvm::json::Object{{"kind", "dense"},
                                              {"operands", std::move(operands)}});
    return success();
  }
  if (auto fused = dyn_cast<FusedDenseBackwardWeightsOp>(op)) {
    l.emitLibraryCall(
        loc,
        llvm::json::Object{
            {"kind", "dense_backward_weights"},
            {"operands", llvm::json::Object{
                             {"input", l.describe(fused.getInput())},
                             {"output_grad", l.describe(fused.getOutputGrad())},
                             {"weight_grad", l.describe(fused.getWeightGrad())},
                             {"bias_grad", l.describe(fused.getBiasGrad())}}}});
    return success();
  }
  if (auto reorder = dyn_cast<ReorderOp>(op)) {
    l.emitLibraryCall(
        loc, llvm::json::Object{
                 {"kind", "reorder"},
                 {"operands",
                  llvm::json::Object{{"input", l.describe(reorder.getInput())},
                                     {"output", l.describe(reorder.getOutput())}}}});
    return success();
  }
  auto matmul = cast<MatmulOp>(op);
  l.emitLibraryCall(
      loc, llvm::json::Object{{"kind", "matmul"},
                              {"operands",
                               llvm::json::Object{
                                   {"lhs", l.describe(matmul.getLhs())},
                                   {"rhs", l.describe(matmul.getRhs())},
                                   {"output", l.describe(matmul.getOutput())}}},
                              {"transpose_lhs", matmul.getTransposeLhs()},
                              {"transpose_rhs", matmul.getTransposeRhs()}});
  return success();
}

} // namespace kiln
