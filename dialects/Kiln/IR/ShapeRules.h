//===- ShapeRules.h - Shape rules shared by kiln ops ------------*- C++ -*-===//
//
// The forward shape rules, shared by forward ops (which infer their results)
// and backward ops (which check their given results against the forward op
// they invert). Errors go to `loc` when present, prefixed with the op name.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_KILN_IR_SHAPERULES_H
#define KILN_DIALECT_KILN_IR_SHAPERULES_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/Value.h"

#include <optional>
#include <string>

namespace kiln {

/// Product of the dimensions, each dynamic one counted as `dynamicDimSize`.
int64_t numElementsWith(mlir::ShapedType type, int64_t dynamicDimSize);

/// True if the shapes have the same rank and agree wherever both are static.
bool shapesCompatible(llvm::ArrayRef<int64_t> a, llvm::ArrayRef<int64_t> b);

/// "?, 4, 4, 8".
std::string formatShape(llvm::ArrayRef<int64_t> shape);

/// The output height and width of a sliding-window op (conv2d, pools) over
/// an NHWC `input`; fails with a diagnostic when the window does not fit.
/// `ceilMode` is pooling's (kiln/ref/window.h).
llvm::LogicalResult inferWindowSpatialSize(
    std::optional<mlir::Location> loc, llvm::StringRef opName,
    mlir::RankedTensorType input, llvm::ArrayRef<int64_t> window,
    llvm::ArrayRef<int64_t> strides, llvm::ArrayRef<int64_t> padding,
    llvm::ArrayRef<int64_t> dilations, llvm::SmallVectorImpl<int64_t> &out,
    bool ceilMode = false);

/// Checks the channels of a grouped convolution (conv2d and its gradients):
/// `groups` positive, the filter's output channels `filterOut` a multiple of
/// it, and `inputChannels` (skipped when dynamic) equal to `groups` times the
/// filter's per-group input channels `filterIn`. `what` names the operand
/// with `inputChannels` ("input", "input gradient") and `filterWhat` the
/// filter operand ("filter (HWIO)", "filter gradient").
llvm::LogicalResult checkConvGroups(std::optional<mlir::Location> loc,
                                    llvm::StringRef opName,
                                    llvm::StringRef what,
                                    int64_t inputChannels,
                                    llvm::StringRef filterWhat,
                                    int64_t filterIn, int64_t filterOut,
                                    int64_t groups);

/// Checks that `operand` broadcasts to `full` (numpy's rule without rank
/// extension: one rank, each dimension equal to `full`'s or 1; a dynamic
/// dimension matches a dynamic one or 1) and that both have one element
/// type. `what` names `operand` in the message.
llvm::LogicalResult checkBroadcastsTo(std::optional<mlir::Location> loc,
                                      llvm::StringRef opName,
                                      llvm::StringRef what,
                                      mlir::RankedTensorType operand,
                                      mlir::RankedTensorType full);

/// The shape both `lhs` and `rhs` broadcast to (numpy's rule without rank
/// extension: one rank and element type; along each dimension the sizes
/// are equal or one is 1, and the result takes the other; a dynamic size
/// pairs with itself or 1).
llvm::FailureOr<mlir::RankedTensorType>
inferBroadcast(std::optional<mlir::Location> loc, llvm::StringRef opName,
               mlir::RankedTensorType lhs, mlir::RankedTensorType rhs);

/// Checks a batch-norm input (NHWC or NC, static channels) and that each
/// named per-channel vector has one element per channel; returns the channel
/// count.
llvm::FailureOr<int64_t> checkBatchNormOperands(
    std::optional<mlir::Location> loc, llvm::StringRef opName,
    mlir::Value input,
    llvm::ArrayRef<std::pair<llvm::StringRef, mlir::Value>> vectors);

} // namespace kiln

#endif // KILN_DIALECT_KILN_IR_SHAPERULES_H
