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
/// The loops of a broadcast_binary, a bias_add or their backward ops: one
/// per dimension of the full (result or dy) shape; an operand that
/// broadcasts (a bias viewed as [1, ..., 1, C]) is indexed with 0 where it
/// is 1 and the full shape is not. When the channels (the last dimension)
/// are a multiple of 16 and no operand broadcasts them, every view takes 16
/// channels to a vector<16xT> element, as the flat elementwise loops do.
struct BroadcastLoops {
  SmallVector<int64_t> full;
  bool lanes;
  /// f32, or vector<16xf32> with lanes.
  Type f32;
  MLIRContext *ctx;

  BroadcastLoops(Lowering &l, ArrayRef<int64_t> fullShape,
                 ArrayRef<ArrayRef<int64_t>> parts)
      : full(fullShape), ctx(l.b.getContext()) {
    lanes = !full.empty() && full.back() % 16 == 0 &&
            llvm::all_of(parts, [&](ArrayRef<int64_t> part) {
              return part.back() == full.back();
            });
    f32 = l.b.getF32Type();
    if (lanes) {
      full.back() /= 16;
      f32 = channelLanes(f32);
    }
  }

  /// `shape` (of `v`'s size, at full rank) in loop units.
  SmallVector<int64_t> units(ArrayRef<int64_t> shape) const {
    SmallVector<int64_t> out(shape);
    if (lanes)
      out.back() /= 16;
    return out;
  }

  /// `v` viewed as `shape` (its own type's when empty).
  Value view(Lowering &l, Value v, ArrayRef<int64_t> shape = {}) const {
    auto type = cast<RankedTensorType>(v.getType());
    SmallVector<int64_t> s = units(shape.empty() ? type.getShape() : shape);
    return lanes ? l.viewAs(v, s, channelLanes(type.getElementType()))
                 : l.viewAs(v, s);
  }

  /// The indexing map of an operand of `shape` (at full rank).
  AffineMap map(ArrayRef<int64_t> shape) const {
    SmallVector<int64_t> part = units(shape);
    SmallVector<AffineExpr> exprs;
    for (unsigned d = 0; d < full.size(); ++d)
      exprs.push_back(broadcasts(part, d) ? getAffineConstantExpr(0, ctx)
                                          : getAffineDimExpr(d, ctx));
    return AffineMap::get(full.size(), 0, exprs, ctx);
  }

  AffineMap fullMap() const {
    return AffineMap::getMultiDimIdentityMap(full.size(), ctx);
  }

  /// Reductions over the dimensions an operand of `shape` broadcasts.
  SmallVector<utils::IteratorType> iterators(ArrayRef<int64_t> shape) const {
    SmallVector<int64_t> part = units(shape);
    SmallVector<utils::IteratorType> out;
    for (unsigned d = 0; d < full.size(); ++d)
      out.push_back(broadcasts(part, d) ? utils::IteratorType::reduction
                                        : utils::IteratorType::parallel);
    return out;
  }

private:
  bool broadcasts(ArrayRef<int64_t> part, unsigned d) const {
    return part[d] == 1 && full[d] != 1;
  }
};

/// An operand of a broadcast loop nest: its view and indexing map.
struct BroadcastOperand {
  Value view;
  AffineMap map;
};
} // namespace

static BroadcastOperand operandOf(Lowering &l, const BroadcastLoops &loops,
                                  Value v, ArrayRef<int64_t> shape = {}) {
  ArrayRef<int64_t> s =
      shape.empty() ? cast<RankedTensorType>(v.getType()).getShape() : shape;
  return {loops.view(l, v, shape), loops.map(s)};
}

/// `output` (full-shaped) = combine(`inputs`) at every element, in f32.
static void
emitBroadcastCombine(Lowering &l, Location loc, const BroadcastLoops &loops,
                     ArrayRef<BroadcastOperand> inputs, Value output,
                     function_ref<Value(OpBuilder &, Location, ValueRange)>
                         combine) {
  Type element = elementTypeOf(output);
  SmallVector<Value> views;
  SmallVector<AffineMap> maps;
  for (const BroadcastOperand &in : inputs) {
    views.push_back(in.view);
    maps.push_back(in.map);
  }
  maps.push_back(loops.fullMap());
  l.generic(loc, views, output, maps,
            SmallVector<utils::IteratorType>(loops.full.size(),
                                             utils::IteratorType::parallel),
            [&](OpBuilder &nb, Location loc, ValueRange args) {
              SmallVector<Value> wide;
              for (Value a : args.drop_back())
                wide.push_back(widenToF32(nb, loc, a));
              Value y = combine(nb, loc, wide);
              linalg::YieldOp::create(
                  nb, loc, ValueRange{narrowTo(nb, loc, y, element)});
            });
}

/// `small` (of `smallShape` at full rank) = the sum over the dimensions it
/// broadcasts of `term` of the `inputs` (widened to f32), accumulated in an
/// f32 temporary of its shape, then rounded. Without such dimensions the
/// term is written directly: the same bits as a sum of one element.
static void
emitBroadcastSum(Lowering &l, Location loc, const BroadcastLoops &loops,
                 ArrayRef<BroadcastOperand> inputs, Value small,
                 ArrayRef<int64_t> smallShape,
                 function_ref<Value(OpBuilder &, Location, ValueRange)> term) {
  if (loops.units(smallShape) == loops.full) {
    emitBroadcastCombine(l, loc, loops, inputs,
                         loops.view(l, small, smallShape), term);
    return;
  }
  Value target = loops.view(l, small, smallShape);
  Type element = elementTypeOf(target);
  Value sum = l.temporary(loc, cast<MemRefType>(target.getType()).getShape(),
                          loops.f32);
  l.fill(loc, sum, 0.0);
  SmallVector<Value> views;
  SmallVector<AffineMap> maps;
  for (const BroadcastOperand &in : inputs) {
    views.push_back(in.view);
    maps.push_back(in.map);
  }
  maps.push_back(loops.map(smallShape));
  l.generic(loc, views, sum, maps, loops.iterators(smallShape),
            [&](OpBuilder &nb, Location loc, ValueRange args) {
              SmallVector<Value> wide;
              for (Value a : args.drop_back())
                wide.push_back(widenToF32(nb, loc, a));
              Value t = term(nb, loc, wide);
              linalg::YieldOp::create(
                  nb, loc,
                  ValueRange{arith::AddFOp::create(nb, loc, t, args.back())});
            });
  l.elementwise(loc, sum, target,
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

static ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

/// The scalar arithmetic of broadcast_binary.
static Value binaryScalar(OpBuilder &b, Location loc, BinaryKind kind,
                          Value x, Value y) {
  switch (kind) {
  case BinaryKind::Add:
    return arith::AddFOp::create(b, loc, x, y);
  case BinaryKind::Sub:
    return arith::SubFOp::create(b, loc, x, y);
  case BinaryKind::Mul:
    return arith::MulFOp::create(b, loc, x, y);
  case BinaryKind::Div:
    return arith::DivFOp::create(b, loc, x, y);
  }
  llvm_unreachable("unknown binary kind");
}

/// The gradient term of broadcast_binary_backward from `args`: dy, then the
/// forward operands the op reads (lhs before rhs), widened to f32.
static Value binaryGradientTerm(OpBuilder &b, Location loc, BinaryKind kind,
                                bool wrtRhs, ValueRange args) {
  Value dy = args[0];
  switch (kind) {
  case BinaryKind::Add:
    return dy;
  case BinaryKind::Sub:
    return wrtRhs ? Value(arith::NegFOp::create(b, loc, dy)) : dy;
  case BinaryKind::Mul:
    return arith::MulFOp::create(b, loc, dy, args[1]);
  case BinaryKind::Div: {
    if (!wrtRhs)
      return arith::DivFOp::create(b, loc, dy, args[1]);
    // -dy * lhs / rhs^2
    Value num = arith::MulFOp::create(b, loc, dy, args[1]);
    Value square = arith::MulFOp::create(b, loc, args[2], args[2]);
    return arith::NegFOp::create(
        b, loc, arith::DivFOp::create(b, loc, num, square));
  }
  }
  llvm_unreachable("unknown binary kind");
}

/// broadcast_binary and bias_add: one parallel loop nest over the result;
/// their gradients (the term of each, or dy) summed in f32 over the
/// dimensions the operand broadcasts, then rounded.
static LogicalResult lowerBroadcast(Lowering &l, Operation *op) {
  Location loc = op->getLoc();
  auto dyItself = [](OpBuilder &, Location, ValueRange a) -> Value {
    return a[0];
  };
  if (auto add = dyn_cast<BiasAddOp>(op)) {
    SmallVector<int64_t> bias = biasShapeOf(add.getInput());
    BroadcastLoops loops(l, shapeOf(add.getInput()), {bias});
    emitBroadcastCombine(
        l, loc, loops,
        {operandOf(l, loops, add.getInput()),
         operandOf(l, loops, add.getBias(), bias)},
        loops.view(l, add.getOutput()),
        [](OpBuilder &nb, Location loc, ValueRange a) -> Value {
          return arith::AddFOp::create(nb, loc, a[0], a[1]);
        });
    return success();
  }
  if (auto backward = dyn_cast<BiasAddBackwardOp>(op)) {
    SmallVector<int64_t> bias = biasShapeOf(backward.getOutputGrad());
    BroadcastLoops loops(l, shapeOf(backward.getOutputGrad()), {bias});
    emitBroadcastSum(l, loc, loops,
                     {operandOf(l, loops, backward.getOutputGrad())},
                     backward.getBiasGrad(), bias, dyItself);
    return success();
  }
  if (auto binary = dyn_cast<BroadcastBinaryOp>(op)) {
    BroadcastLoops loops(l, shapeOf(binary.getOutput()),
                         {shapeOf(binary.getLhs()), shapeOf(binary.getRhs())});
    BinaryKind kind = binary.getKind();
    emitBroadcastCombine(
        l, loc, loops,
        {operandOf(l, loops, binary.getLhs()),
         operandOf(l, loops, binary.getRhs())},
        loops.view(l, binary.getOutput()),
        [&](OpBuilder &nb, Location loc, ValueRange a) {
          return binaryScalar(nb, loc, kind, a[0], a[1]);
        });
    return success();
  }
  auto backward = cast<BroadcastBinaryBackwardOp>(op);
  SmallVector<Value> read = {backward.getOutputGrad()};
  for (Value v : {backward.getLhs(), backward.getRhs()})
    if (v)
      read.push_back(v);
  SmallVector<ArrayRef<int64_t>> parts = {shapeOf(backward.getOperandGrad())};
  for (Value v : read)
    parts.push_back(shapeOf(v));
  BroadcastLoops loops(l, shapeOf(backward.getOutputGrad()), parts);
  SmallVector<BroadcastOperand> inputs;
  for (Value v : read)
    inputs.push_back(operandOf(l, loops, v));
  BinaryKind kind = backward.getKind();
  bool wrtRhs = backward.getWrt() == BinaryOperand::Rhs;
  emitBroadcastSum(l, loc, loops, inputs, backward.getOperandGrad(),
                   shapeOf(backward.getOperandGrad()),
                   [&](OpBuilder &nb, Location loc, ValueRange a) {
                     return binaryGradientTerm(nb, loc, kind, wrtRhs, a);
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
  else if (isa<BroadcastBinaryOp, BroadcastBinaryBackwardOp, BiasAddOp,
               BiasAddBackwardOp>(op))
    return lowerBroadcast(l, op);
  else if (auto constant = dyn_cast<arith::ConstantOp>(op))
    return lowerSplatConstant(l, constant);
  else
    return op->emitOpError("is not an elementwise op");
  return success();
}

} // namespace kiln
