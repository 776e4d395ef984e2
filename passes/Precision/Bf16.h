//===- Bf16.h - Mixed precision with bf16 compute ---------------*- C++ -*-===//

#ifndef KILN_PASSES_PRECISION_BF16_H
#define KILN_PASSES_PRECISION_BF16_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"

namespace kiln {

/// Rewrites `func` to the bf16 policy of its ops' PrecisionOpInterface:
/// casts before compute ops, bf16 flowing through follow ops, f32 for the
/// loss; inputs only ever cast to bf16 become bf16 inputs.
llvm::LogicalResult castToBf16(mlir::func::FuncOp func);

/// Gives every f32 parameter that functions of `module` read through a bf16
/// cast a bf16 copy variable (`@w.bf16`, initializer `copy of @w`): the
/// casts become reads of the copy, and each assignment of `@w` is followed
/// by one of its rounded value to the copy. Run after the optimizer.
llvm::LogicalResult keepBf16WeightCopies(mlir::ModuleOp module);

/// Patterns that fold casts into the ops around them (e.g. a filter gradient
/// produced in bf16 and cast to f32 is produced in f32 directly).
void populateCastFoldingPatterns(mlir::RewritePatternSet &patterns);

} // namespace kiln

#endif // KILN_PASSES_PRECISION_BF16_H
