//===- KilnInterfaces.cpp - Per-op knowledge of kiln ops ------------------===//

#include "dialects/Kiln/IR/KilnInterfaces.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;

#include "dialects/Kiln/IR/KilnInterfaces.cpp.inc"

Value kiln::widenToF32(OpBuilder &b, Location loc, Value v) {
  if (auto vector = dyn_cast<VectorType>(v.getType());
      vector && vector.getElementType().isBF16())
    return arith::ExtFOp::create(b, loc, vector.clone(b.getF32Type()), v);
  if (v.getType().isBF16())
    return arith::ExtFOp::create(b, loc, b.getF32Type(), v);
  return v;
}

Value kiln::narrowTo(OpBuilder &b, Location loc, Value v, Type type) {
  if (auto vector = dyn_cast<VectorType>(v.getType());
      vector && !isa<VectorType>(type))
    type = vector.clone(type);
  if (type != v.getType())
    return arith::TruncFOp::create(b, loc, type, v);
  return v;
}

Value kiln::floatConstant(OpBuilder &b, Location loc, Type type, double value) {
  if (auto vector = dyn_cast<VectorType>(type))
    return arith::ConstantOp::create(
        b, loc,
        DenseElementsAttr::get(vector,
                               b.getFloatAttr(vector.getElementType(), value)));
  return arith::ConstantOp::create(b, loc, b.getFloatAttr(type, value));
}
