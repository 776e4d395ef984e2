//===- Autodiff.h - Reverse-mode differentiation of kiln functions -*- C++ -*-===//

#ifndef KILN_PASSES_AUTODIFF_AUTODIFF_H
#define KILN_PASSES_AUTODIFF_AUTODIFF_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace kiln {

/// The result attribute that marks a training-step result as the gradient of
/// a parameter (a FlatSymbolRefAttr naming the kiln.variable).
inline constexpr llvm::StringLiteral kGradientOfAttr = "kiln.gradient_of";

/// Builds, next to `forward`, a function `stepName` that computes the same
/// results followed by the gradient of the first result (the scalar loss)
/// with respect to every parameter the loss depends on, in declaration
/// order, each marked with `kGradientOfAttr`. Ops are differentiated through
/// GradientOpInterface; reads of parameters collect the gradients.
mlir::FailureOr<mlir::func::FuncOp> buildTrainStep(mlir::func::FuncOp forward,
                                                   llvm::StringRef stepName);

} // namespace kiln

#endif // KILN_PASSES_AUTODIFF_AUTODIFF_H
