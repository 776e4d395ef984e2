//===- Bf16.h - Mixed precision with bf16 compute ---------------*- C++ -*-===//

#ifndef KILN_PASSES_PRECISION_BF16_H
#define KILN_PASSES_PRECISION_BF16_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/PatternMatch.h"

namespace kiln {

/// Rewrites `func` to the bf16 policy of its ops' PrecisionOpInterface:
/// casts before compute ops, bf16 flowing through follow ops, f32 for the
/// loss; inputs only ever cast to bf16 become bf16 inputs.
llvm::LogicalResult castToBf16(mlir::func::FuncOp func);

/// Patterns that fold casts into the ops around them (e.g. a filter gradient
/// produced in bf16 and cast to f32 is produced in f32 directly).
void populateCastFoldingPatterns(mlir::RewritePatternSet &patterns);

} // namespace kiln

#endif // KILN_PASSES_PRECISION_BF16_H
