//===- Lowering.h - Shared state of the kiln-to-linalg lowering -*- C++ -*-===//
//
// The lowering walks a planned kiln function once, in order, and emits for
// each op loops (linalg on memref views of the arena, or scf for windowed
// ops) or a call of a runtime library kernel. Values are arena views at the
// offsets the memory plan chose; nothing is allocated at run time but
// scalar-sized stack temporaries.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PASSES_CONVERSION_KILNTOLINALG_LOWERING_H
#define KILN_PASSES_CONVERSION_KILNTOLINALG_LOWERING_H

#include "passes/Conversion/KilnToLinalg/MemoryPlan.h"

#include "kiln/rt/model.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/Support/JSON.h"

#include <functional>

namespace kiln {

class FusedConv2DBatchNormTrainOp;

/// The manifest's name of an element type: "f32", "bf16", "f64", "i32",
/// "i64" (model-abi.md).
llvm::StringRef manifestDtype(mlir::Type type);

/// Names of the runtime entry points the generated code calls
/// (docs/model-abi.md), spelled by the runtime's model.h.
inline constexpr llvm::StringLiteral kKernelCall = KILN_RT_KERNEL_CALL_SYMBOL;
inline constexpr llvm::StringLiteral kAllReduceStart =
    KILN_RT_ALLREDUCE_START_SYMBOL;
inline constexpr llvm::StringLiteral kAllReduceWait =
    KILN_RT_ALLREDUCE_WAIT_SYMBOL;

class Lowering {
public:
  Lowering(mlir::OpBuilder &builder, const FunctionPlan &plan,
           mlir::Value context, mlir::Value arena, llvm::StringRef role,
           llvm::json::Array &calls)
      : b(builder), plan(plan), context(context), arena(arena), role(role),
        calls(calls) {}

  mlir::OpBuilder &b;

  /// The memref view of the arena holding `value` (a static tensor).
  mlir::Value view(mlir::Value value);
  /// A view of `value`'s storage with another shape of the same size.
  mlir::Value viewAs(mlir::Value value, llvm::ArrayRef<int64_t> shape);
  /// The same with another element type: vector<16xT> elements over the
  /// channel blocks of an nChw16c activation (the loops then compute 16
  /// channels per element, whatever LLVM would do with 16-trip loops).
  mlir::Value viewAs(mlir::Value value, llvm::ArrayRef<int64_t> shape,
                     mlir::Type elementType);
  /// A view at an arbitrary arena offset.
  mlir::Value viewAt(mlir::Location loc, int64_t offset, mlir::MemRefType type);
  /// A one-dimensional view of `size` elements at a byte offset computed at
  /// run time.
  mlir::Value viewAt(mlir::Location loc, mlir::Value offset, mlir::Value size,
                     mlir::Type elementType);
  /// The arena byte offset the memory plan gave `value`.
  int64_t offsetOf(mlir::Value value) const;
  /// A constant i64 table in the module (a private memref.global) and its
  /// memref, for loops that look their operands up instead of having them
  /// unrolled into code.
  mlir::Value constantTable(mlir::Location loc, llvm::StringRef name,
                            llvm::ArrayRef<int64_t> values);

  /// `{"offset", "shape", "dtype"}` of `value` for the manifest, with the
  /// `layout` of 4-D activations (filters are HWIO, not activations).
  llvm::json::Object describe(mlir::Value value, bool activation = true) const;

  /// Records a library call in the manifest and emits the call to the
  /// runtime that runs it.
  void emitLibraryCall(mlir::Location loc, llvm::json::Object call);

  /// Calls a runtime entry point taking (context, i32).
  void emitRuntimeCall(mlir::Location loc, llvm::StringRef name, int32_t id);

  /// Index and float constants.
  mlir::Value index(mlir::Location loc, int64_t value);
  mlir::Value f32(mlir::Location loc, double value);
  /// A float constant of `type`, a splat if it is a vector type.
  mlir::Value constant(mlir::Location loc, mlir::Type type, double value);

  /// Loads the single element of a rank-0 value.
  mlir::Value loadScalar(mlir::Location loc, mlir::Value value);

  /// A linalg.generic over memrefs; every map given explicitly.
  void generic(mlir::Location loc, mlir::ValueRange inputs,
               mlir::ValueRange outputs, llvm::ArrayRef<mlir::AffineMap> maps,
               llvm::ArrayRef<mlir::utils::IteratorType> iterators,
               std::function<void(mlir::OpBuilder &, mlir::Location,
                                  mlir::ValueRange)>
                   body);
  /// A linalg.generic whose operands all have the same shape (identity maps).
  void elementwise(mlir::Location loc, mlir::ValueRange inputs,
                   mlir::ValueRange outputs,
                   std::function<void(mlir::OpBuilder &, mlir::Location,
                                      mlir::ValueRange)>
                       body);
  /// Fills a memref with a float.
  void fill(mlir::Location loc, mlir::Value memref, double value);

  /// A temporary of one op (per-channel coefficients, partial sums), in the
  /// arena's temporary region after the plan's scratch: it lives until the
  /// next op starts, so every op reuses the region from its start.
  mlir::Value temporary(mlir::Location loc, llvm::ArrayRef<int64_t> shape,
                        mlir::Type elementType);
  /// `describe` for a temporary (per-channel coefficients a library call
  /// reads).
  llvm::json::Object describeTemporary(mlir::Value view) const;
  /// Starts a new op: its temporaries reuse the region.
  void beginOp() {
    temporaryBytes = 0;
    temporaryOffsets.clear();
  }
  /// The size of the temporary region (the most any op used).
  int64_t getTemporaryRegionBytes() const { return temporaryRegionBytes; }

  /// Emits nested scf.for loops over [0, bounds[i]) and calls `body` with
  /// the induction variables at the innermost level.
  void loops(mlir::Location loc, llvm::ArrayRef<int64_t> bounds,
             std::function<void(mlir::ValueRange)> body);
  /// The same nest with an scf.parallel as its outermost loop, for nests
  /// whose first dimension (the batch) has independent iterations: the
  /// outlining pass runs it on every thread.
  void parallelLoops(mlir::Location loc, llvm::ArrayRef<int64_t> bounds,
                     std::function<void(mlir::ValueRange)> body);

  llvm::StringRef getRole() const { return role; }

private:
  const FunctionPlan &plan;
  mlir::Value context;
  mlir::Value arena;
  llvm::StringRef role;
  llvm::json::Array &calls;
  llvm::DenseMap<mlir::Value, mlir::Value> views;
  /// Arena offsets of this op's temporaries, by view.
  llvm::DenseMap<mlir::Value, int64_t> temporaryOffsets;
  int64_t temporaryBytes = 0;
  int64_t temporaryRegionBytes = 0;
};

/// The element type of loops over 16 channels at a time (nChw16c's block,
/// one AVX-512 register of f32): vector<16 x scalar>.
mlir::VectorType channelLanes(mlir::Type scalar);

/// scale = gamma / sqrt(var + eps), shift = beta - mean * scale, elementwise
/// over memrefs of one shape (f32 or vector<16xf32> elements): what batch
/// norm with these statistics multiplies and adds per channel.
void emitBatchNormCoefficients(Lowering &l, mlir::Location loc,
                               mlir::Value gamma, mlir::Value beta,
                               mlir::Value mean, mlir::Value var, float epsilon,
                               mlir::Value scale, mlir::Value shift);

/// Emits the loops or calls computing `op`. Fails with a diagnostic for an
/// op the x86 lowering does not handle.
llvm::LogicalResult lowerOp(Lowering &lowering, mlir::Operation *op);

// Per-family emitters (each in its own file).
llvm::LogicalResult lowerElementwise(Lowering &l, mlir::Operation *op);
llvm::LogicalResult lowerBatchNorm(Lowering &l, mlir::Operation *op);
llvm::LogicalResult lowerPooling(Lowering &l, mlir::Operation *op);
llvm::LogicalResult lowerLoss(Lowering &l, mlir::Operation *op);
llvm::LogicalResult lowerDataMovement(Lowering &l, mlir::Operation *op);
llvm::LogicalResult lowerOptimizer(Lowering &l, mlir::Operation *op);
llvm::LogicalResult lowerLibraryCall(Lowering &l, mlir::Operation *op);
llvm::LogicalResult lowerDropout(Lowering &l, mlir::Operation *op);

/// The convolution of a kiln.fused_conv2d_batch_norm_train as a library
/// call that also writes its output's batch statistics: returns them, a
/// temporary [2][C] f32 (means, then biased variances).
mlir::Value emitConvolutionWithStatistics(Lowering &l,
                                          FusedConv2DBatchNormTrainOp fused);

} // namespace kiln

#endif // KILN_PASSES_CONVERSION_KILNTOLINALG_LOWERING_H
