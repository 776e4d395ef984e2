//===- KilnGradients.cpp - GradientOpInterface of the forward ops ---------===//
//
// The gradient table: for each differentiable forward op, the backward ops
// that compute the gradients of its operands from those of its results.
//
//===----------------------------------------------------------------------===//

#include "dialects/Kiln/IR/KilnOps.h"

using namespace mlir;
using namespace kiln;

/// Sizes `operandGradients` to the op's operands, all without gradient, and
/// returns the gradient of the op's first result (null if it has none).
static Value prepare(Operation *op, ArrayRef<Value> resultGradients,
                     SmallVectorImpl<Value> &operandGradients) {
  operandGradients.assign(op->getNumOperands(), Value());
  return resultGradients.empty() ? Value() : resultGradients.front();
}

LogicalResult Conv2DOp::buildGradients(OpBuilder &b,
                                       ArrayRef<Value> resultGradients,
                                       SmallVectorImpl<Value> &operandGradients) {
  Value dy = prepare(*this, resultGradients, operandGradients);
  if (!dy)
    return success();
  operandGradients[0] = Conv2DBackwardDataOp::create(
      b, getLoc(), getInput().getType(), dy, getFilter(), getStridesAttr(),
      getPaddingAttr(), getDilationsAttr(), getGroupsAttr());
  operandGradients[1] = Conv2DBackwardFilterOp::create(
      b, getLoc(), getFilter().getType(), getInput(), dy, getStridesAttr(),
      getPaddingAttr(), getDilationsAttr(), getGroupsAttr());
  // A fused bias is a bias_add's: its gradient is the same reduction.
  if (getBias())
    operandGradients[2] = BiasAddBackwardOp::create(b, getLoc(), dy);
  return success();
}

LogicalResult
BatchNormTrainOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGradients,
                                 SmallVectorImpl<Value> &operandGradients) {
  Value dy = prepare(*this, resultGradients, operandGradients);
  if (getResidual())
    return emitOpError("with a fused residual has no gradient rule: "
                       "--kiln-fuse runs after autodiff");
  if (llvm::any_of(resultGradients.drop_front(), [](Value v) { return v; }))
    return emitOpError("cannot be differentiated through its batch or "
                       "running statistics: only the normalized output may "
                       "reach the loss");
  if (!dy)
    return success();
  // A fused rectifier's gradient is the mask of its output, recomputed from
  // the input with the offset.
  Value reluOffset = getRelu() ? getOffset() : Value();
  auto backward = BatchNormBackwardOp::create(
      b, getLoc(), dy, getInput(), getScale(), getBatchMean(), getBatchVar(),
      reluOffset, getEpsilonAttr());
  operandGradients[0] = backward.getInputGrad();
  operandGradients[1] = backward.getScaleGrad();
  operandGradients[2] = backward.getOffsetGrad();
  return success();
}

LogicalResult ReluOp::buildGradients(OpBuilder &b,
                                     ArrayRef<Value> resultGradients,
                                     SmallVectorImpl<Value> &operandGradients) {
  if (Value dy = prepare(*this, resultGradients, operandGradients))
    operandGradients[0] =
        ReluBackwardOp::create(b, getLoc(), dy.getType(), dy, getOutput());
  return success();
}

LogicalResult
ActivationOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGradients,
                             SmallVectorImpl<Value> &operandGradients) {
  if (Value dy = prepare(*this, resultGradients, operandGradients))
    operandGradients[0] = ActivationBackwardOp::create(
        b, getLoc(), dy.getType(), getKindAttr(), dy, getInput());
  return success();
}

/// Each operand's gradient is one kiln.broadcast_binary_backward given the
/// forward operands its formula reads, except the gradient of an add (or a
/// sub's lhs) with respect to an operand of dy's shape: dy itself.
LogicalResult BroadcastBinaryOp::buildGradients(
    OpBuilder &b, ArrayRef<Value> resultGradients,
    SmallVectorImpl<Value> &operandGradients) {
  Value dy = prepare(*this, resultGradients, operandGradients);
  if (!dy)
    return success();
  BinaryKind kind = getKind();
  for (BinaryOperand wrt : {BinaryOperand::Lhs, BinaryOperand::Rhs}) {
    bool isLhs = wrt == BinaryOperand::Lhs;
    Value operand = isLhs ? getLhs() : getRhs();
    bool passesDy = kind == BinaryKind::Add ||
                    (kind == BinaryKind::Sub && isLhs);
    if (passesDy && operand.getType() == dy.getType()) {
      operandGradients[isLhs ? 0 : 1] = dy;
      continue;
    }
    auto [readsLhs, readsRhs] =
        BroadcastBinaryBackwardOp::operandsRead(kind, wrt);
    operandGradients[isLhs ? 0 : 1] = BroadcastBinaryBackwardOp::create(
        b, getLoc(), operand.getType(), getKindAttr(),
        BinaryOperandAttr::get(b.getContext(), wrt), dy,
        readsLhs ? getLhs() : Value(), readsRhs ? getRhs() : Value());
  }
  return success();
}

LogicalResult
BiasAddOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGradients,
                          SmallVectorImpl<Value> &operandGradients) {
  Value dy = prepare(*this, resultGradients, operandGradients);
  if (!dy)
    return success();
  operandGradients[0] = dy;
  operandGradients[1] = BiasAddBackwardOp::create(b, getLoc(), dy);
  return success();
}

/// The derivative of x -> mask * x / (1 - ratio) is the same map: the
/// gradient is the dropout of dy with the same step and attributes, which
/// regenerates the mask rather than keeping it from the forward pass.
LogicalResult DropoutOp::buildGradients(OpBuilder &b,
                                        ArrayRef<Value> resultGradients,
                                        SmallVectorImpl<Value> &operandGradients) {
  if (Value dy = prepare(*this, resultGradients, operandGradients))
    operandGradients[0] =
        DropoutOp::create(b, getLoc(), dy, getStep(), getRatioAttr(),
                          getSeedAttr(), getStreamAttr());
  return success();
}

LogicalResult AddOp::buildGradients(OpBuilder &b,
                                    ArrayRef<Value> resultGradients,
                                    SmallVectorImpl<Value> &operandGradients) {
  if (Value dy = prepare(*this, resultGradients, operandGradients))
    operandGradients.assign({dy, dy});
  return success();
}

LogicalResult MaxPoolOp::buildGradients(OpBuilder &b,
                                        ArrayRef<Value> resultGradients,
                                        SmallVectorImpl<Value> &operandGradients) {
  if (Value dy = prepare(*this, resultGradients, operandGradients))
    operandGradients[0] = MaxPoolBackwardOp::create(
        b, getLoc(), getInput().getType(), dy, getInput(), getWindowAttr(),
        getStridesAttr(), getPaddingAttr(), getCeilModeAttr());
  return success();
}

LogicalResult AvgPoolOp::buildGradients(OpBuilder &b,
                                        ArrayRef<Value> resultGradients,
                                        SmallVectorImpl<Value> &operandGradients) {
  if (Value dy = prepare(*this, resultGradients, operandGradients))
    operandGradients[0] = AvgPoolBackwardOp::create(
        b, getLoc(), getInput().getType(), dy, getWindowAttr(),
        getStridesAttr(), getPaddingAttr(), getCeilModeAttr());
  return success();
}

LogicalResult
GlobalAvgPoolOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGradients,
                                SmallVectorImpl<Value> &operandGradients) {
  if (Value dy = prepare(*this, resultGradients, operandGradients))
    operandGradients[0] = GlobalAvgPoolBackwardOp::create(
        b, getLoc(), getInput().getType(), dy);
  return success();
}

LogicalResult DenseOp::buildGradients(OpBuilder &b,
                                      ArrayRef<Value> resultGradients,
                                      SmallVectorImpl<Value> &operandGradients) {
  Value dy = prepare(*this, resultGradients, operandGradients);
  if (!dy)
    return success();
  // dx = dy * w^T, dw = x^T * dy, db = sum over the batch of dy.
  operandGradients[0] = MatmulOp::create(b, getLoc(), dy, getWeight(),
                                         /*transpose_lhs=*/UnitAttr(),
                                         /*transpose_rhs=*/b.getUnitAttr());
  operandGradients[1] = MatmulOp::create(b, getLoc(), getInput(), dy,
                                         /*transpose_lhs=*/b.getUnitAttr(),
                                         /*transpose_rhs=*/UnitAttr());
  if (getBias())
    operandGradients[2] = ReduceSumOp::create(b, getLoc(), dy);
  return success();
}

LogicalResult ReshapeOp::buildGradients(OpBuilder &b,
                                        ArrayRef<Value> resultGradients,
                                        SmallVectorImpl<Value> &operandGradients) {
  if (Value dy = prepare(*this, resultGradients, operandGradients))
    operandGradients[0] =
        ReshapeOp::create(b, getLoc(), getInput().getType(), dy);
  return success();
}

LogicalResult CastOp::buildGradients(OpBuilder &b,
                                     ArrayRef<Value> resultGradients,
                                     SmallVectorImpl<Value> &operandGradients) {
  if (Value dy = prepare(*this, resultGradients, operandGradients))
    operandGradients[0] = CastOp::create(b, getLoc(), getInput().getType(), dy);
  return success();
}

LogicalResult SoftmaxCrossEntropyOp::buildGradients(
    OpBuilder &b, ArrayRef<Value> resultGradients,
    SmallVectorImpl<Value> &operandGradients) {
  if (Value dloss = prepare(*this, resultGradients, operandGradients))
    operandGradients[0] = SoftmaxCrossEntropyBackwardOp::create(
        b, getLoc(), getLogits().getType(), dloss, getLogits(), getLabels(),
        getLabelSmoothingAttr());
  return success();
}

//===----------------------------------------------------------------------===//
// Data movement: each gradient moves dy back.
//===----------------------------------------------------------------------===//

LogicalResult ConcatOp::buildGradients(OpBuilder &b,
                                       ArrayRef<Value> resultGradients,
                                       SmallVectorImpl<Value> &operandGradients) {
  Value dy = prepare(*this, resultGradients, operandGradients);
  if (!dy)
    return success();
  int64_t axis = getAxis(), offset = 0;
  for (auto [i, input] : llvm::enumerate(getInputs())) {
    int64_t size = cast<RankedTensorType>(input.getType()).getDimSize(axis);
    operandGradients[i] =
        SliceOp::create(b, getLoc(), dy, axis, offset, size);
    offset += size;
  }
  return success();
}

LogicalResult SliceOp::buildGradients(OpBuilder &b,
                                      ArrayRef<Value> resultGradients,
                                      SmallVectorImpl<Value> &operandGradients) {
  if (Value dy = prepare(*this, resultGradients, operandGradients))
    operandGradients[0] = SliceBackwardOp::create(
        b, getLoc(), dy, getAxis(), getStart(),
        cast<RankedTensorType>(getInput().getType()).getDimSize(getAxis()));
  return success();
}

LogicalResult
ChannelShuffleOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGradients,
                                 SmallVectorImpl<Value> &operandGradients) {
  // Shuffling C channels in g groups transposes a [g, C/g] matrix; the
  // shuffle in C/g groups transposes it back.
  if (Value dy = prepare(*this, resultGradients, operandGradients)) {
    int64_t channels = cast<RankedTensorType>(dy.getType()).getDimSize(3);
    operandGradients[0] =
        ChannelShuffleOp::create(b, getLoc(), dy, channels / getGroups());
  }
  return success();
}

LogicalResult
TransposeOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGradients,
                            SmallVectorImpl<Value> &operandGradients) {
  if (Value dy = prepare(*this, resultGradients, operandGradients)) {
    ArrayRef<int64_t> permutation = getPermutation();
    SmallVector<int64_t> inverse(permutation.size());
    for (auto [i, p] : llvm::enumerate(permutation))
      inverse[p] = int64_t(i);
    operandGradients[0] = TransposeOp::create(b, getLoc(), dy, inverse);
  }
  return success();
}
