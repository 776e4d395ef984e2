//===- AssignLayouts.h - Per-op activation layouts --------------*- C++ -*-===//
//
// The work of `--kiln-layout`, as functions a pipeline or a test can call.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PASSES_LAYOUT_ASSIGNLAYOUTS_H
#define KILN_PASSES_LAYOUT_ASSIGNLAYOUTS_H

#include "dialects/Kiln/IR/KilnLayout.h"
#include "passes/EnumOptionParser.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"

namespace kiln {

enum class LayoutMode {
  /// The layouts of least estimated time: convolution costs per layout
  /// (LayoutCostOpInterface, attached by the target) against the reorders a
  /// change of layout between a producer and a consumer needs.
  Auto,
  /// Everything NHWC (no reorders).
  Nhwc,
  /// nChw16c wherever an op can compute in it, reorders where needed.
  Blocked,
};

/// The layout each LayoutOpInterface op in `func`'s body should compute in.
/// Two layouts and a cost per op plus a cost per producer-consumer pair that
/// disagree is a minimum s-t cut, solved exactly (max-flow): the result is
/// the cheapest labelling, not a greedy one.
llvm::DenseMap<mlir::Operation *, Layout> chooseLayouts(mlir::func::FuncOp func,
                                                         LayoutMode mode);

/// Records `layouts` on the ops (`kiln.layout`) and inserts a kiln.reorder
/// before the first op that reads a value in another layout than it is
/// stored in (later readers share it). Returns the reorders inserted.
int64_t applyLayouts(mlir::func::FuncOp func,
                     const llvm::DenseMap<mlir::Operation *, Layout> &layouts);

/// Estimated seconds of converting `value` between layouts (a dynamic batch
/// counts one example).
double reorderSeconds(mlir::Value value);

} // namespace kiln

// kiln-layout's mode option (Passes.td) names its values in errors.
KILN_ENUM_OPTION_PARSER(::kiln::LayoutMode)

#endif // KILN_PASSES_LAYOUT_ASSIGNLAYOUTS_H
