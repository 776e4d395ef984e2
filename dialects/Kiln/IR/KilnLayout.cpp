//===- KilnLayout.cpp - Physical layouts of activations --------------------===//
//
// The layout an op computes in is the discardable `kiln.layout` attribute of
// a LayoutOpInterface op (NHWC when absent); a value is stored in the layout
// of the op that produced it. What a layout costs an op is a target's
// knowledge (LayoutCostOpInterface, compiler/Target/X86).
//
//===----------------------------------------------------------------------===//

#include "dialects/Kiln/IR/KilnLayout.h"

#include "dialects/Kiln/IR/KilnOps.h"

using namespace mlir;

namespace kiln {

SmallVector<unsigned> detail::fourDimensionalFloats(TypeRange types) {
  SmallVector<unsigned> indices;
  for (auto [i, type] : llvm::enumerate(types))
    if (auto tensor = dyn_cast<RankedTensorType>(type);
        tensor && tensor.getRank() == 4 &&
        isa<FloatType>(tensor.getElementType()))
      indices.push_back(i);
  return indices;
}

//===----------------------------------------------------------------------===//
// Which activations follow a convolution's layout.
//===----------------------------------------------------------------------===//

SmallVector<unsigned> Conv2DOp::getLayoutOperands() { return {0}; }
SmallVector<unsigned> Conv2DOp::getLayoutResults() { return {0}; }

SmallVector<unsigned> FusedConv2DBatchNormOp::getLayoutOperands() {
  if (getResidual())
    return {0, 6};
  return {0};
}
SmallVector<unsigned> FusedConv2DBatchNormOp::getLayoutResults() { return {0}; }

SmallVector<unsigned> FusedConv2DBatchNormTrainOp::getLayoutOperands() {
  if (getResidual())
    return {0, 6};
  return {0};
}

SmallVector<unsigned> Conv2DBackwardDataOp::getLayoutOperands() { return {0}; }
SmallVector<unsigned> Conv2DBackwardDataOp::getLayoutResults() { return {0}; }

SmallVector<unsigned> Conv2DBackwardFilterOp::getLayoutOperands() {
  return {0, 1};
}
SmallVector<unsigned> Conv2DBackwardFilterOp::getLayoutResults() {
  return {}; // the filter gradient is HWIO
}

/// A grouped convolution computes in nChw16c when its groups do not split
/// a 16-channel block: depthwise (one input channel per group, blocked by
/// channel) or whole blocks per group on both sides. oneDNN has no blocked
/// jit kernel for other groups (only its reference loops).
static bool groupsKeepBlocks(int64_t groups, ArrayRef<int64_t> filter) {
  if (groups == 1)
    return true;
  int64_t in = filter[2], out = filter[3] / groups;
  return in == 1 || (in % 16 == 0 && out % 16 == 0);
}
bool Conv2DOp::canComputeBlocked() {
  return groupsKeepBlocks(getGroups(), getFilter().getType().getShape());
}
bool Conv2DBackwardDataOp::canComputeBlocked() {
  return groupsKeepBlocks(getGroups(), getFilter().getType().getShape());
}
bool Conv2DBackwardFilterOp::canComputeBlocked() {
  return groupsKeepBlocks(getGroups(), getFilterGrad().getType().getShape());
}

//===----------------------------------------------------------------------===//
// Reading and checking layouts.
//===----------------------------------------------------------------------===//

bool canComputeIn(Operation *op, Layout layout) {
  auto layoutOp = dyn_cast<LayoutOpInterface>(op);
  if (!layoutOp)
    return layout == Layout::NHWC;
  if (layout == Layout::NHWC)
    return true;
  if (layout != Layout::NChw16c || !layoutOp.canComputeBlocked())
    return false;
  auto blockable = [](Type type) {
    return cast<RankedTensorType>(type).getDimSize(3) % 16 == 0;
  };
  for (unsigned i : layoutOp.getLayoutOperands())
    if (!blockable(op->getOperand(i).getType()))
      return false;
  for (unsigned i : layoutOp.getLayoutResults())
    if (!blockable(op->getResult(i).getType()))
      return false;
  return true;
}

Layout getComputeLayout(Operation *op) {
  if (auto attr = op->getAttrOfType<ComputeLayoutAttr>(kLayoutAttrName))
    return attr.getValue();
  return Layout::NHWC;
}

void setComputeLayout(Operation *op, Layout layout) {
  if (layout == Layout::NHWC)
    op->removeAttr(kLayoutAttrName);
  else
    op->setAttr(kLayoutAttrName,
                ComputeLayoutAttr::get(op->getContext(), layout));
}

bool isStorageNoOp(ReorderOp reorder) {
  // Values are stored NHWC or nChw16c only (the verifiers of kiln.reorder
  // and of `kiln.layout`), which are the same bytes at 16 channels.
  return reorder.getType().getDimSize(3) == 16 ||
         getStorageLayout(reorder.getInput()) == reorder.getLayout();
}

Layout getStorageLayout(Value value) {
  auto result = dyn_cast<OpResult>(value);
  if (!result)
    return Layout::NHWC;
  Operation *op = result.getOwner();
  if (auto reorder = dyn_cast<ReorderOp>(op))
    return reorder.getLayout();
  auto layoutOp = dyn_cast<LayoutOpInterface>(op);
  if (!layoutOp ||
      !llvm::is_contained(layoutOp.getLayoutResults(), result.getResultNumber()))
    return Layout::NHWC;
  return getComputeLayout(op);
}

std::optional<Layout> getExpectedLayout(OpOperand &use) {
  Operation *op = use.getOwner();
  if (isa<ReorderOp>(op))
    return std::nullopt; // reads any layout
  auto tensor = dyn_cast<RankedTensorType>(use.get().getType());
  if (!tensor || tensor.getRank() != 4)
    return std::nullopt;
  auto layoutOp = dyn_cast<LayoutOpInterface>(op);
  if (layoutOp &&
      llvm::is_contained(layoutOp.getLayoutOperands(), use.getOperandNumber()))
    return getComputeLayout(op);
  return Layout::NHWC;
}

LogicalResult verifyLayouts(Operation *root) {
  WalkResult result = root->walk([](Operation *op) {
    for (OpOperand &use : op->getOpOperands()) {
      std::optional<Layout> expected = getExpectedLayout(use);
      Layout stored = getStorageLayout(use.get());
      if (expected && *expected != stored) {
        op->emitOpError() << "reads operand #" << use.getOperandNumber()
                          << " as " << stringifyLayout(*expected)
                          << " but it is stored " << stringifyLayout(stored)
                          << " (a kiln.reorder is missing)";
        return WalkResult::interrupt();
      }
    }
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

LogicalResult ReorderOp::verify() {
  if (getLayout() != Layout::NHWC && getLayout() != Layout::NChw16c)
    return emitOpError("reorders to nhwc or nChw16c only");
  if (getLayout() == Layout::NChw16c && getType().getDimSize(3) % 16 != 0)
    return emitOpError("nChw16c needs a multiple of 16 channels, not ")
           << getType().getDimSize(3);
  return success();
}

OpFoldResult ReorderOp::fold(FoldAdaptor) {
  // Through reorders, which only move the same values: the first value
  // already stored as this one is.
  Value source = getInput();
  while (true) {
    if (getStorageLayout(source) == getLayout())
      return source;
    auto inner = source.getDefiningOp<ReorderOp>();
    if (!inner)
      return {};
    source = inner.getInput();
  }
}

LogicalResult KilnDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attribute) {
  // Other kiln.* attributes (the lowering's manifest) are not about ops.
  if (attribute.getName() != kLayoutAttrName)
    return success();
  auto attr = dyn_cast<ComputeLayoutAttr>(attribute.getValue());
  std::optional<Layout> layout =
      attr ? std::optional<Layout>(attr.getValue()) : std::nullopt;
  if (!layout || *layout == Layout::NCHW)
    return op->emitError("'kiln.layout' must be #kiln.layout<nhwc> or "
                         "#kiln.layout<nChw16c>");
  if (!isa<LayoutOpInterface>(op))
    return op->emitError("'kiln.layout' on an op that computes in NHWC only");
  if (!canComputeIn(op, *layout))
    return op->emitError("cannot compute in ")
           << stringifyLayout(*layout)
           << ": nChw16c needs a multiple of 16 channels in every activation";
  return success();
}

} // namespace kiln
