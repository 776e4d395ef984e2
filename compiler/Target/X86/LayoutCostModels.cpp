//===- LayoutCostModels.cpp - What a layout costs on x86 ------------------===//
//
// oneDNN's convolution times per layout, attached to the kiln convolutions as
// LayoutCostOpInterface external models: the dialect declares the question,
// the x86 target answers it (as IREE's compiler/Codegen/ExternalInterfaces).
//
//===----------------------------------------------------------------------===//

#include "compiler/Target/X86/LayoutCostModels.h"

#include "dialects/Kiln/IR/KilnDialect.h"
#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/IR/DialectRegistry.h"

using namespace mlir;

namespace kiln {

namespace {
enum class ConvDirection { Forward, BackwardData, BackwardFilter };
} // namespace

/// oneDNN's time in nChw16c relative to NHWC, summed over ResNet-50's
/// convolution shapes (batch 32, weights in each primitive's preferred
/// format): `kiln-bench-conv-layout [--dtype bf16]` on this project's AVX-512
/// machine, docs/performance.md. In f32 the blocked kernels win backward and
/// lose a little forward. In bf16 forward and backward data differ by 1%,
/// below what the benchmark resolves, so they count as equal; backward
/// filter is 2.4% slower blocked.
static double blockedTimeRatio(ConvDirection direction, Type elementType) {
  bool bf16 = elementType.isBF16();
  switch (direction) {
  case ConvDirection::Forward:
    return bf16 ? 1.0 : 1.04;
  case ConvDirection::BackwardData:
    return bf16 ? 1.0 : 0.94;
  case ConvDirection::BackwardFilter:
    return bf16 ? 1.024 : 0.87;
  }
  llvm_unreachable("unknown direction");
}

/// Seconds per multiply-add of oneDNN's NHWC kernels on two cores: about
/// 100 G/s forward in f32, twice that in bf16 (`--profile` of a ResNet-50
/// step), and the backward passes slower in the proportions of the same
/// benchmark's NHWC sums (f32 1 : 1.10 : 1.32, bf16 1 : 1.06 : 1.52).
static double secondsPerMultiplyAdd(ConvDirection direction, Type elementType) {
  bool bf16 = elementType.isBF16();
  double forward = bf16 ? 1.0 / 200e9 : 1.0 / 100e9;
  switch (direction) {
  case ConvDirection::Forward:
    return forward;
  case ConvDirection::BackwardData:
    return forward * (bf16 ? 1.06 : 1.10);
  case ConvDirection::BackwardFilter:
    return forward * (bf16 ? 1.52 : 1.32);
  }
  llvm_unreachable("unknown direction");
}

/// Estimated seconds of a convolution with `multiplyAdds` in `layout`.
static double convSeconds(ConvDirection direction, Type elementType,
                          int64_t multiplyAdds, Layout layout) {
  double seconds =
      double(multiplyAdds) * secondsPerMultiplyAdd(direction, elementType);
  return layout == Layout::NChw16c
             ? seconds * blockedTimeRatio(direction, elementType)
             : seconds;
}

/// The operand whose element type the library computes in.
static Value computeOperand(Conv2DOp op) { return op.getInput(); }
static Value computeOperand(FusedConv2DBatchNormOp op) { return op.getInput(); }
static Value computeOperand(FusedConv2DBatchNormTrainOp op) {
  return op.getInput();
}
static Value computeOperand(Conv2DBackwardDataOp op) {
  return op.getOutputGrad();
}
static Value computeOperand(Conv2DBackwardFilterOp op) { return op.getInput(); }

/// The channel groups of a convolution (the fused ones are never grouped).
template <typename ConvOp> static int64_t groupsOf(ConvOp) { return 1; }
static int64_t groupsOf(Conv2DOp op) { return int64_t(op.getGroups()); }
static int64_t groupsOf(Conv2DBackwardDataOp op) {
  return int64_t(op.getGroups());
}
static int64_t groupsOf(Conv2DBackwardFilterOp op) {
  return int64_t(op.getGroups());
}


namespace {
/// A convolution's time in a layout: its multiply-adds (a dynamic batch as
/// one example) at oneDNN's speed in that layout.
template <typename ConvOp, ConvDirection Direction>
struct ConvLayoutCost
    : LayoutCostOpInterface::ExternalModel<ConvLayoutCost<ConvOp, Direction>,
                                           ConvOp> {
  double getLayoutCost(Operation *op, Layout layout) const {
    auto conv = cast<ConvOp>(op);
    Type elementType =
        cast<RankedTensorType>(computeOperand(conv).getType()).getElementType();
    // A grouped convolution's blocked and NHWC kernels (on AVX-512
    // oneDNN's blocked jit depthwise and grouped kernels, its brgemm ones
    // on NHWC) are not measured against each other here (no AVX-512
    // machine at hand): both layouts count the same, so it takes its
    // neighbours' layout and costs no reorder. Groups that split a block
    // cannot compute blocked at all (Conv2DOp::canComputeBlocked).
    if (groupsOf(conv) != 1)
      return double(conv.getMultiplyAdds(1)) *
             secondsPerMultiplyAdd(Direction, elementType);
    return convSeconds(Direction, elementType, conv.getMultiplyAdds(1),
                       layout);
  }
};

} // namespace

void registerX86TargetInterfaces(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, KilnDialect *) {
    Conv2DOp::attachInterface<ConvLayoutCost<Conv2DOp, ConvDirection::Forward>>(
        *context);
    FusedConv2DBatchNormOp::attachInterface<
        ConvLayoutCost<FusedConv2DBatchNormOp, ConvDirection::Forward>>(
        *context);
    FusedConv2DBatchNormTrainOp::attachInterface<
        ConvLayoutCost<FusedConv2DBatchNormTrainOp, ConvDirection::Forward>>(
        *context);
    Conv2DBackwardDataOp::attachInterface<
        ConvLayoutCost<Conv2DBackwardDataOp, ConvDirection::BackwardData>>(
        *context);
    Conv2DBackwardFilterOp::attachInterface<
        ConvLayoutCost<Conv2DBackwardFilterOp, ConvDirection::BackwardFilter>>(
        *context);
  });
}

} // namespace kiln
