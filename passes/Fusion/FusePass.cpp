//===- FusePass.cpp - kiln-fuse -------------------------------------------===//
//
// The pass: the fusion families' patterns (Fuse.h), in rounds.
//
//===----------------------------------------------------------------------===//

#include "passes/Fusion/Fuse.h"
#include "passes/Passes.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_KILNFUSE
#include "passes/Passes.h.inc"

namespace {
struct FusePass : impl::KilnFuseBase<FusePass> {
  using Base::Base;
  void runOnOperation() override {
    // Batch norm + relu (and residual) first: where a relu or add could go
    // either into a batch norm or into an elementwise chain, the batch norm
    // takes it (one pass less, and the chain fusion then starts from what
    // is left). Likewise a
    // residual add and relu go into a fused convolution before any chain.
    auto apply = [&](void (*populate)(RewritePatternSet &)) {
      RewritePatternSet patterns(&getContext());
      populate(patterns);
      return applyPatternsGreedily(getOperation(), std::move(patterns));
    };
    if (failed(apply(populateBatchNormReluFusionPatterns)) ||
        failed(apply(populateDenseGradientFusionPatterns)) ||
        (convBatchNorm && failed(apply(populateConvBatchNormFusionPatterns))) ||
        (convBatchNormTrain &&
         failed(apply(populateConvBatchNormTrainFusionPatterns))) ||
        failed(apply(populateConvBiasFusionPatterns)) ||
        failed(apply(populateSliceGradientFusionPatterns)) ||
        (elementwiseChains &&
         failed(apply(populateElementwiseFusionPatterns))) ||
        (optimizerUpdates && failed(apply(populateOptimizerFusionPatterns))))
      signalPassFailure();
  }
};
} // namespace
} // namespace kiln
