//===- LowerElementwise.cpp - Elementwise ops and simple reductions -------===//
//
// Arithmetic is done in f32; bf16 values are widened on load and rounded on
// store, as the x86 bf16 instructions do.
//
//===----------------------------------------------------------------------===//

#include "passes/Conversion/KilnToLinalg/Lowering.h"

#include "dialects/Kiln/IR/KilnLayout.h"
#include "dialects/Kiln/IR/KilnOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;

namespace kiln {


static Type elementTypeOf(Value memref) {
  return cast<MemRefType>(memref.getType()).getElementType();
}

namespace {
/// A global average pool's image [N, H, W, C] and pooled [N, C] operands,
/// viewed in the op's layout with the loops over them: (n, h, w, c), or
/// (n, c / 16, h, w) over [N, C/16, H, W] and [N, C/16] of vector<16xT>.
struct SpatialView {
  Value image, pooled;
  AffineMap imageMap, pooledMap;
  SmallVector<utils::IteratorType> sumIterators;
  /// The type the loops compute in: vector<16xf32> with 16 channels to an
  /// element (nChw16c, or NHWC with a multiple of 16 channels, as in
  /// LowerBatchNorm.cpp), else f32.
  Type f32;

  SpatialView(Lowering &l, Value imageValue, Value pooledValue,
              Layout layout) {
    MLIRContext *ctx = l.b.getContext();
    ArrayRef<int64_t> s =
        cast<RankedTensorType>(imageValue.getType()).getShape();
    auto parallel = utils::IteratorType::parallel;
    auto reduction = utils::IteratorType::reduction;
    auto lanes = [](Value v) {
      return channelLanes(cast<RankedTensorType>(v.getType()).getElementType());
    };
    f32 = l.b.getF32Type();
    AffineExpr n, h, w, c;
    bindDims(ctx, n, h, w, c);
    if (layout == Layout::NChw16c) {
      // Loops (n, c / 16, h, w): c is the second dimension here.
      image = l.viewAs(imageValue, {s[0], s[3] / 16, s[1], s[2]},
                       lanes(imageValue));
      pooled = l.viewAs(pooledValue, {s[0], s[3] / 16}, lanes(pooledValue));
      f32 = channelLanes(f32);
      imageMap = AffineMap::get(4, 0, {n, h, w, c}, ctx);
      pooledMap = AffineMap::get(4, 0, {n, h}, ctx);
      sumIterators = {parallel, parallel, reduction, reduction};
      return;
    }
    if (s[3] % 16 == 0) {
      image = l.viewAs(imageValue, {s[0], s[1], s[2], s[3] / 16},
                       lanes(imageValue));
      pooled = l.viewAs(pooledValue, {s[0], s[3] / 16}, lanes(pooledValue));
      f32 = channelLanes(f32);
    } else {
      image = l.view(imageValue);
      pooled = l.view(pooledValue);
    }
    imageMap = AffineMap::get(4, 0, {n, h, w, c}, ctx);
    pooledMap = AffineMap::get(4, 0, {n, c}, ctx);
    sumIterators = {parallel, reduction, reduction, parallel};
  }
};
} // namespace

namespace {
/// The loops of a broadcast_mul, a bias_add or their backward ops: one per
/// dimension of the full shape, the broadcast operand (a bias viewed as
/// [1, ..., 1, C]) indexed with 0 where it is 1. When the
/// channels (the last dimension) are a multiple of 16 and not broadcast,
/// both views take 16 channels to a vector<16xT> element, as the flat
/// elementwise loops do.
struct BroadcastView {
  Value full0, full1, small;
  AffineMap fullMap, smallMap;
  SmallVector<utils::IteratorType> reduceIterators;
  /// f32, or vector<16xf32> with vector elements.
  Type f32;

  /// `smallShape` overrides `smallValue`'s shape (same size, full rank).
  BroadcastView(Lowering &l, Value fullValue0, Value fullValue1,
                Value smallValue, ArrayRef<int64_t> smallShape = {}) {
    MLIRContext *ctx = l.b.getContext();
    auto fullType = cast<RankedTensorType>(fullValue0.getType());
    auto smallType = cast<RankedTensorType>(smallValue.getType());
    SmallVector<int64_t> full(fullType.getShape()),
        part(smallShape.empty() ? smallType.getShape() : smallShape);
    f32 = l.b.getF32Type();
    auto viewOf = [&](Value v, ArrayRef<int64_t> shape, bool lanes) {
      Type element = cast<RankedTensorType>(v.getType()).getElementType();
      return lanes ? l.viewAs(v, shape, channelLanes(element))
                   : l.viewAs(v, shape);
    };
    bool lanes =
        !full.empty() && full.back() % 16 == 0 && part.back() == full.back();
    if (lanes) {
      full.back() /= 16;
      part.back() /= 16;
      f32 = channelLanes(f32);
    }
    full0 = viewOf(fullValue0, full, lanes);
    if (fullValue1)
      full1 = viewOf(fullValue1, full, lanes);
    small = viewOf(smallValue, part, lanes);
    unsigned rank = full.size();
    fullMap = AffineMap::getMultiDimIdentityMap(rank, ctx);
    SmallVector<AffineExpr> exprs;
    for (unsigned d = 0; d < rank; ++d) {
      bool broadcast = part[d] == 1 && full[d] != 1;
      exprs.push_back(broadcast ? getAffineConstantExpr(0, ctx)
                                : getAffineDimExpr(d, ctx));
      reduceIterators.push_back(broadcast ? utils::IteratorType::reduction
                                          : utils::IteratorType::parallel);
    }
    smallMap = AffineMap::get(rank, 0, exprs, ctx);
  }
};
} // namespace

/// `v.full1` = combine(`v.full0`, `v.small`) at every element, in f32.
static void
emitBroadcastCombine(Lowering &l, Location loc, const BroadcastView &v,
                     function_ref<Value(OpBuilder &, Location, Value, Value)>
                         combine) {
  Type element = elementTypeOf(v.full1);
  l.generic(loc, {v.full0, v.small}, v.full1,
            {v.fullMap, v.smallMap, v.fullMap},
            SmallVector<utils::IteratorType>(v.reduceIterators.size(),
                                             utils::IteratorType::parallel),
            [&](OpBuilder &nb, Location loc, ValueRange args) {
              Value y = combine(nb, loc, widenToF32(nb, loc, args[0]),
                                widenToF32(nb, loc, args[1]));
              linalg::YieldOp::create(
                  nb, loc, ValueRange{narrowTo(nb, loc, y, element)});
            });
}

/// `v.small` = the sum over the broadcast dimensions of `term` of the
/// full-shaped `inputs` (widened to f32), accumulated in an f32 temporary of
/// `v.small`'s shape, then rounded.
static void
emitBroadcastSum(Lowering &l, Location loc, const BroadcastView &v,
                 ValueRange inputs,
                 function_ref<Value(OpBuilder &, Location, ValueRange)> term) {
  Type element = elementTypeOf(v.small);
  Value sum =
      l.temporary(loc, cast<MemRefType>(v.small.getType()).getShape(), v.f32);
  l.fill(loc, sum, 0.0);
  SmallVector<AffineMap> maps(inputs.size(), v.fullMap);
  maps.push_back(v.smallMap);
  l.generic(loc, inputs, sum, maps, v.reduceIterators,
            [&](OpBuilder &nb, Location loc, ValueRange args) {
              SmallVector<Value> wide;
              for (Value a : args.drop_back())
                wide.push_back(widenToF32(nb, loc, a));
              Value t = term(nb, loc, wide);
              linalg::YieldOp::create(
                  nb, loc,
                  ValueRange{arith::AddFOp::create(nb, loc, t, args.back())});
            });
  l.elementwise(loc, sum, v.small,
                [&](OpBuilder &nb, Location loc, ValueRange args) {
                  linalg::YieldOp::create(
                      nb, loc, ValueRange{narrowTo(nb, loc, args[0], element)});
                });
}

/// The bias of a [..., C] value viewed at full rank: [1, ..., 1, C].
static SmallVector<int64_t> biasShapeOf(Value full) {
  auto type = cast<RankedTensorType>(full.getType());
  SmallVector<int64_t> shape(type.getRank(), 1);
  shape.back() = type.getShape().back();
  return shape;
}

/// broadcast_mul and bias_add: one parallel loop nest over the result;
/// their broadcast operand's gradients (dy * lhs, or dy) summed in f32 over
/// the broadcast dimensions, then rounded.
static LogicalResult lowerBroadcastMul(Lowering &l, Operation *op) {
  Location loc = op->getLoc();
  if (auto add = dyn_cast<BiasAddOp>(op)) {
    BroadcastView v(l, add.getInput(), add.getOutput(), add.getBias(),
                    biasShapeOf(add.getInput()));
    emitBroadcastCombine(l, loc, v, [](OpBuilder &nb, Location loc, Value x,
                                       Value b) -> Value {
      return arith::AddFOp::create(nb, loc, x, b);
    });
    return success();
  }
  if (auto backward = dyn_cast<BiasAddBackwardOp>(op)) {
    BroadcastView v(l, backward.getOutputGrad(), Value(),
                    backward.getBiasGrad(),
                    biasShapeOf(backward.getOutputGrad()));
    emitBroadcastSum(l, loc, v, v.full0,
                     [](OpBuilder &, Location, ValueRange dy) { return dy[0]; });
    return success();
  }
  if (auto mul = dyn_cast<BroadcastMulOp>(op)) {
    BroadcastView v(l, mul.getLhs(), mul.getOutput(), mul.getRhs());
    emitBroadcastCombine(l, loc, v, [](OpBuilder &nb, Location loc, Value x,
                                       Value y) -> Value {
      return arith::MulFOp::create(nb, loc, x, y);
    });
    return success();
  }
  auto backward = cast<BroadcastMulBackwardOp>(op);
  BroadcastView v(l, backward.getOutputGrad(), backward.getLhs(),
                  backward.getRhsGrad());
  emitBroadcastSum(l, loc, v, {v.full0, v.full1},
                   [](OpBuilder &nb, Location loc, ValueRange a) -> Value {
                     return arith::MulFOp::create(nb, loc, a[0], a[1]);
                   });
  return success();
}

/// Every operand and result has one shape and one layout, so the loop runs
/// over the storage as one flat dimension, 16 elements to a vector<16xT>
/// when the size allows: vector code by construction. (A 16- or 32-channel
/// innermost loop would be unrolled to scalar code, and LLVM leaves the
/// rounding of f32 to bf16 scalar unless it is given vectors.)
static Value flatView(Lowering &l, Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  int64_t n = type.getNumElements();
  if (n % 16 == 0)
    return l.viewAs(v, {n / 16}, channelLanes(type.getElementType()));
  return l.viewAs(v, {n});
}

/// One op or a fused chain: one linalg.generic whose body is each op's
/// scalar computation (ElementwiseOpInterface) in order, so a chain reads
/// its inputs and writes its results once.
static void lowerElementwiseOp(Lowering &l,
                               ElementwiseOpInterface elementwise) {
  Operation *op = elementwise.getOperation();
  Location loc = op->getLoc();
  auto flat = [&](Value v) { return flatView(l, v); };
  SmallVector<Value> inputs = llvm::map_to_vector(op->getOperands(), flat);
  l.elementwise(loc, inputs, flat(op->getResult(0)),
                [&](OpBuilder &nb, Location loc, ValueRange args) {
                  linalg::YieldOp::create(
                      nb, loc,
                      ValueRange{elementwise.buildScalar(
                          nb, loc, args.take_front(inputs.size()))});
                });
}

static void lowerFusedElementwise(Lowering &l, FusedElementwiseOp fused) {
  Location loc = fused.getLoc();
  auto flat = [&](Value v) { return flatView(l, v); };
  SmallVector<Value> inputs = llvm::map_to_vector(fused.getInputs(), flat);
  SmallVector<Value> outputs = llvm::map_to_vector(fused.getOutputs(), flat);
  Block &body = fused.getBody().front();
  l.elementwise(
      loc, inputs, outputs, [&](OpBuilder &nb, Location loc, ValueRange args) {
        IRMapping scalars;
        scalars.map(body.getArguments(), args.take_front(inputs.size()));
        for (Operation &inner : body.without_terminator()) {
          SmallVector<Value> operands = llvm::map_to_vector(
              inner.getOperands(), [&](Value v) { return scalars.lookup(v); });
          scalars.map(inner.getResult(0),
                      cast<ElementwiseOpInterface>(inner).buildScalar(
                          nb, loc, operands));
        }
        linalg::YieldOp::create(
            nb, loc,
            llvm::map_to_vector(cast<YieldOp>(body.getTerminator()).getValues(),
                                [&](Value v) { return scalars.lookup(v); }));
      });
}

static void lowerGlobalAvgPool(Lowering &l, GlobalAvgPoolOp pool) {
  Location loc = pool.getLoc();
  Operation *op = pool.getOperation();
  // Sum over (h, w) with the channel loop innermost (contiguous in either
  // layout), then scale.
  auto inputType = pool.getInput().getType();
  int64_t spatial = inputType.getDimSize(1) * inputType.getDimSize(2);
  SpatialView v(l, pool.getInput(), pool.getOutput(), getComputeLayout(op));
  Type element = elementTypeOf(v.pooled);
  Value sum =
      l.temporary(loc, cast<MemRefType>(v.pooled.getType()).getShape(), v.f32);
  l.fill(loc, sum, 0.0);
  l.generic(loc, v.image, sum, {v.imageMap, v.pooledMap}, v.sumIterators,
            [&](OpBuilder &nb, Location loc, ValueRange args) {
              linalg::YieldOp::create(
                  nb, loc,
                  ValueRange{arith::AddFOp::create(
                      nb, loc, widenToF32(nb, loc, args[0]), args[1])});
            });
  Value scale = l.constant(loc, v.f32, 1.0 / double(spatial));
  l.elementwise(loc, sum, v.pooled,
                [&](OpBuilder &nb, Location loc, ValueRange args) {
                  Value mean = arith::MulFOp::create(nb, loc, args[0], scale);
                  linalg::YieldOp::create(
                      nb, loc, ValueRange{narrowTo(nb, loc, mean, element)});
                });
}

static void lowerGlobalAvgPoolBackward(Lowering &l,
                                       GlobalAvgPoolBackwardOp backward) {
  Location loc = backward.getLoc();
  Operation *op = backward.getOperation();
  auto type = backward.getInputGrad().getType();
  int64_t spatial = type.getDimSize(1) * type.getDimSize(2);
  SpatialView v(l, backward.getInputGrad(), backward.getOutputGrad(),
                getComputeLayout(op));
  Type element = elementTypeOf(v.image);
  Value scale = l.constant(loc, v.f32, 1.0 / double(spatial));
  l.generic(loc, v.pooled, v.image, {v.pooledMap, v.imageMap},
            SmallVector<utils::IteratorType>(v.sumIterators.size(),
                                             utils::IteratorType::parallel),
            [&](OpBuilder &nb, Location loc, ValueRange args) {
              Value g = arith::MulFOp::create(
                  nb, loc, widenToF32(nb, loc, args[0]), scale);
              linalg::YieldOp::create(
                  nb, loc, ValueRange{narrowTo(nb, loc, g, element)});
            });
}

static void lowerReduceSum(Lowering &l, ReduceSumOp reduce) {
  Location loc = reduce.getLoc();
  OpBuilder &b = l.b;
  auto inputType = reduce.getInput().getType();
  // View the input as [N, rest] and sum over N, rest innermost.
  int64_t rows = inputType.getDimSize(0);
  int64_t rest = inputType.getNumElements() / rows;
  Value out = l.viewAs(reduce.getOutput(), {rest});
  Type element = elementTypeOf(out);
  Value sum = l.temporary(loc, {rest}, b.getF32Type());
  l.fill(loc, sum, 0.0);
  MLIRContext *ctx = b.getContext();
  AffineExpr n, m;
  bindDims(ctx, n, m);
  l.generic(loc, l.viewAs(reduce.getInput(), {rows, rest}), sum,
            {AffineMap::get(2, 0, {n, m}, ctx), AffineMap::get(2, 0, {m}, ctx)},
            {utils::IteratorType::reduction, utils::IteratorType::parallel},
            [&](OpBuilder &nb, Location loc, ValueRange args) {
              linalg::YieldOp::create(
                  nb, loc,
                  ValueRange{arith::AddFOp::create(
                      nb, loc, widenToF32(nb, loc, args[0]), args[1])});
            });
  l.elementwise(loc, sum, out,
                [&](OpBuilder &nb, Location loc, ValueRange args) {
                  linalg::YieldOp::create(
                      nb, loc, ValueRange{narrowTo(nb, loc, args[0], element)});
                });
}

static LogicalResult lowerSplatConstant(Lowering &l,
                                        arith::ConstantOp constant) {
  Operation *op = constant.getOperation();
  Location loc = op->getLoc();
  auto dense = dyn_cast<SplatElementsAttr>(constant.getValue());
  if (!dense || !isa<FloatType>(dense.getElementType()))
    return op->emitOpError("only float splat constants are lowered");
  l.fill(loc, l.view(constant.getResult()),
         dense.getSplatValue<APFloat>().convertToDouble());
  return success();
}

LogicalResult lowerElementwise(Lowering &l, Operation *op) {
  if (auto elementwise = dyn_cast<ElementwiseOpInterface>(op))
    lowerElementwiseOp(l, elementwise);
  else if (auto fused = dyn_cast<FusedElementwiseOp>(op))
    lowerFusedElementwise(l, fused);
  else if (auto pool = dyn_cast<GlobalAvgPoolOp>(op))
    lowerGlobalAvgPool(l, pool);
  else if (auto backward = dyn_cast<GlobalAvgPoolBackwardOp>(op))
    lowerGlobalAvgPoolBackward(l, backward);
  else if (auto reduce = dyn_cast<ReduceSumOp>(op))
    lowerReduceSum(l, reduce);
  else if (isa<BroadcastMulOp, BroadcastMulBackwardOp, BiasAddOp,
               BiasAddBackwardOp>(op))
    return lowerBroadcastMul(l, op);
  else if (auto constant = dyn_cast<arith::ConstantOp>(op))
    return lowerSplatConstant(l, constant);
  else
    return op->emitOpError("is not an elementwise op");
  return success();
}

} // namespace kiln
