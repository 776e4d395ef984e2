//===- KilnLayout.h - Physical layouts of activations -----------*- C++ -*-===//
//
// How kiln ops store their activations (LayoutOpInterface, `kiln.layout`,
// `kiln.reorder`): the queries `--kiln-layout` and the x86 lowering share.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_KILN_IR_KILNLAYOUT_H
#define KILN_DIALECT_KILN_IR_KILNLAYOUT_H

#include "dialects/Kiln/IR/KilnInterfaces.h"

#include <optional>

namespace kiln {

class ReorderOp;

/// The discardable attribute holding the layout an op computes in (a
/// ComputeLayoutAttr, #kiln.layout<nhwc> or #kiln.layout<nChw16c>; NHWC when
/// absent).
inline constexpr llvm::StringLiteral kLayoutAttrName = "kiln.layout";

/// Whether `op` can compute in `layout`: NHWC always; nChw16c if it is a
/// LayoutOpInterface op whose activations all have a multiple of 16
/// channels (so blocking pads nothing) and that can otherwise
/// (canComputeBlocked).
bool canComputeIn(mlir::Operation *op, Layout layout);

/// The layout `op` computes in.
Layout getComputeLayout(mlir::Operation *op);
/// Records it (removes the attribute for NHWC).
void setComputeLayout(mlir::Operation *op, Layout layout);

/// How `value` is stored: a layout result of a LayoutOpInterface op in the
/// op's layout, the result of a kiln.reorder in its target, anything else
/// (block arguments, filters, results of other ops) NHWC.
Layout getStorageLayout(mlir::Value value);

/// The layout `use` must be stored in for its owner to read it, or none for
/// operands that are not 4-D or that a kiln.reorder reads.
std::optional<Layout> getExpectedLayout(mlir::OpOperand &use);

/// Whether `reorder` moves no data: its input is already stored as its
/// target, or in the same bytes (NHWC and nChw16c with exactly 16 channels,
/// where one block is a whole pixel). The x86 backend gives its result the
/// input's storage instead of copying. (`--kiln-layout` still charges it a
/// copy: its cost model does not know the runtime's Winograd kernel, which runs
/// the blocked 16-channel convolutions, and without that charge it moves
/// some of them to NHWC.)
bool isStorageNoOp(ReorderOp reorder);

/// Checks that every 4-D operand under `root` is stored as its user reads it;
/// emits an error at the first op that would read a wrong layout.
llvm::LogicalResult verifyLayouts(mlir::Operation *root);

} // namespace kiln

#endif // KILN_DIALECT_KILN_IR_KILNLAYOUT_H
