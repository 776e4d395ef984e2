//===- Fuse.h - Fusion patterns of the training step ------------*- C++ -*-===//

#ifndef KILN_PASSES_FUSION_FUSE_H
#define KILN_PASSES_FUSION_FUSE_H

#include "mlir/IR/PatternMatch.h"

namespace kiln {

/// Batch norm + relu in forward (train and inference), training batch norm
/// + residual add, and relu-backward + batch-norm backward: each pair
/// becomes one op, so one pass over the activations disappears per fusion.
void populateBatchNormReluFusionPatterns(mlir::RewritePatternSet &patterns);

/// A dense layer's weight gradient (matmul transpose_lhs) and bias gradient
/// (reduce_sum) of one output gradient become
/// kiln.fused_dense_backward_weights, which reads that gradient once.
void populateDenseGradientFusionPatterns(mlir::RewritePatternSet &patterns);

/// bias_add(conv2d) becomes conv2d with its bias operand, which a backend
/// adds as the convolution writes its output.
void populateConvBiasFusionPatterns(mlir::RewritePatternSet &patterns);

/// In the evaluation step: conv2d + batch_norm_inference, and the residual
/// add and relu after them, become kiln.fused_conv2d_batch_norm, which a
/// backend runs as one library convolution with post-ops.
void populateConvBatchNormFusionPatterns(mlir::RewritePatternSet &patterns);

/// In the training step: conv2d + batch_norm_train (with the residual and
/// relu it has taken) become kiln.fused_conv2d_batch_norm_train where the
/// x86 runtime's convolution kernel takes the batch statistics as it
/// writes its output.
void populateConvBatchNormTrainFusionPatterns(
    mlir::RewritePatternSet &patterns);
/// The same for a target whose every convolution takes the statistics as it
/// writes its output (the systolic target's vector unit, in the epilogue).
void populateConvBatchNormTrainFusionPatternsAnyKernel(
    mlir::RewritePatternSet &patterns);

/// A sum of kiln.slice_backward ops whose parts tile the axis (the gradient
/// of a split value) becomes the kiln.concat of their output gradients.
void populateSliceGradientFusionPatterns(mlir::RewritePatternSet &patterns);

/// Chains of ops implementing ElementwiseOpInterface (a residual add and its
/// relu, gradient sums and relu masks, casts) become kiln.fused_elementwise:
/// one pass over memory instead of one per op. Values of the chain used
/// elsewhere are yielded; chains stop where that would break dominance.
void populateElementwiseFusionPatterns(mlir::RewritePatternSet &patterns);

/// The kiln.sgd_update ops of a block that share their hyperparameters
/// become one kiln.fused_sgd_update: one kernel for all parameters. The
/// casts of new weights to their bf16 copies go into the fused update, or
/// into a kiln.lars_update's `copy` result.
void populateOptimizerFusionPatterns(mlir::RewritePatternSet &patterns);

} // namespace kiln

#endif // KILN_PASSES_FUSION_FUSE_H
