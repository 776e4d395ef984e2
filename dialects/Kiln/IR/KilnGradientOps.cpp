//===- KilnGradientOps.cpp - Ops of the backward pass ---------------------===//
//
// Backward ops whose result shape is given check it against the forward op
// it inverts: the forward shape rule applied to the result must give `dy`.
//
//===----------------------------------------------------------------------===//

#include "dialects/Kiln/IR/KilnOps.h"
#include "dialects/Kiln/IR/ShapeRules.h"

using namespace mlir;
using namespace kiln;

/// Checks that a window op over `input` gives `outputGrad`'s shape.
static LogicalResult verifyWindowInverse(Operation *op, RankedTensorType input,
                                         RankedTensorType outputGrad,
                                         ArrayRef<int64_t> window,
                                         ArrayRef<int64_t> strides,
                                         ArrayRef<int64_t> padding,
                                         ArrayRef<int64_t> dilations,
                                         int64_t outChannels,
                                         bool ceilMode = false) {
  if (input.getElementType() != outputGrad.getElementType())
    return op->emitOpError("gradient element types differ: ")
           << input.getElementType() << " and " << outputGrad.getElementType();
  SmallVector<int64_t> spatial;
  if (failed(inferWindowSpatialSize(op->getLoc(), op->getName().getStringRef(),
                                    input, window, strides, padding, dilations,
                                    spatial, ceilMode)))
    return failure();
  SmallVector<int64_t> expected = {input.getDimSize(0), spatial[0], spatial[1],
                                   outChannels};
  if (!shapesCompatible(expected, outputGrad.getShape()))
    return op->emitOpError("the forward op maps ")
           << input << " to shape [" << formatShape(expected)
           << "], but the output gradient is " << outputGrad;
  return success();
}

LogicalResult Conv2DBackwardDataOp::verify() {
  RankedTensorType filter = getFilter().getType();
  RankedTensorType inputGrad = getInputGrad().getType();
  if (failed(checkConvGroups(getLoc(), getOperationName(), "input gradient",
                             inputGrad.getDimSize(3), "filter",
                             filter.getDimSize(2), filter.getDimSize(3),
                             int64_t(getGroups()))))
    return failure();
  return verifyWindowInverse(*this, inputGrad, getOutputGrad().getType(),
                             filter.getShape().take_front(2), getStrides(),
                             getPadding(), getDilations(),
                             filter.getDimSize(3));
}

int64_t Conv2DBackwardDataOp::getMultiplyAdds(int64_t dynamicDimSize) {
  RankedTensorType filter = getFilter().getType();
  return numElementsWith(getOutputGrad().getType(), dynamicDimSize) *
         filter.getDimSize(0) * filter.getDimSize(1) * filter.getDimSize(2);
}

LogicalResult Conv2DBackwardFilterOp::verify() {
  RankedTensorType filterGrad = getFilterGrad().getType();
  RankedTensorType input = getInput().getType();
  if (!filterGrad.hasStaticShape())
    return emitOpError("the filter gradient shape must be static");
  if (failed(checkConvGroups(getLoc(), getOperationName(), "input",
                             input.getDimSize(3), "filter gradient",
                             filterGrad.getDimSize(2), filterGrad.getDimSize(3),
                             int64_t(getGroups()))))
    return failure();
  return verifyWindowInverse(*this, input, getOutputGrad().getType(),
                             filterGrad.getShape().take_front(2), getStrides(),
                             getPadding(), getDilations(),
                             filterGrad.getDimSize(3));
}

int64_t Conv2DBackwardFilterOp::getMultiplyAdds(int64_t dynamicDimSize) {
  RankedTensorType filter = getFilterGrad().getType();
  return numElementsWith(getOutputGrad().getType(), dynamicDimSize) *
         filter.getDimSize(0) * filter.getDimSize(1) * filter.getDimSize(2);
}

LogicalResult BatchNormBackwardOp::inferReturnTypes(
    MLIRContext *context, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &results) {
  StringRef name = "kiln.batch_norm_backward";
  if (adaptor.getOutputGrad().getType() != adaptor.getInput().getType())
    return emitOptionalError(loc, name,
                             ": the output gradient and the input must have "
                             "the same type");
  SmallVector<std::pair<StringRef, Value>> vectors = {
      {"scale", adaptor.getScale()},
      {"batch_mean", adaptor.getBatchMean()},
      {"batch_var", adaptor.getBatchVar()}};
  if (Value offset = adaptor.getReluOffset())
    vectors.push_back({"relu_offset", offset});
  FailureOr<int64_t> channels =
      checkBatchNormOperands(loc, name, adaptor.getInput(), vectors);
  if (failed(channels))
    return failure();
  auto vector = RankedTensorType::get({*channels}, Float32Type::get(context));
  results.push_back(adaptor.getInput().getType());
  results.append(2, vector);
  return success();
}

LogicalResult MaxPoolBackwardOp::verify() {
  if (getInputGrad().getType() != getInput().getType())
    return emitOpError("the input gradient must have the input's type ")
           << getInput().getType();
  return verifyWindowInverse(*this, getInput().getType(),
                             getOutputGrad().getType(), getWindow(),
                             getStrides(), getPadding(), {1, 1},
                             getInput().getType().getDimSize(3),
                             getCeilMode());
}

LogicalResult AvgPoolBackwardOp::verify() {
  RankedTensorType inputGrad = getInputGrad().getType();
  return verifyWindowInverse(*this, inputGrad, getOutputGrad().getType(),
                             getWindow(), getStrides(), getPadding(), {1, 1},
                             inputGrad.getDimSize(3), getCeilMode());
}

LogicalResult GlobalAvgPoolBackwardOp::verify() {
  RankedTensorType in = getInputGrad().getType();
  RankedTensorType out = getOutputGrad().getType();
  SmallVector<int64_t> expected = {in.getDimSize(0), in.getDimSize(3)};
  if (in.getElementType() != out.getElementType() ||
      !shapesCompatible(expected, out.getShape()))
    return emitOpError("pooling ")
           << in << " gives shape [" << formatShape(expected)
           << "], but the output gradient is " << out;
  return success();
}

std::pair<bool, bool>
BroadcastBinaryBackwardOp::operandsRead(BinaryKind kind, BinaryOperand wrt) {
  bool lhs = wrt == BinaryOperand::Lhs;
  switch (kind) {
  case BinaryKind::Add:
  case BinaryKind::Sub:
    return {false, false};
  case BinaryKind::Mul:
    return {!lhs, lhs};
  case BinaryKind::Div:
    return {!lhs, true};
  }
  llvm_unreachable("unknown binary kind");
}

LogicalResult BroadcastBinaryBackwardOp::verify() {
  StringRef name = "kiln.broadcast_binary_backward";
  auto [needLhs, needRhs] = operandsRead(getKind(), getWrt());
  if (needLhs != static_cast<bool>(getLhs()) ||
      needRhs != static_cast<bool>(getRhs()))
    return emitOpError("the gradient of ")
           << stringifyBinaryKind(getKind()) << " with respect to "
           << stringifyBinaryOperand(getWrt()) << " reads "
           << (needLhs && needRhs ? "lhs and rhs"
               : needLhs          ? "lhs only"
               : needRhs          ? "rhs only"
                                  : "no forward operand");
  RankedTensorType dy = getOutputGrad().getType();
  for (auto [what, value] :
       {std::pair<StringRef, Value>{"lhs", getLhs()}, {"rhs", getRhs()}})
    if (value && failed(checkBroadcastsTo(
                     getLoc(), name, what,
                     cast<RankedTensorType>(value.getType()), dy)))
      return failure();
  RankedTensorType grad = getOperandGrad().getType();
  Value operand = getWrt() == BinaryOperand::Lhs ? getLhs() : getRhs();
  if (operand && operand.getType() != grad)
    return emitOpError("the result must have the type of ")
           << stringifyBinaryOperand(getWrt()) << ", " << operand.getType()
           << ", not " << grad;
  return checkBroadcastsTo(getLoc(), name, "the result", grad, dy);
}

LogicalResult BiasAddBackwardOp::inferReturnTypes(
    MLIRContext *context, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &results) {
  auto dy = cast<RankedTensorType>(adaptor.getOutputGrad().getType());
  if (dy.getRank() < 1)
    return emitOptionalError(
        loc, "kiln.bias_add_backward: the output gradient needs a channel "
             "dimension");
  results.push_back(RankedTensorType::get({dy.getDimSize(dy.getRank() - 1)},
                                          dy.getElementType()));
  return success();
}

LogicalResult MatmulOp::inferReturnTypes(MLIRContext *context,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  auto lhs = cast<RankedTensorType>(adaptor.getLhs().getType());
  auto rhs = cast<RankedTensorType>(adaptor.getRhs().getType());
  if (lhs.getElementType() != rhs.getElementType())
    return emitOptionalError(loc, "kiln.matmul: element types differ: ",
                             lhs.getElementType(), " and ",
                             rhs.getElementType());
  bool tl = adaptor.getTransposeLhs(), tr = adaptor.getTransposeRhs();
  int64_t m = lhs.getDimSize(tl ? 1 : 0), kl = lhs.getDimSize(tl ? 0 : 1);
  int64_t kr = rhs.getDimSize(tr ? 1 : 0), n = rhs.getDimSize(tr ? 0 : 1);
  if (!ShapedType::isDynamic(kl) && !ShapedType::isDynamic(kr) && kl != kr)
    return emitOptionalError(loc, "kiln.matmul: contracting sizes differ: ", kl,
                             " and ", kr);
  results.push_back(RankedTensorType::get({m, n}, lhs.getElementType()));
  return success();
}

int64_t MatmulOp::getMultiplyAdds(int64_t dynamicDimSize) {
  RankedTensorType lhs = getLhs().getType();
  int64_t k = lhs.getDimSize(getTransposeLhs() ? 0 : 1);
  if (ShapedType::isDynamic(k))
    k = dynamicDimSize;
  return numElementsWith(getOutput().getType(), dynamicDimSize) * k;
}

LogicalResult ReduceSumOp::inferReturnTypes(MLIRContext *context,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  if (input.getRank() < 1)
    return emitOptionalError(loc, "kiln.reduce_sum: needs rank >= 1");
  results.push_back(RankedTensorType::get(input.getShape().drop_front(),
                                          input.getElementType()));
  return success();
}

LogicalResult SoftmaxCrossEntropyBackwardOp::verify() {
  if (getLogitsGrad().getType() != getLogits().getType())
    return emitOpError("the logits gradient must have the logits' type ")
           << getLogits().getType();
  int64_t batch = getLogits().getType().getDimSize(0);
  int64_t labels = getLabels().getType().getDimSize(0);
  if (!ShapedType::isDynamic(batch) && !ShapedType::isDynamic(labels) &&
      batch != labels)
    return emitOpError("has ") << batch << " rows of logits but " << labels
                               << " labels";
  return success();
}
