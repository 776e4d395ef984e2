//===- KilnInterfaces.h - Per-op knowledge of kiln ops ----------*- C++ -*-===//

#ifndef KILN_DIALECT_KILN_IR_KILNINTERFACES_H
#define KILN_DIALECT_KILN_IR_KILNINTERFACES_H

#include "mlir/IR/OpDefinition.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

#include "dialects/Kiln/IR/KilnEnums.h.inc"

#include "mlir/IR/Attributes.h"
#define GET_ATTRDEF_CLASSES
#include "dialects/Kiln/IR/KilnAttrs.h.inc"

namespace kiln {
/// How an op takes part in mixed precision (PrecisionOpInterface).
enum class Bf16Policy { Compute, Follow, F32 };

/// Scalar arithmetic runs in f32 (ElementwiseOpInterface and the loops of
/// the x86 lowering): a bf16 value is widened after loading and the result
/// rounded back to the element type before storing. Both take a scalar or a
/// vector of lanes; `type` may be the scalar element type of a vector `v`.
mlir::Value widenToF32(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v);
mlir::Value narrowTo(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v,
                     mlir::Type type);

/// A float constant of `type` at `b`'s insertion point, a splat if `type`
/// is a vector type (loop bodies over vector<16xT> elements).
mlir::Value floatConstant(mlir::OpBuilder &b, mlir::Location loc,
                          mlir::Type type, double value);

namespace detail {
/// Indices of the 4-D float tensors among `types` (LayoutOpInterface's
/// default activation operands and results).
llvm::SmallVector<unsigned> fourDimensionalFloats(mlir::TypeRange types);
} // namespace detail
} // namespace kiln

namespace kiln::OpTrait {
/// Marks the ops of the backward pass.
template <typename ConcreteType>
class BackwardOp : public mlir::OpTrait::TraitBase<ConcreteType, BackwardOp> {};
} // namespace kiln::OpTrait

#include "dialects/Kiln/IR/KilnInterfaces.h.inc"

#endif // KILN_DIALECT_KILN_IR_KILNINTERFACES_H
