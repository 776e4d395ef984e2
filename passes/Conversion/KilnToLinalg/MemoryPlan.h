//===- MemoryPlan.h - Static arena layout of a training step ----*- C++ -*-===//
//
// Every tensor of a compiled step lives at a fixed byte offset of one arena:
// variables in a persistent region, all other values in a scratch region
// whose slots are reused once their values are dead (liveness over the
// step's linear op order, best-fit placement by decreasing size).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PASSES_CONVERSION_KILNTOLINALG_MEMORYPLAN_H
#define KILN_PASSES_CONVERSION_KILNTOLINALG_MEMORYPLAN_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

namespace kiln {

/// Byte alignment of every slot: a cache line, and what AVX-512 wants.
inline constexpr int64_t kSlotAlignment = 64;

int64_t alignSlot(int64_t bytes);

/// Bytes of a statically shaped tensor type.
int64_t tensorBytes(mlir::Type type);

/// The persistent region: one slot per kiln.variable, in declaration order.
struct VariableLayout {
  llvm::StringMap<int64_t> offsets;
  int64_t bytes = 0;
};

VariableLayout layOutVariables(mlir::ModuleOp module);

/// The scratch plan of one function. Values that share storage with another
/// (reads of variables, reshapes, in-place updates, allreduce results) map to
/// the offset of what they alias.
struct FunctionPlan {
  llvm::DenseMap<mlir::Value, int64_t> offsets;
  /// [scratchBegin, scratchEnd) is this function's scratch region.
  int64_t scratchBegin = 0;
  int64_t scratchEnd = 0;
  /// The sum of all scratch values' sizes, had nothing been reused.
  int64_t unplannedBytes = 0;
  /// Assignments whose value already sits in the variable's storage.
  llvm::DenseSet<mlir::Operation *> inPlaceAssigns;

  int64_t offsetOf(mlir::Value value) const { return offsets.lookup(value); }
};

/// Plans `func`, whose scratch region starts at `scratchBegin`. Fails with a
/// diagnostic on dynamic shapes.
llvm::FailureOr<FunctionPlan> planFunction(mlir::func::FuncOp func,
                                           const VariableLayout &variables,
                                           int64_t scratchBegin);

} // namespace kiln

#endif // KILN_PASSES_CONVERSION_KILNTOLINALG_MEMORYPLAN_H
