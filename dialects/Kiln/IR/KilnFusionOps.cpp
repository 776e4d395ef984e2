//===- KilnFusionOps.cpp - Elementwise scalar bodies and fused ops --------===//
//
// The scalar body of each elementwise op (ElementwiseOpInterface) and the
// verifiers of the ops --kiln-fuse builds. Arithmetic is f32: bf16 operands
// are widened and bf16 results rounded, as the x86 bf16 instructions do.
//
//===----------------------------------------------------------------------===//

#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace kiln;

static Type elementTypeOf(Value tensor) {
  return cast<RankedTensorType>(tensor.getType()).getElementType();
}

Value ReluOp::buildScalar(OpBuilder &b, Location loc, ValueRange operands) {
  // Exact in bf16 too, so no widening; maximumf propagates NaN as the
  // reference does.
  Value zero = arith::ConstantOp::create(
      b, loc, b.getFloatAttr(operands[0].getType(), 0.0));
  return arith::MaximumFOp::create(b, loc, operands[0], zero);
}

Value AddOp::buildScalar(OpBuilder &b, Location loc, ValueRange operands) {
  Value sum = arith::AddFOp::create(b, loc, widenToF32(b, loc, operands[0]),
                                    widenToF32(b, loc, operands[1]));
  return narrowTo(b, loc, sum, elementTypeOf(getOutput()));
}

Value ReluBackwardOp::buildScalar(OpBuilder &b, Location loc,
                                  ValueRange operands) {
  // dy where the forward output is positive: a select, exact in any type.
  Value zero = arith::ConstantOp::create(
      b, loc, b.getFloatAttr(operands[1].getType(), 0.0));
  Value positive = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT,
                                         operands[1], zero);
  return arith::SelectOp::create(b, loc, positive, operands[0], zero);
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
  for (auto [i, w] : llvm::enumerate(getWeights().getTypes()))
    if (getGradients()[i].getType() != w || getVelocities()[i].getType() != w ||
        getNewWeights()[i].getType() != w ||
        getNewVelocities()[i].getType() != w)
      return emitOpError("parameter ")
             << i
             << ": weight, gradient, velocity and results must have one "
                "type";
  return success();
}

ParseResult kiln::parseParameterTypes(OpAsmParser &parser,
                                      SmallVectorImpl<Type> &weights,
                                      SmallVectorImpl<Type> &gradients,
                                      SmallVectorImpl<Type> &velocities,
                                      SmallVectorImpl<Type> &newWeights,
                                      SmallVectorImpl<Type> &newVelocities) {
  if (parser.parseTypeList(weights))
    return failure();
  for (SmallVectorImpl<Type> *other :
       {&gradients, &velocities, &newWeights, &newVelocities})
    other->assign(weights.begin(), weights.end());
  return success();
}

void kiln::printParameterTypes(OpAsmPrinter &printer, Operation *,
                               TypeRange weights, TypeRange, TypeRange,
                               TypeRange, TypeRange) {
  llvm::interleaveComma(weights, printer);
}
