//===- KilnFusionOps.cpp - Elementwise scalar bodies and fused ops --------===//
//
// The scalar body of each elementwise op (ElementwiseOpInterface) and the
// verifiers of the ops --kiln-fuse builds. Arithmetic is f32: bf16 operands
// are widened and bf16 results rounded, as the x86 bf16 instructions do.
//
//===----------------------------------------------------------------------===//

#include "dialects/Kiln/IR/KilnOps.h"
#include "dialects/Kiln/IR/ShapeRules.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace kiln;

static Type elementTypeOf(Value tensor) {
  return cast<RankedTensorType>(tensor.getType()).getElementType();
}

Value ReluOp::buildScalar(OpBuilder &b, Location loc, ValueRange operands) {
  // Exact in any type; bf16 is compared as f32 all the same, because x86
  // has no bf16 max and LLVM would scalarize it. maximumf propagates NaN
  // as the reference does.
  Value x = widenToF32(b, loc, operands[0]);
  Value zero = floatConstant(b, loc, x.getType(), 0.0);
  return narrowTo(b, loc, arith::MaximumFOp::create(b, loc, x, zero),
                  operands[0].getType());
}

Value AddOp::buildScalar(OpBuilder &b, Location loc, ValueRange operands) {
  Value sum = arith::AddFOp::create(b, loc, widenToF32(b, loc, operands[0]),
                                    widenToF32(b, loc, operands[1]));
  return narrowTo(b, loc, sum, elementTypeOf(getOutput()));
}

Value ReluBackwardOp::buildScalar(OpBuilder &b, Location loc,
                                  ValueRange operands) {
  // dy where the forward output is positive: a select, exact in any type
  // (the comparison in f32, as for relu).
  Value y = widenToF32(b, loc, operands[1]);
  Value positive =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, y,
                            floatConstant(b, loc, y.getType(), 0.0));
  Value zero = floatConstant(b, loc, operands[0].getType(), 0.0);
  return arith::SelectOp::create(b, loc, positive, operands[0], zero);
}

/// 1 / (1 + exp(-x)) in f32, in the reference's order of operations.
static Value sigmoidF32(OpBuilder &b, Location loc, Value x) {
  Value one = floatConstant(b, loc, x.getType(), 1.0);
  Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, x));
  return arith::DivFOp::create(b, loc, one,
                               arith::AddFOp::create(b, loc, one, e));
}

/// min(max(v, 0), 6), NaN propagating (as the reference's std::isnan test).
static Value relu6F32(OpBuilder &b, Location loc, Value v) {
  Value lo = arith::MaximumFOp::create(b, loc, v,
                                       floatConstant(b, loc, v.getType(), 0.0));
  return arith::MinimumFOp::create(b, loc, lo,
                                   floatConstant(b, loc, v.getType(), 6.0));
}

/// The formulas are those of reference/src/activation.cpp, operation for
/// operation, so that the compiled step and kiln-run round alike.
Value ActivationOp::buildScalar(OpBuilder &b, Location loc,
                                ValueRange operands) {
  Value x = widenToF32(b, loc, operands[0]);
  auto c = [&](double v) { return floatConstant(b, loc, x.getType(), v); };
  Value y;
  switch (getKind()) {
  case ActivationKind::Sigmoid:
    y = sigmoidF32(b, loc, x);
    break;
  case ActivationKind::SiLU:
    y = arith::MulFOp::create(b, loc, x, sigmoidF32(b, loc, x));
    break;
  case ActivationKind::ReLU6:
    y = relu6F32(b, loc, x);
    break;
  case ActivationKind::HardSigmoid:
    y = arith::DivFOp::create(
        b, loc, relu6F32(b, loc, arith::AddFOp::create(b, loc, x, c(3.0))),
        c(6.0));
    break;
  case ActivationKind::HardSwish:
    y = arith::DivFOp::create(
        b, loc,
        arith::MulFOp::create(
            b, loc, x,
            relu6F32(b, loc, arith::AddFOp::create(b, loc, x, c(3.0)))),
        c(6.0));
    break;
  }
  return narrowTo(b, loc, y, operands[0].getType());
}

Value ActivationBackwardOp::buildScalar(OpBuilder &b, Location loc,
                                        ValueRange operands) {
  Value dy = widenToF32(b, loc, operands[0]);
  Value x = widenToF32(b, loc, operands[1]);
  auto c = [&](double v) { return floatConstant(b, loc, x.getType(), v); };
  auto cmp = [&](arith::CmpFPredicate p, Value l, double r) {
    return arith::CmpFOp::create(b, loc, p, l, c(r));
  };
  auto mul = [&](Value l, Value r) {
    return arith::MulFOp::create(b, loc, l, r).getResult();
  };
  Value zero = c(0.0);
  Value dx;
  switch (getKind()) {
  case ActivationKind::Sigmoid: {
    Value s = sigmoidF32(b, loc, x);
    dx = mul(dy, mul(s, arith::SubFOp::create(b, loc, c(1.0), s)));
    break;
  }
  case ActivationKind::SiLU: {
    Value s = sigmoidF32(b, loc, x);
    Value t = mul(x, arith::SubFOp::create(b, loc, c(1.0), s));
    dx = mul(dy, mul(s, arith::AddFOp::create(b, loc, c(1.0), t)));
    break;
  }
  case ActivationKind::ReLU6: {
    // Open interval, as PyTorch's hardtanh_backward.
    Value inside =
        arith::AndIOp::create(b, loc, cmp(arith::CmpFPredicate::OGT, x, 0.0),
                              cmp(arith::CmpFPredicate::OLT, x, 6.0));
    dx = arith::SelectOp::create(b, loc, inside, dy, zero);
    break;
  }
  case ActivationKind::HardSigmoid: {
    Value inside =
        arith::AndIOp::create(b, loc, cmp(arith::CmpFPredicate::OGT, x, -3.0),
                              cmp(arith::CmpFPredicate::OLT, x, 3.0));
    dx = arith::SelectOp::create(b, loc, inside, mul(dy, c(1.0f / 6.0f)), zero);
    break;
  }
  case ActivationKind::HardSwish: {
    // 0 below -3, dy (x/3 + 1/2) up to 3 inclusive, dy above (PyTorch's
    // hardswish_backward).
    Value middle =
        mul(dy, arith::AddFOp::create(
                    b, loc, arith::DivFOp::create(b, loc, x, c(3.0)), c(0.5)));
    Value upper = arith::SelectOp::create(
        b, loc, cmp(arith::CmpFPredicate::OLE, x, 3.0), middle, dy);
    dx = arith::SelectOp::create(
        b, loc, cmp(arith::CmpFPredicate::OLT, x, -3.0), zero, upper);
    break;
  }
  }
  return narrowTo(b, loc, dx, operands[0].getType());
}

Value CastOp::buildScalar(OpBuilder &b, Location loc, ValueRange operands) {
  return narrowTo(b, loc, widenToF32(b, loc, operands[0]), elementTypeOf(getOutput()));
}

//===----------------------------------------------------------------------===//
// kiln.fused_elementwise
//===----------------------------------------------------------------------===//

static ArrayRef<int64_t> shapeOf(Type type) {
  return cast<RankedTensorType>(type).getShape();
}

LogicalResult FusedElementwiseOp::verify() {
  if (getInputs().empty() || getOutputs().empty())
    return emitOpError("needs at least one operand and one result");
  ArrayRef<int64_t> shape = shapeOf(getInputs().front().getType());
  for (Type type :
       llvm::concat<const Type>(getInputs().getTypes(), getResultTypes()))
    if (shapeOf(type) != shape)
      return emitOpError("operands and results must have one shape, got ")
             << type << " and " << getInputs().front().getType();
  return success();
}

LogicalResult FusedElementwiseOp::verifyRegions() {
  Block &body = getBody().front();
  if (!llvm::equal(body.getArgumentTypes(), getInputs().getTypes()))
    return emitOpError("body arguments must have the operands' types");
  // Elementwise ops keep their operands' shape, so the body has one shape.
  for (Operation &op : body.without_terminator())
    if (!isa<ElementwiseOpInterface>(op) || op.getNumResults() != 1)
      return emitOpError("body may hold only elementwise kiln ops, found ")
             << op.getName();
  auto yield = dyn_cast<YieldOp>(body.getTerminator());
  if (!yield)
    return emitOpError("body must end with kiln.yield");
  if (!llvm::equal(yield.getValues().getTypes(), getResultTypes()))
    return emitOpError("yields ")
           << yield.getValues().size()
           << " values whose types differ from the results'";
  return success();
}

//===----------------------------------------------------------------------===//
// kiln.fused_sgd_update
//===----------------------------------------------------------------------===//

LogicalResult FusedSgdUpdateOp::verify() {
  if (getWeights().empty())
    return emitOpError("needs at least one parameter");
  if (!getNewCopies().empty() && getNewCopies().size() != getWeights().size())
    return emitOpError("has ")
           << getNewCopies().size() << " copies for " << getWeights().size()
           << " parameters: one each, or none";
  for (auto [i, w] : llvm::enumerate(getWeights().getTypes())) {
    if (getGradients()[i].getType() != w || getVelocities()[i].getType() != w ||
        getNewWeights()[i].getType() != w ||
        getNewVelocities()[i].getType() != w)
      return emitOpError("parameter ")
             << i
             << ": weight, gradient, velocity and results must have one "
                "type";
    if (!getNewCopies().empty() &&
        cast<RankedTensorType>(getNewCopies()[i].getType()).getShape() !=
            cast<RankedTensorType>(w).getShape())
      return emitOpError("parameter ") << i
                                       << ": the copy's shape differs "
                                          "from the weight's";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// kiln.fused_conv2d_batch_norm
//===----------------------------------------------------------------------===//

/// The convolution part of a fused convolution: one element type, a
/// static HWIO filter matching the input's channels, and `output` (named
/// `name` in messages) shaped as the convolution's result.
template <typename FusedConvOp>
static LogicalResult verifyFusedConvolution(FusedConvOp op,
                                            RankedTensorType output,
                                            StringRef name) {
  auto input = op.getInput().getType();
  auto filter = op.getFilter().getType();
  if (input.getElementType() != filter.getElementType() ||
      output.getElementType() != input.getElementType())
    return op.emitOpError("input, filter and ")
           << name << " must have one element type";
  if (!filter.hasStaticShape())
    return op.emitOpError("the filter shape must be static");
  if (!ShapedType::isDynamic(input.getDimSize(3)) &&
      input.getDimSize(3) != filter.getDimSize(2))
    return op.emitOpError("input has ")
           << input.getDimSize(3) << " channels but the filter (HWIO) expects "
           << filter.getDimSize(2);
  SmallVector<int64_t> spatial;
  if (failed(inferWindowSpatialSize(op.getLoc(), op.getOperationName(), input,
                                    filter.getShape().take_front(2),
                                    op.getStrides(), op.getPadding(),
                                    op.getDilations(), spatial)))
    return failure();
  SmallVector<int64_t> expected = {input.getDimSize(0), spatial[0], spatial[1],
                                   filter.getDimSize(3)};
  if (!shapesCompatible(output.getShape(), expected))
    return op.emitOpError()
           << name << " shape [" << formatShape(output.getShape())
           << "] is not the convolution's [" << formatShape(expected) << "]";
  return success();
}

LogicalResult FusedConv2DBatchNormOp::verify() {
  auto output = getOutput().getType();
  if (failed(verifyFusedConvolution(*this, output, "output")))
    return failure();
  if (failed(checkBatchNormOperands(getLoc(), getOperationName(), getOutput(),
                                    {{"scale", getScale()},
                                     {"offset", getOffset()},
                                     {"mean", getMean()},
                                     {"variance", getVariance()}})))
    return failure();
  if (Value residual = getResidual(); residual && residual.getType() != output)
    return emitOpError("residual type ")
           << residual.getType() << " differs from the output type " << output;
  return success();
}

int64_t FusedConv2DBatchNormOp::getMultiplyAdds(int64_t dynamicDimSize) {
  auto filter = getFilter().getType();
  return numElementsWith(getOutput().getType(), dynamicDimSize) *
         filter.getDimSize(0) * filter.getDimSize(1) * filter.getDimSize(2);
}

//===----------------------------------------------------------------------===//
// kiln.fused_conv2d_batch_norm_train
//===----------------------------------------------------------------------===//

LogicalResult FusedConv2DBatchNormTrainOp::verify() {
  auto conv = getConvOutput().getType();
  if (failed(verifyFusedConvolution(*this, conv, "convolution output")))
    return failure();
  if (getOutput().getType() != conv)
    return emitOpError("output type ")
           << getOutput().getType()
           << " differs from the convolution output type " << conv;
  if (failed(checkBatchNormOperands(getLoc(), getOperationName(),
                                    getConvOutput(),
                                    {{"scale", getScale()},
                                     {"offset", getOffset()},
                                     {"running_mean", getRunningMean()},
                                     {"running_var", getRunningVar()}})))
    return failure();
  for (Value statistic :
       {getBatchMean(), getBatchVar(), getNewRunningMean(), getNewRunningVar()})
    if (statistic.getType() != getScale().getType())
      return emitOpError("statistics must be typed like the scale, ")
             << getScale().getType();
  if (Value residual = getResidual(); residual && residual.getType() != conv)
    return emitOpError("residual type ")
           << residual.getType() << " differs from the output type " << conv;
  return success();
}

int64_t FusedConv2DBatchNormTrainOp::getMultiplyAdds(int64_t dynamicDimSize) {
  auto filter = getFilter().getType();
  return numElementsWith(getConvOutput().getType(), dynamicDimSize) *
         filter.getDimSize(0) * filter.getDimSize(1) * filter.getDimSize(2);
}

//===----------------------------------------------------------------------===//
// kiln.fused_dense_backward_weights
//===----------------------------------------------------------------------===//

LogicalResult FusedDenseBackwardWeightsOp::verify() {
  auto x = getInput().getType(), dy = getOutputGrad().getType();
  auto dw = getWeightGrad().getType();
  auto db = cast<RankedTensorType>(getBiasGrad().getType());
  if (x.getElementType() != dy.getElementType() ||
      dw.getElementType() != x.getElementType() ||
      db.getElementType() != x.getElementType())
    return emitOpError("operands and results must have one element type");
  int64_t batch = x.getDimSize(0), rows = dy.getDimSize(0);
  if (!ShapedType::isDynamic(batch) && !ShapedType::isDynamic(rows) &&
      batch != rows)
    return emitOpError("input has ")
           << batch << " rows but the output gradient " << rows;
  SmallVector<int64_t> weights = {x.getDimSize(1), dy.getDimSize(1)};
  if (!shapesCompatible(dw.getShape(), weights) ||
      !shapesCompatible(db.getShape(), {dy.getDimSize(1)}))
    return emitOpError("gradients must be [")
           << formatShape(weights) << "] and [" << dy.getDimSize(1) << "], got "
           << dw << " and " << db;
  return success();
}

int64_t FusedDenseBackwardWeightsOp::getMultiplyAdds(int64_t dynamicDimSize) {
  int64_t batch = getInput().getType().getDimSize(0);
  if (ShapedType::isDynamic(batch))
    batch = dynamicDimSize;
  return numElementsWith(getWeightGrad().getType(), dynamicDimSize) * batch;
}

ParseResult kiln::parseParameterTypes(OpAsmParser &parser,
                                      SmallVectorImpl<Type> &weights,
                                      SmallVectorImpl<Type> &gradients,
                                      SmallVectorImpl<Type> &velocities,
                                      SmallVectorImpl<Type> &newWeights,
                                      SmallVectorImpl<Type> &newVelocities,
                                      SmallVectorImpl<Type> &newCopies) {
  if (parser.parseTypeList(weights))
    return failure();
  for (SmallVectorImpl<Type> *other :
       {&gradients, &velocities, &newWeights, &newVelocities})
    other->assign(weights.begin(), weights.end());
  Type copyElement;
  if (failed(parser.parseOptionalKeyword("copies")))
    return success();
  if (parser.parseType(copyElement))
    return failure();
  for (Type weight : weights)
    newCopies.push_back(cast<RankedTensorType>(weight).clone(copyElement));
  return success();
}

void kiln::printParameterTypes(OpAsmPrinter &printer, Operation *,
                               TypeRange weights, TypeRange, TypeRange,
                               TypeRange, TypeRange, TypeRange newCopies) {
  llvm::interleaveComma(weights, printer);
  if (!newCopies.empty())
    printer << " copies "
            << cast<RankedTensorType>(newCopies.front()).getElementType();
}
