//===- ShapeRules.cpp - Shape rules shared by kiln ops --------------------===//

#include "dialects/Kiln/IR/ShapeRules.h"

#include "kiln/ref/broadcast.h"
#include "kiln/ref/window.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;

namespace kiln {

bool shapesCompatible(ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
  if (a.size() != b.size())
    return false;
  for (auto [x, y] : llvm::zip(a, b))
    if (!ShapedType::isDynamic(x) && !ShapedType::isDynamic(y) && x != y)
      return false;
  return true;
}

std::string formatShape(ArrayRef<int64_t> shape) {
  std::string out;
  for (auto [i, d] : llvm::enumerate(shape)) {
    if (i)
      out += ", ";
    out += ShapedType::isDynamic(d) ? "?" : std::to_string(d);
  }
  return out;
}

LogicalResult checkBroadcastsTo(std::optional<Location> loc, StringRef opName,
                                StringRef what, RankedTensorType operand,
                                RankedTensorType full) {
  if (operand.getElementType() != full.getElementType())
    return emitOptionalError(loc, opName, ": ", what, " element type ",
                             operand.getElementType(), " differs from ",
                             full.getElementType());
  // `operand` broadcasts to `full` when broadcasting both gives `full`.
  bool ok = operand.getRank() == full.getRank();
  for (int64_t i = 0; ok && i < full.getRank(); ++i) {
    int64_t out = 0;
    ok = ref::broadcastDimension(operand.getDimSize(i), full.getDimSize(i),
                                 out) &&
         out == full.getDimSize(i);
  }
  if (!ok)
    return emitOptionalError(
        loc, opName, ": ", what, " [", formatShape(operand.getShape()),
        "] does not broadcast to [", formatShape(full.getShape()),
        "] (each dimension equal or 1)");
  return success();
}

FailureOr<RankedTensorType> inferBroadcast(std::optional<Location> loc,
                                           StringRef opName,
                                           RankedTensorType lhs,
                                           RankedTensorType rhs) {
  if (lhs.getElementType() != rhs.getElementType())
    return emitOptionalError(loc, opName, ": operand element types differ: ",
                             lhs.getElementType(), " and ",
                             rhs.getElementType());
  SmallVector<int64_t> shape(lhs.getRank());
  if (!ref::broadcastShapes(lhs.getShape().data(), lhs.getRank(),
                            rhs.getShape().data(), rhs.getRank(),
                            shape.data()))
    return emitOptionalError(loc, opName, ": [", formatShape(lhs.getShape()),
                             "] and [", formatShape(rhs.getShape()),
                             "] do not broadcast (one rank, each dimension "
                             "equal or 1)");
  return RankedTensorType::get(shape, lhs.getElementType());
}

//===----------------------------------------------------------------------===//


/// Product of the dimensions of `type`, counting each dynamic one as
/// `dynamicDimSize`.
int64_t numElementsWith(ShapedType type, int64_t dynamicDimSize) {
  int64_t n = 1;
  for (int64_t d : type.getShape())
    n *= ShapedType::isDynamic(d) ? dynamicDimSize : d;
  return n;
}

/// Output extent of a sliding window; kDynamic for a dynamic input and a
/// non-positive value when the window does not fit.
static int64_t slidingOutputSize(int64_t in, int64_t padBefore,
                                 int64_t padAfter, int64_t window,
                                 int64_t stride, int64_t dilation,
                                 bool ceilMode) {
  if (ShapedType::isDynamic(in))
    return ShapedType::kDynamic;
  return ref::slidingWindowOutputSize(in, padBefore, padAfter, window, stride,
                                      dilation, ceilMode);
}

/// Infers the spatial output size of a window op, or emits an error.
LogicalResult
inferWindowSpatialSize(std::optional<Location> loc, StringRef opName,
             RankedTensorType input, ArrayRef<int64_t> window,
             ArrayRef<int64_t> strides, ArrayRef<int64_t> padding,
             ArrayRef<int64_t> dilations, SmallVectorImpl<int64_t> &out,
             bool ceilMode) {
  if (window.size() != 2 || strides.size() != 2 || padding.size() != 4 ||
      dilations.size() != 2)
    return emitOptionalError(loc, opName,
                             ": expects 2 window sizes, 2 strides, 4 paddings "
                             "and 2 dilations");
  static constexpr const char *dimNames[] = {"height", "width"};
  for (int i = 0; i < 2; ++i) {
    int64_t in = input.getDimSize(1 + i);
    int64_t size = slidingOutputSize(in, padding[2 * i], padding[2 * i + 1],
                                     window[i], strides[i], dilations[i],
                                     ceilMode);
    if (!ShapedType::isDynamic(size) && size <= 0)
      return emitOptionalError(loc, opName, ": window of ", dimNames[i], " ",
                               ref::dilatedWindowSize(window[i], dilations[i]),
                               " does not fit the padded input ", dimNames[i],
                               " ", in + padding[2 * i] + padding[2 * i + 1]);
    out.push_back(size);
  }
  return success();
}

LogicalResult checkConvGroups(std::optional<Location> loc, StringRef opName,
                              StringRef what, int64_t inputChannels,
                              StringRef filterWhat, int64_t filterIn,
                              int64_t filterOut, int64_t groups) {
  if (groups <= 0)
    return emitOptionalError(loc, opName, ": groups must be positive, not ",
                             groups);
  if (filterOut % groups != 0)
    return emitOptionalError(loc, opName, ": the ", filterWhat, " has ",
                             filterOut, " output channels, not a multiple of ",
                             groups, " groups");
  if (ShapedType::isDynamic(inputChannels) ||
      inputChannels == filterIn * groups)
    return success();
  // The ungrouped message stays as it was before groups existed.
  if (groups == 1)
    return emitOptionalError(loc, opName, ": ", what, " has ", inputChannels,
                             " channels but the ", filterWhat, " expects ",
                             filterIn);
  return emitOptionalError(loc, opName, ": ", what, " has ", inputChannels,
                           " channels but the ", filterWhat, " expects ",
                           filterIn * groups, " (", filterIn, " per group, ",
                           groups, " groups)");
}

/// Checks that a per-channel vector has `channels` elements.
static LogicalResult checkChannelVector(std::optional<Location> loc,
                                        StringRef opName, StringRef what,
                                        Value vector, int64_t channels) {
  auto type = cast<RankedTensorType>(vector.getType());
  if (type.getDimSize(0) != channels)
    return emitOptionalError(loc, opName, ": ", what, " has ",
                             type.getDimSize(0), " elements but the input has ",
                             channels, " channels");
  return success();
}

/// Checks the operands shared by both forms of batch normalization and
/// returns the channel count.
FailureOr<int64_t>
checkBatchNormOperands(std::optional<Location> loc, StringRef opName,
                       Value input, ArrayRef<std::pair<StringRef, Value>> vecs) {
  auto inputType = cast<RankedTensorType>(input.getType());
  if (inputType.getRank() != 2 && inputType.getRank() != 4)
    return emitOptionalError(loc, opName,
                             ": input must be NHWC (rank 4) or NC (rank 2), "
                             "got rank ",
                             inputType.getRank());
  int64_t channels = inputType.getShape().back();
  if (ShapedType::isDynamic(channels))
    return emitOptionalError(loc, opName,
                             ": the channel dimension must be static");
  for (auto [what, value] : vecs)
    if (failed(checkChannelVector(loc, opName, what, value, channels)))
      return failure();
  return channels;
}

} // namespace kiln
