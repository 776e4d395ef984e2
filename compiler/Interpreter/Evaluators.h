//===- Evaluators.h - Per-op evaluation, shared by the op families -*- C++
//-*-===//
//
// Part of Kiln. Internal to the interpreter: the state one call works on and
// the entry points of the op families (EvalLayers.cpp, EvalGradients.cpp,
// EvalTraining.cpp). An evaluator reads its operands' values, validates the
// runtime shapes with the reference kernels' Status-returning checks (so a
// bad input is an error at the op, never an abort inside a kernel), runs the
// kernel and binds the results. The walker then rounds bf16 results and
// checks every result against its static type.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_INTERPRETER_EVALUATORS_H
#define KILN_COMPILER_INTERPRETER_EVALUATORS_H

#include "compiler/Interpreter/Interpreter.h"

#include "dialects/Kiln/IR/KilnOps.h"
#include "kiln/base/status.h"
#include "kiln/ref/activation.h"
#include "kiln/ref/conv.h"
#include "kiln/ref/dropout.h"
#include "kiln/ref/elementwise.h"
#include "kiln/ref/pool.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/DenseMap.h"

#include <algorithm>
#include <optional>

namespace kiln::interp::detail {

class EvalContext {
public:
  EvalContext(const VariableStore &store, const CallOptions &options)
      : store(store), options(options) {}

  /// The value bound to `v` (bound by an earlier op or as an argument).
  const HostTensor &get(mlir::Value v) const;
  HostTensor &getMutable(mlir::Value v);
  void set(mlir::Value v, HostTensor tensor);
  /// Binds float data to `v`, typed f32 or bf16 as `v`'s type says.
  void setFloat(mlir::Value v, ref::Tensor tensor);
  /// Drops the value of `v` (after its last use).
  void erase(mlir::Value v) { frame.erase(v); }

  /// An error diagnostic at `op`, prefixed with the call's context.
  mlir::InFlightDiagnostic error(mlir::Operation *op);
  /// Emits `status`'s message at `op` if it failed.
  mlir::LogicalResult check(mlir::Operation *op, const kiln::Status &status);
  /// Fails with a message naming the two shapes unless they are equal.
  mlir::LogicalResult checkSameShape(mlir::Operation *op, const char *what,
                                     const ref::Shape &actual,
                                     const ref::Shape &expected);

  /// The mask of the next ReLU of the call: replayed from the frozen
  /// pattern, or `x > 0`; recorded if the call records. Fails if a frozen
  /// pattern does not fit (a different function or shape).
  mlir::FailureOr<std::vector<uint8_t>>
  nextReluMask(mlir::Operation *op, const std::vector<float> &x);
  /// Likewise for the winners of the next max-pool (`computed` holds the
  /// ones found in the data).
  mlir::FailureOr<std::vector<int64_t>>
  nextPoolWinners(mlir::Operation *op, std::vector<int64_t> computed);

  const VariableStore &store;
  const CallOptions &options;
  std::vector<Assignment> assignments;

private:
  llvm::DenseMap<mlir::Value, HostTensor> frame;
  size_t relus = 0, pools = 0;
};

/// The concrete shape of `type`, its dynamic dimensions (only the batch may
/// be dynamic) taken to be `batch`.
ref::Shape resolveShape(mlir::Type type, int64_t batch);

/// The reference kernels' attribute structs from an op's attributes.
ref::Conv2dAttrs convAttrs(llvm::ArrayRef<int64_t> strides,
                           llvm::ArrayRef<int64_t> padding,
                           llvm::ArrayRef<int64_t> dilations,
                           int64_t groups = 1);
ref::Activation activationOf(ActivationKind kind);
ref::BinaryKind binaryKindOf(BinaryKind kind);
template <typename PoolOp> ref::Pool2dAttrs poolAttrs(PoolOp op) {
  ref::Pool2dAttrs attrs;
  std::copy(op.getWindow().begin(), op.getWindow().end(), attrs.window.begin());
  std::copy(op.getStrides().begin(), op.getStrides().end(),
            attrs.strides.begin());
  std::copy(op.getPadding().begin(), op.getPadding().end(),
            attrs.padding.begin());
  attrs.ceilMode = op.getCeilMode();
  return attrs;
}

/// Class labels (an i32 tensor) as the loss kernels take them.
std::vector<int32_t> labelsOf(const HostTensor &labels);

/// The op families. Each returns std::nullopt for an op it does not know.
std::optional<mlir::LogicalResult> evaluateLayerOp(mlir::Operation *op,
                                                   EvalContext &ctx);
std::optional<mlir::LogicalResult> evaluateGradientOp(mlir::Operation *op,
                                                      EvalContext &ctx);
std::optional<mlir::LogicalResult> evaluateTrainingOp(mlir::Operation *op,
                                                      EvalContext &ctx);

} // namespace kiln::interp::detail

#endif // KILN_COMPILER_INTERPRETER_EVALUATORS_H
