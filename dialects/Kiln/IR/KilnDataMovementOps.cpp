//===- KilnDataMovementOps.cpp - Concat, slices, shuffles -----------------===//
//
// Shape inference and verifiers of the data-movement ops
// (KilnDataMovementOps.td), and the layout rule they share: a channel range
// is stored in whole nChw16c blocks only when it starts at a block boundary.
//
//===----------------------------------------------------------------------===//

#include "dialects/Kiln/IR/KilnOps.h"
#include "dialects/Kiln/IR/ShapeRules.h"

#include "mlir/IR/Diagnostics.h"

using namespace mlir;
using namespace kiln;

/// Checks `axis` against the rank and that it is static (a slice or concat
/// of the dynamic batch would have no static result shape).
static LogicalResult checkAxis(std::optional<Location> loc, StringRef name,
                               RankedTensorType type, int64_t axis) {
  if (axis >= type.getRank())
    return emitOptionalError(loc, name, ": axis ", axis, " of a rank-",
                             type.getRank(), " tensor");
  if (type.isDynamicDim(axis))
    return emitOptionalError(loc, name, ": axis ", axis,
                             " is dynamic (the batch)");
  return success();
}

//===----------------------------------------------------------------------===//
// ConcatOp
//===----------------------------------------------------------------------===//

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *context,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  StringRef name = "kiln.concat";
  ValueRange inputs = adaptor.getInputs();
  if (inputs.empty())
    return emitOptionalError(loc, name, ": needs at least one input");
  auto first = cast<RankedTensorType>(inputs.front().getType());
  int64_t axis = adaptor.getAxis();
  if (failed(checkAxis(loc, name, first, axis)))
    return failure();
  SmallVector<int64_t> shape(first.getShape());
  shape[axis] = 0;
  for (auto [i, input] : llvm::enumerate(inputs)) {
    auto type = cast<RankedTensorType>(input.getType());
    if (type.getElementType() != first.getElementType())
      return emitOptionalError(loc, name, ": input #", i, " has element type ",
                               type.getElementType(), ", input #0 ",
                               first.getElementType());
    if (type.getRank() != first.getRank())
      return emitOptionalError(loc, name, ": input #", i, " has rank ",
                               type.getRank(), ", input #0 ", first.getRank());
    for (int64_t d = 0; d < type.getRank(); ++d)
      if (d != axis && type.getDimSize(d) != first.getDimSize(d))
        return emitOptionalError(loc, name, ": input #", i, " has shape [",
                                 formatShape(type.getShape()), "], input #0 [",
                                 formatShape(first.getShape()),
                                 "]; they may differ along axis ", axis,
                                 " only");
    if (type.isDynamicDim(axis))
      return emitOptionalError(loc, name, ": input #", i, " is dynamic along",
                               " axis ", axis);
    shape[axis] += type.getDimSize(axis);
  }
  results.push_back(first.clone(shape));
  return success();
}

//===----------------------------------------------------------------------===//
// SliceOp, SliceBackwardOp
//===----------------------------------------------------------------------===//

/// The range [start, start + size) of `axis` must lie within `extent`.
static LogicalResult checkRange(std::optional<Location> loc, StringRef name,
                                int64_t start, int64_t size, int64_t extent) {
  if (start + size > extent)
    return emitOptionalError(loc, name, ": [", start, ", ", start + size,
                             ") is not within the ", extent,
                             " elements of the axis");
  return success();
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *context,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &results) {
  StringRef name = "kiln.slice";
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  int64_t axis = adaptor.getAxis();
  if (failed(checkAxis(loc, name, input, axis)) ||
      failed(checkRange(loc, name, adaptor.getStart(), adaptor.getSize(),
                        input.getDimSize(axis))))
    return failure();
  SmallVector<int64_t> shape(input.getShape());
  shape[axis] = adaptor.getSize();
  results.push_back(input.clone(shape));
  return success();
}

LogicalResult SliceBackwardOp::inferReturnTypes(
    MLIRContext *context, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &results) {
  StringRef name = "kiln.slice_backward";
  auto dy = cast<RankedTensorType>(adaptor.getOutputGrad().getType());
  int64_t axis = adaptor.getAxis();
  if (failed(checkAxis(loc, name, dy, axis)) ||
      failed(checkRange(loc, name, adaptor.getStart(), dy.getDimSize(axis),
                        adaptor.getInputSize())))
    return failure();
  SmallVector<int64_t> shape(dy.getShape());
  shape[axis] = adaptor.getInputSize();
  results.push_back(dy.clone(shape));
  return success();
}

/// A slice along the channels (the last axis of a 4-D activation) moves
/// whole nChw16c blocks only from a block boundary; the blocked layout's
/// rule (every activation a multiple of 16 channels, canComputeIn) covers
/// the rest.
static bool takesWholeBlocks(Type type, int64_t axis, int64_t start) {
  return cast<RankedTensorType>(type).getRank() != 4 || axis != 3 ||
         start % 16 == 0;
}

bool SliceOp::canComputeBlocked() {
  return takesWholeBlocks(getInput().getType(), getAxis(), getStart());
}
bool SliceBackwardOp::canComputeBlocked() {
  return takesWholeBlocks(getOutputGrad().getType(), getAxis(), getStart());
}

//===----------------------------------------------------------------------===//
// ChannelShuffleOp
//===----------------------------------------------------------------------===//

LogicalResult ChannelShuffleOp::verify() {
  int64_t channels = cast<RankedTensorType>(getInput().getType()).getDimSize(3);
  if (ShapedType::isDynamic(channels) || channels % getGroups() != 0)
    return emitOpError("cannot split ")
           << (ShapedType::isDynamic(channels) ? std::string("dynamic")
                                               : std::to_string(channels))
           << " channels into " << getGroups() << " equal groups";
  return success();
}

//===----------------------------------------------------------------------===//
// TransposeOp
//===----------------------------------------------------------------------===//

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *context,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  ArrayRef<int64_t> permutation = adaptor.getPermutation();
  int64_t rank = input.getRank();
  SmallVector<bool> seen(rank, false);
  bool valid = int64_t(permutation.size()) == rank;
  for (int64_t p : permutation) {
    if (!valid || p < 0 || p >= rank || seen[p]) {
      valid = false;
      break;
    }
    seen[p] = true;
  }
  if (!valid)
    return emitOptionalError(loc, "kiln.transpose: [", formatShape(permutation),
                             "] is not a permutation of the ", rank,
                             " dimensions");
  SmallVector<int64_t> shape;
  for (int64_t p : permutation)
    shape.push_back(input.getDimSize(p));
  results.push_back(input.clone(shape));
  return success();
}
