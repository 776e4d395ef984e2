//===- Fuse.h - Fusion patterns of the training step ------------*- C++ -*-===//

#ifndef KILN_PASSES_FUSION_FUSE_H
#define KILN_PASSES_FUSION_FUSE_H

#include "mlir/IR/PatternMatch.h"

namespace kiln {

/// Batch norm + relu in forward (train and inference) and relu-backward +
/// batch-norm backward: each pair becomes one op, so one pass over the
/// activations disappears in each direction.
void populateBatchNormReluFusionPatterns(mlir::RewritePatternSet &patterns);

} // namespace kiln

#endif // KILN_PASSES_FUSION_FUSE_H
