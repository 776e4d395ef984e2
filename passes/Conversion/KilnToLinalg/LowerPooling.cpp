//===- LowerPooling.cpp - Max and average pooling, forward and backward ---===//
//
// Windowed ops are scf loop nests over (n, oh, ow), images in parallel, with
// the bounds check of the padded window per tap. Average pooling loops over
// the taps (kh, kw) and then over channels; max pooling over channels and
// then over the taps, so that each window's running maximum (and, backward,
// its tap) stays in a register. Channels go 16 at a time, as elements of
// vector<16xT> (NHWC with a multiple of 16 channels, and nChw16c, whose 16
// channels of a pixel are contiguous), or one by one (other NHWC): a plain
// loop of 16 or 32 channels would be unrolled to scalar code before LLVM's
// vectorizer sees it.
//
//===----------------------------------------------------------------------===//

#include "passes/Conversion/KilnToLinalg/Lowering.h"

#include "dialects/Kiln/IR/KilnLayout.h"
#include "dialects/Kiln/IR/KilnOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <limits>

using namespace mlir;

namespace kiln {

namespace {
/// The geometry of a pooling window and index arithmetic on it.
struct Window {
  int64_t kh, kw, sh, sw, pt, pl;
  int64_t height, width, channels;

  /// The input coordinate of window offset `k` for output coordinate `o`.
  static Value input(OpBuilder &b, Location loc, Value o, Value k,
                     int64_t stride, int64_t pad) {
    Value scaled = arith::MulIOp::create(
        b, loc, o, arith::ConstantIndexOp::create(b, loc, stride));
    Value shifted = arith::SubIOp::create(
        b, loc, scaled, arith::ConstantIndexOp::create(b, loc, pad));
    return arith::AddIOp::create(b, loc, shifted, k);
  }

  /// 0 <= v < bound.
  static Value inRange(OpBuilder &b, Location loc, Value v, int64_t bound) {
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value upper = arith::ConstantIndexOp::create(b, loc, bound);
    Value ge = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, v, zero);
    Value lt = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, v, upper);
    return arith::AndIOp::create(b, loc, ge, lt);
  }

  /// The input pixel of window offset (kh, kw) of output (oh, ow), and
  /// whether it lies inside the image (not padding).
  struct Tap {
    Value ih, iw, valid;
  };
  Tap tap(OpBuilder &b, Location loc, Value oh, Value ow, Value kh,
          Value kw) const {
    Value ih = input(b, loc, oh, kh, sh, pt);
    Value iw = input(b, loc, ow, kw, sw, pl);
    Value valid = arith::AndIOp::create(b, loc, inRange(b, loc, ih, height),
                                        inRange(b, loc, iw, width));
    return {ih, iw, valid};
  }
};

/// The element type the loops of a pooling op work on: 16 channels of
/// `scalar` with `lanes`, else `scalar`.
Type laneType(Type scalar, bool lanes) {
  return lanes ? channelLanes(scalar) : scalar;
}

/// Whether the channel loops of an op on `type` take 16 channels at a time.
bool hasLanes(Type type, Layout layout) {
  return layout == Layout::NChw16c ||
         cast<RankedTensorType>(type).getDimSize(3) % 16 == 0;
}

/// An activation's view in the op's layout: [N, H, W, C/16] or, blocked,
/// [N, C/16, H, W] of vector<16xT>; [N, H, W, C] of scalars without lanes.
/// A channel index is the block c / 16, or c.
struct ActivationView {
  Value memref;
  bool blocked;

  ActivationView(Lowering &l, Value value, Layout layout)
      : blocked(layout == Layout::NChw16c) {
    auto type = cast<RankedTensorType>(value.getType());
    ArrayRef<int64_t> s = type.getShape();
    Type lanes = laneType(type.getElementType(), true);
    if (blocked)
      memref = l.viewAs(value, {s[0], s[3] / 16, s[1], s[2]}, lanes);
    else if (hasLanes(type, layout))
      memref = l.viewAs(value, {s[0], s[1], s[2], s[3] / 16}, lanes);
    else
      memref = l.view(value);
  }

  SmallVector<Value> at(Value n, Value h, Value w, ValueRange channel) const {
    if (blocked)
      return {n, channel[0], h, w};
    return {n, h, w, channel[0]};
  }
};

/// The loop bounds of a channel index.
SmallVector<int64_t> channelBounds(int64_t channels, bool lanes) {
  return {lanes ? channels / 16 : channels};
}

/// `scalar` as the loops' element type (broadcast with lanes).
Value splat(OpBuilder &b, Location loc, Value scalar, bool lanes) {
  if (!lanes)
    return scalar;
  return vector::BroadcastOp::create(b, loc, laneType(scalar.getType(), true),
                                     scalar);
}

template <typename PoolOp>
Window windowOf(PoolOp op, RankedTensorType input) {
  ArrayRef<int64_t> window = op.getWindow(), strides = op.getStrides(),
                    padding = op.getPadding();
  return {window[0], window[1], strides[0], strides[1], padding[0], padding[2],
          input.getDimSize(1), input.getDimSize(2), input.getDimSize(3)};
}
} // namespace

/// Emits `body(ih, iw)` for window offset (kh, kw) of output (oh, ow),
/// inside a check that the tap is not padding.
static void ifValidTap(OpBuilder &b, Location loc, const Window &w, Value oh,
                       Value ow, Value kh, Value kw,
                       function_ref<void(Value ih, Value iw)> body) {
  Window::Tap t = w.tap(b, loc, oh, ow, kh, kw);
  auto ifValid = scf::IfOp::create(b, loc, t.valid, /*withElse=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&ifValid.getThenRegion().front());
  body(t.ih, t.iw);
}

/// Emits, for every valid window position of output (n, oh, ow), `body(ih,
/// iw)`. Returns nothing; the caller's body typically loops over channels.
static void forEachValidTap(Lowering &l, Location loc, const Window &w,
                            ArrayRef<int64_t> outShape,
                            std::function<void(ValueRange nhw, Value ih,
                                               Value iw)>
                                body) {
  // Images are independent: one per thread at a time.
  l.parallelLoops(loc, {outShape[0], outShape[1], outShape[2], w.kh, w.kw},
                  [&](ValueRange ivs) {
                    ifValidTap(l.b, loc, w, ivs[1], ivs[2], ivs[3], ivs[4],
                               [&](Value ih, Value iw) {
                                 body(ivs.take_front(3), ih, iw);
                               });
                  });
}

/// The number of valid taps of output row/column `o` along one axis.
static Value validCount(OpBuilder &b, Location loc, Value o, int64_t k,
                        int64_t stride, int64_t pad, int64_t size) {
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value first = Window::input(b, loc, o, zero, stride, pad);
  Value last = arith::AddIOp::create(b, loc, first,
                                     arith::ConstantIndexOp::create(b, loc, k));
  Value lo = arith::MaxSIOp::create(b, loc, first, zero);
  Value hi = arith::MinSIOp::create(b, loc, last,
                                    arith::ConstantIndexOp::create(b, loc, size));
  return arith::SubIOp::create(b, loc, hi, lo);
}

/// 1 / (valid taps of output (oh, ow)) as f32.
static Value inverseCount(OpBuilder &b, Location loc, const Window &w, Value oh,
                          Value ow) {
  Value ch = validCount(b, loc, oh, w.kh, w.sh, w.pt, w.height);
  Value cw = validCount(b, loc, ow, w.kw, w.sw, w.pl, w.width);
  Value count = arith::MulIOp::create(b, loc, ch, cw);
  Value asInt = arith::IndexCastOp::create(b, loc, b.getI64Type(), count);
  Value asFloat = arith::SIToFPOp::create(b, loc, b.getF32Type(), asInt);
  Value one = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(1.0f));
  return arith::DivFOp::create(b, loc, one, asFloat);
}

/// Loops over channels: body(channel index).
static void channelLoop(Lowering &l, Location loc, int64_t channels,
                        bool lanes, std::function<void(ValueRange)> body) {
  l.loops(loc, channelBounds(channels, lanes), body);
}

static Value load(OpBuilder &b, Location loc, Value memref, ValueRange idx) {
  return widenToF32(b, loc, memref::LoadOp::create(b, loc, memref, idx));
}
static void store(OpBuilder &b, Location loc, Value v, Value memref,
                  ValueRange idx) {
  Type t = cast<MemRefType>(memref.getType()).getElementType();
  if (t != v.getType())
    v = arith::TruncFOp::create(b, loc, t, v);
  memref::StoreOp::create(b, loc, v, memref, idx);
}

/// Scans the window of output (oh, ow) in row-major tap order, carrying
/// `init` through it: `body(builder, ih, iw, tap, carried)` gives the new
/// carried values at a valid tap (`tap` is its index kh * KW + kw, splat
/// with lanes); padding taps keep them. Returns the final values.
static scf::ValueVector scanWindow(
    OpBuilder &b, Location loc, const Window &w, Value oh, Value ow, bool lanes,
    ValueRange init,
    function_ref<scf::ValueVector(OpBuilder &, Value, Value, Value, ValueRange)>
        body) {
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  return scf::buildLoopNest(
             b, loc, {zero, zero},
             {arith::ConstantIndexOp::create(b, loc, w.kh),
              arith::ConstantIndexOp::create(b, loc, w.kw)},
             {one, one}, init,
             [&](OpBuilder &nb, Location loc, ValueRange k,
                 ValueRange carried) -> scf::ValueVector {
               Window::Tap t = w.tap(nb, loc, oh, ow, k[0], k[1]);
               Value index = arith::AddIOp::create(
                   nb, loc,
                   arith::MulIOp::create(
                       nb, loc, k[0],
                       arith::ConstantIndexOp::create(nb, loc, w.kw)),
                   k[1]);
               Value tap = splat(
                   nb, loc,
                   arith::IndexCastOp::create(nb, loc, nb.getI32Type(), index),
                   lanes);
               if (carried.empty()) {
                 // scf.if without results has its terminator already.
                 auto ifValid = scf::IfOp::create(nb, loc, t.valid);
                 OpBuilder then =
                     OpBuilder::atBlockTerminator(ifValid.thenBlock());
                 body(then, t.ih, t.iw, tap, carried);
                 return {};
               }
               auto ifValid = scf::IfOp::create(
                   nb, loc, ValueRange(carried).getTypes(), t.valid,
                   /*withElse=*/true);
               OpBuilder then = ifValid.getThenBodyBuilder();
               scf::YieldOp::create(then, loc,
                                    body(then, t.ih, t.iw, tap, carried));
               OpBuilder otherwise = ifValid.getElseBodyBuilder();
               scf::YieldOp::create(otherwise, loc, carried);
               return scf::ValueVector(ifValid.getResults().begin(),
                                       ifValid.getResults().end());
             })
      .results;
}

static void lowerMaxPool(Lowering &l, MaxPoolOp pool, Layout layout,
                         bool lanes) {
  Location loc = pool.getLoc();
  OpBuilder &b = l.b;
  // Per output pixel and channel block, the window's maximum is carried in
  // a register through the taps (f32, as the taps are compared) and stored
  // once: no pass to fill the output with -inf, and no load, round and
  // store of the output per tap.
  Window w = windowOf(pool, pool.getInput().getType());
  ActivationView x(l, pool.getInput(), layout), y(l, pool.getOutput(), layout);
  auto outShape = pool.getOutput().getType().getShape();
  Type accType = laneType(b.getF32Type(), lanes);
  l.parallelLoops(
      loc, {outShape[0], outShape[1], outShape[2]}, [&](ValueRange nhw) {
        channelLoop(l, loc, w.channels, lanes, [&](ValueRange c) {
          Value init = floatConstant(b, loc, accType,
                                     -std::numeric_limits<double>::infinity());
          scf::ValueVector max = scanWindow(
              b, loc, w, nhw[1], nhw[2], lanes, init,
              [&](OpBuilder &nb, Value ih, Value iw, Value,
                  ValueRange acc) -> scf::ValueVector {
                Value v = load(nb, loc, x.memref, x.at(nhw[0], ih, iw, c));
                return {arith::MaximumFOp::create(nb, loc, acc[0], v)};
              });
          store(b, loc, max[0], y.memref, y.at(nhw[0], nhw[1], nhw[2], c));
        });
      });
}

/// dst += src / count over every valid tap of every output window: the
/// average pool gathers each window's taps of x into its output element
/// (tapIsSource), its gradient spreads each output gradient over the taps.
static void accumulateAverage(Lowering &l, Location loc, const Window &w,
                              ArrayRef<int64_t> outShape, ActivationView &src,
                              ActivationView &dst, bool tapIsSource,
                              bool lanes) {
  OpBuilder &b = l.b;
  l.fill(loc, dst.memref, 0.0);
  forEachValidTap(l, loc, w, outShape, [&](ValueRange nhw, Value ih, Value iw) {
    Value scale = inverseCount(b, loc, w, nhw[1], nhw[2]);
    channelLoop(l, loc, w.channels, lanes, [&](ValueRange c) {
      auto tap = [&](ActivationView &v) { return v.at(nhw[0], ih, iw, c); };
      auto out = [&](ActivationView &v) {
        return v.at(nhw[0], nhw[1], nhw[2], c);
      };
      SmallVector<Value> to = tapIsSource ? out(dst) : tap(dst);
      Value v = load(b, loc, src.memref, tapIsSource ? tap(src) : out(src));
      Value acc = math::FmaOp::create(b, loc, v, splat(b, loc, scale, lanes),
                                      load(b, loc, dst.memref, to));
      store(b, loc, acc, dst.memref, to);
    });
  });
}

static void lowerAvgPool(Lowering &l, AvgPoolOp pool, Layout layout,
                         bool lanes) {
  Window w = windowOf(pool, pool.getInput().getType());
  ActivationView x(l, pool.getInput(), layout), y(l, pool.getOutput(), layout);
  accumulateAverage(l, pool.getLoc(), w, pool.getOutput().getType().getShape(),
                    x, y, /*tapIsSource=*/true, lanes);
}

static void lowerAvgPoolBackward(Lowering &l, AvgPoolBackwardOp backward,
                                 Layout layout, bool lanes) {
  Window w = windowOf(backward, backward.getInputGrad().getType());
  ActivationView dy(l, backward.getOutputGrad(), layout);
  ActivationView dx(l, backward.getInputGrad(), layout);
  accumulateAverage(l, backward.getLoc(), w,
                    backward.getOutputGrad().getType().getShape(), dy, dx,
                    /*tapIsSource=*/false, lanes);
}

static void lowerMaxPoolBackward(Lowering &l, MaxPoolBackwardOp backward,
                                 Layout layout, bool lanes) {
  Location loc = backward.getLoc();
  OpBuilder &b = l.b;
  Window w = windowOf(backward, backward.getInput().getType());
  ActivationView dy(l, backward.getOutputGrad(), layout);
  ActivationView x(l, backward.getInput(), layout);
  ActivationView dx(l, backward.getInputGrad(), layout);
  l.fill(loc, dx.memref, 0.0);
  auto outShape = backward.getOutputGrad().getType().getShape();
  // Per output element, the first maximum of its window in scan order gets
  // the gradient (strict '>' keeps the first of equal values; an all-NaN
  // window routes nothing). Per output pixel and channel block, a scan of
  // the valid taps carries the best value and its tap in registers, then a
  // second scan adds dy where the tap is the winner.
  Type valueType = laneType(b.getF32Type(), lanes);
  Type tapType = laneType(b.getI32Type(), lanes);
  auto constant = [&](Type type, TypedAttr value) -> Value {
    if (!lanes)
      return arith::ConstantOp::create(b, loc, value);
    return arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(cast<ShapedType>(type), value));
  };
  l.parallelLoops(
      loc, {outShape[0], outShape[1], outShape[2]}, [&](ValueRange ivs) {
        Value n = ivs[0], oh = ivs[1], ow = ivs[2];
        channelLoop(l, loc, w.channels, lanes, [&](ValueRange c) {
          Value noValue = constant(
              valueType,
              b.getF32FloatAttr(-std::numeric_limits<float>::infinity()));
          Value noTap = constant(tapType, b.getI32IntegerAttr(-1));
          scf::ValueVector best = scanWindow(
              b, loc, w, oh, ow, lanes, {noValue, noTap},
              [&](OpBuilder &nb, Value ih, Value iw, Value tap,
                  ValueRange carried) -> scf::ValueVector {
                Value v = load(nb, loc, x.memref, x.at(n, ih, iw, c));
                Value better = arith::CmpFOp::create(
                    nb, loc, arith::CmpFPredicate::OGT, v, carried[0]);
                return {
                    arith::SelectOp::create(nb, loc, better, v, carried[0]),
                    arith::SelectOp::create(nb, loc, better, tap, carried[1])};
              });
          Value g = load(b, loc, dy.memref, dy.at(n, oh, ow, c));
          Value zero = constant(valueType, b.getF32FloatAttr(0.0f));
          scanWindow(b, loc, w, oh, ow, lanes, {},
                     [&](OpBuilder &nb, Value ih, Value iw, Value tap,
                         ValueRange) -> scf::ValueVector {
                       Value won = arith::CmpIOp::create(
                           nb, loc, arith::CmpIPredicate::eq, best[1], tap);
                       SmallVector<Value> in = dx.at(n, ih, iw, c);
                       Value sum = arith::AddFOp::create(
                           nb, loc, load(nb, loc, dx.memref, in),
                           arith::SelectOp::create(nb, loc, won, g, zero));
                       store(nb, loc, sum, dx.memref, in);
                       return {};
                     });
        });
      });
}

LogicalResult lowerPooling(Lowering &l, Operation *op) {
  Layout layout = getComputeLayout(op);
  // Pooling keeps the channels: every operand has the first one's.
  bool lanes = hasLanes(op->getOperand(0).getType(), layout);
  if (auto pool = dyn_cast<MaxPoolOp>(op))
    lowerMaxPool(l, pool, layout, lanes);
  else if (auto pool = dyn_cast<AvgPoolOp>(op))
    lowerAvgPool(l, pool, layout, lanes);
  else if (auto backward = dyn_cast<AvgPoolBackwardOp>(op))
    lowerAvgPoolBackward(l, backward, layout, lanes);
  else
    lowerMaxPoolBackward(l, cast<MaxPoolBackwardOp>(op), layout, lanes);
  return success();
}

} // namespace kiln
