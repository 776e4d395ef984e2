//===- LowerDataMovement.cpp - Concat, slices, shuffles, transposes -------===//
//
// Copies between arena views: concat and slices as one linalg.generic copy
// per input between a view and a subview of the other side, channel shuffle
// and transpose as one linalg.generic whose input map permutes dimensions.
// No arithmetic: elements keep their type (bf16 is copied as bf16).
//
//===----------------------------------------------------------------------===//

#include "passes/Conversion/KilnToLinalg/Lowering.h"

#include "dialects/Kiln/IR/KilnLayout.h"
#include "dialects/Kiln/IR/KilnOps.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

namespace kiln {

namespace {
/// The views the copies of a concat or slice run over, all alike: in
/// nChw16c the physical [N, C/16, H, W] blocks of vector<16xT>; in NHWC the
/// logical shape, 16 channels to a vector<16xT> element when every channel
/// count and offset of the copy is a multiple of 16 (one AVX-512 register
/// per element, whatever LLVM would make of a short channel loop).
struct CopyViews {
  Lowering &l;
  int64_t axis;
  bool blocked, lanes;

  CopyViews(Lowering &l, Operation *op, int64_t axis, ArrayRef<Value> values,
            ArrayRef<int64_t> channelOffsets)
      : l(l), axis(axis), blocked(getComputeLayout(op) == Layout::NChw16c) {
    lanes = blocked || llvm::all_of(values, [](Value v) {
              return cast<RankedTensorType>(v.getType()).getShape().back() %
                         16 ==
                     0;
            });
    bool channelAxis =
        axis + 1 == cast<RankedTensorType>(values[0].getType()).getRank();
    if (channelAxis)
      lanes = lanes && llvm::all_of(channelOffsets,
                                    [](int64_t o) { return o % 16 == 0; });
  }

  /// The type of `view(v)`.
  MemRefType viewType(Value v) const {
    auto type = cast<RankedTensorType>(v.getType());
    ArrayRef<int64_t> s = type.getShape();
    Type lane = channelLanes(type.getElementType());
    if (blocked)
      return MemRefType::get({s[0], s[3] / 16, s[1], s[2]}, lane);
    if (!lanes)
      return MemRefType::get(s, type.getElementType());
    SmallVector<int64_t> shape(s);
    shape.back() /= 16;
    return MemRefType::get(shape, lane);
  }

  Value view(Value v) const {
    if (!blocked && !lanes)
      return l.view(v);
    MemRefType type = viewType(v);
    return l.viewAs(v, type.getShape(), type.getElementType());
  }

  /// The view of `v` moved `offset` elements of `axis` on: its subview at
  /// offset 0 is the part at `offset`. The offset thus goes into the view's
  /// byte shift, which kiln-outline-parallel-loops passes in the call's
  /// table, so the copies of a concat (or slice) differ in their widths
  /// alone and share their kernels: DenseNet's concatenations of k earlier
  /// feature maps would otherwise make k kernels each, quadratically many
  /// in a block's depth. Only the part's elements are read or written,
  /// and they lie within `v`, although the moved view's type reaches past
  /// its end.
  Value movedView(Location loc, Value v, int64_t offset, int64_t rank) const {
    MemRefType type = viewType(v);
    int64_t elements = scaled(offset, rank);
    for (int64_t d : type.getShape().drop_front(dim() + 1))
      elements *= d;
    Type element = type.getElementType();
    int64_t bits = 0;
    if (auto vector = dyn_cast<VectorType>(element))
      bits = vector.getNumElements() *
             vector.getElementType().getIntOrFloatBitWidth();
    else
      bits = element.getIntOrFloatBitWidth();
    return l.viewAt(loc, l.offsetOf(v) + elements * (bits / 8), type);
  }

  /// The dimension of the views that the logical `axis` is.
  int64_t dim() const {
    if (!blocked)
      return axis;
    static const int64_t physical[4] = {0, 2, 3, 1}; // NHWC -> N C/16 H W
    return physical[axis];
  }

  /// `offset` elements of `axis` in elements of the view's dimension.
  int64_t scaled(int64_t offset, int64_t rank) const {
    return axis + 1 == rank && lanes ? offset / 16 : offset;
  }

  /// The part of `value` at `offset` along `axis` of `part`'s extent (a
  /// view of the same rank): a subview at offset 0 of the moved view.
  Value subview(Location loc, Value value, Value part, int64_t offset,
                int64_t rank) const {
    auto partType = cast<MemRefType>(part.getType());
    SmallVector<int64_t> offsets(partType.getRank(), 0),
        strides(partType.getRank(), 1);
    return memref::SubViewOp::create(l.b, loc,
                                     movedView(loc, value, offset, rank),
                                     offsets, partType.getShape(), strides);
  }

  void copy(Location loc, Value from, Value to) const {
    l.elementwise(loc, from, to,
                  [](OpBuilder &nb, Location loc, ValueRange args) {
                    linalg::YieldOp::create(nb, loc, args[0]);
                  });
  }
};
} // namespace

static int64_t rankOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getRank();
}

static void lowerConcat(Lowering &l, ConcatOp concat) {
  Location loc = concat.getLoc();
  int64_t axis = concat.getAxis();
  SmallVector<Value> values(concat.getInputs());
  values.push_back(concat.getOutput());
  SmallVector<int64_t> offsets;
  int64_t offset = 0;
  for (Value input : concat.getInputs()) {
    offsets.push_back(offset);
    offset += cast<RankedTensorType>(input.getType()).getDimSize(axis);
  }
  CopyViews views(l, concat, axis, values, offsets);
  int64_t rank = rankOf(concat.getOutput());
  for (auto [input, at] : llvm::zip(concat.getInputs(), offsets)) {
    Value part = views.view(input);
    views.copy(loc, part,
               views.subview(loc, concat.getOutput(), part, at, rank));
  }
}

static void lowerSlice(Lowering &l, SliceOp slice) {
  Location loc = slice.getLoc();
  int64_t start = slice.getStart();
  CopyViews views(l, slice, slice.getAxis(),
                  {slice.getInput(), slice.getOutput()}, {start});
  Value output = views.view(slice.getOutput());
  views.copy(loc,
             views.subview(loc, slice.getInput(), output, start,
                           rankOf(slice.getInput())),
             output);
}

static void lowerSliceBackward(Lowering &l, SliceBackwardOp backward) {
  Location loc = backward.getLoc();
  int64_t start = backward.getStart();
  CopyViews views(l, backward, backward.getAxis(),
                  {backward.getOutputGrad(), backward.getInputGrad()},
                  {start});
  Value dx = views.view(backward.getInputGrad());
  Value dy = views.view(backward.getOutputGrad());
  l.fill(loc, dx, 0.0);
  views.copy(loc, dy,
             views.subview(loc, backward.getInputGrad(), dy, start,
                           rankOf(backward.getOutputGrad())));
}

/// The channels as a [groups, K] matrix transposed: loops over the output
/// viewed as [N, H*W, K, groups], reading the input as [N, H*W, groups, K].
static void lowerChannelShuffle(Lowering &l, ChannelShuffleOp shuffle) {
  auto type = cast<RankedTensorType>(shuffle.getInput().getType());
  ArrayRef<int64_t> s = type.getShape();
  int64_t groups = shuffle.getGroups(), perGroup = s[3] / groups;
  Value input = l.viewAs(shuffle.getInput(), {s[0], s[1] * s[2], groups, perGroup});
  Value output =
      l.viewAs(shuffle.getOutput(), {s[0], s[1] * s[2], perGroup, groups});
  MLIRContext *ctx = l.b.getContext();
  AffineExpr n, p, k, g;
  bindDims(ctx, n, p, k, g);
  l.generic(shuffle.getLoc(), input, output,
            {AffineMap::get(4, 0, {n, p, g, k}, ctx),
             AffineMap::getMultiDimIdentityMap(4, ctx)},
            SmallVector<utils::IteratorType>(4, utils::IteratorType::parallel),
            [](OpBuilder &nb, Location loc, ValueRange args) {
              linalg::YieldOp::create(nb, loc, args[0]);
            });
}

/// Loops over the output; input dimension permutation[i] is output loop i.
static void lowerTranspose(Lowering &l, TransposeOp transpose) {
  ArrayRef<int64_t> permutation = transpose.getPermutation();
  unsigned rank = permutation.size();
  MLIRContext *ctx = l.b.getContext();
  SmallVector<AffineExpr> inputExprs(rank);
  for (auto [i, p] : llvm::enumerate(permutation))
    inputExprs[p] = getAffineDimExpr(i, ctx);
  l.generic(transpose.getLoc(), l.view(transpose.getInput()),
            l.view(transpose.getOutput()),
            {AffineMap::get(rank, 0, inputExprs, ctx),
             AffineMap::getMultiDimIdentityMap(rank, ctx)},
            SmallVector<utils::IteratorType>(rank,
                                             utils::IteratorType::parallel),
            [](OpBuilder &nb, Location loc, ValueRange args) {
              linalg::YieldOp::create(nb, loc, args[0]);
            });
}

LogicalResult lowerDataMovement(Lowering &l, Operation *op) {
  llvm::TypeSwitch<Operation *>(op)
      .Case([&](ConcatOp o) { lowerConcat(l, o); })
      .Case([&](SliceOp o) { lowerSlice(l, o); })
      .Case([&](SliceBackwardOp o) { lowerSliceBackward(l, o); })
      .Case([&](ChannelShuffleOp o) { lowerChannelShuffle(l, o); })
      .Case([&](TransposeOp o) { lowerTranspose(l, o); });
  return success();
}

} // namespace kiln
