//===- KilnToSa.h - Lowering kiln training steps to sa ----------*- C++ -*-===//

#ifndef KILN_PASSES_CONVERSION_KILNTOSA_KILNTOSA_H
#define KILN_PASSES_CONVERSION_KILNTOSA_KILNTOSA_H

#include "Graph.h"
#include "Planner.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace kiln::sa {

struct GraphOptions {
  /// Storage type of activations and their gradients (4-D tensors).
  fb::DType activationType = fb::DType::F32;
  /// Lower the 7x7/2 stem on the image input as a space-to-depth conv.
  bool spaceToDepthStem = false;
};

/// Builds the planner's graph of `step` (static shapes) and the module's
/// variables. Errors are emitted at the offending op.
mlir::LogicalResult buildGraph(mlir::ModuleOp module, mlir::func::FuncOp step,
                               const GraphOptions &options, Graph &graph);

/// The target configuration as an `sa.program` attribute.
mlir::DictionaryAttr targetToAttr(mlir::MLIRContext *context,
                                  const sim::TargetConfig &target);

/// Replaces the contents of `module` with the `sa.program` of `graph`.
mlir::LogicalResult convertToSa(mlir::ModuleOp module, const Graph &graph,
                                const sim::TargetConfig &target,
                                const PlanOptions &options);

} // namespace kiln::sa

#endif // KILN_PASSES_CONVERSION_KILNTOSA_KILNTOSA_H
