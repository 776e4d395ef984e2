//===- LowerDropout.cpp - kiln.dropout as loops drawing Philox words ------===//
//
// The mask rule of kiln/ref/philox.h emitted as arith ops: per element, the
// ten Philox4x32 rounds on the counter {lo32(i), hi32(i), lo32(step),
// stream}, with the key schedule folded into constants (the seed is an
// attribute), then the comparison of the first word with the threshold and
// the f32 scale of the same helpers the reference kernel calls. i is the
// element's logical row-major (NHWC) index whatever layout the op computes
// in, so kiln-run, which knows only the logical order, draws the same mask.
//
//===----------------------------------------------------------------------===//

#include "passes/Conversion/KilnToLinalg/Lowering.h"

#include "dialects/Kiln/IR/KilnLayout.h"
#include "dialects/Kiln/IR/KilnOps.h"
#include "kiln/ref/philox.h"
#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;

namespace kiln {

/// philox4x32_10(ctr, key)[0] for i32 counter words and a constant key.
static Value emitPhiloxFirstWord(OpBuilder &b, Location loc,
                                 std::array<Value, 4> ctr,
                                 std::array<uint32_t, 2> key) {
  Type i32 = b.getI32Type();
  auto c = [&](uint32_t v) -> Value {
    return arith::ConstantOp::create(b, loc, b.getIntegerAttr(i32, v));
  };
  auto xori = [&](Value l, Value r) -> Value {
    return arith::XOrIOp::create(b, loc, l, r);
  };
  Value m0 = c(ref::kPhiloxM0), m1 = c(ref::kPhiloxM1);
  for (int round = 0; round < ref::kPhiloxRounds; ++round) {
    if (round > 0) {
      key[0] += ref::kPhiloxW0;
      key[1] += ref::kPhiloxW1;
    }
    auto p0 = arith::MulUIExtendedOp::create(b, loc, m0, ctr[0]);
    auto p1 = arith::MulUIExtendedOp::create(b, loc, m1, ctr[2]);
    ctr = {xori(xori(p1.getHigh(), ctr[1]), c(key[0])), p1.getLow(),
           xori(xori(p0.getHigh(), ctr[3]), c(key[1])), p0.getLow()};
  }
  return ctr[0];
}

LogicalResult lowerDropout(Lowering &l, Operation *operation) {
  auto op = cast<DropoutOp>(operation);
  Location loc = op.getLoc();
  OpBuilder &b = l.b;
  // Static: the memory plan has refused dynamic shapes already.
  auto type = cast<RankedTensorType>(op.getInput().getType());
  SmallVector<int64_t> logical(type.getShape());
  if (logical.empty())
    logical.push_back(1);

  // The loops run over the physical shape; `strides` turn their induction
  // variables into the logical NHWC index.
  SmallVector<int64_t> physical, strides;
  if (type.getRank() == 4 && getComputeLayout(op) == Layout::NChw16c) {
    int64_t h = logical[1], w = logical[2], ch = logical[3];
    if (ch % 16 != 0)
      return op.emitOpError("nChw16c needs a multiple of 16 channels, got ")
             << ch;
    // [N, C/16, H, W, 16] with logical index ((n H + h) W + w) C + 16 cb + c.
    physical = {logical[0], ch / 16, h, w, 16};
    strides = {h * w * ch, 16, w * ch, ch, 1};
  } else {
    physical = logical;
    strides.assign(logical.size(), 1);
    for (int i = int(logical.size()) - 2; i >= 0; --i)
      strides[i] = strides[i + 1] * logical[i + 1];
  }

  const double ratio = op.getRatio().convertToFloat();
  const uint32_t threshold = ref::dropoutThreshold(ratio);
  const float scale = ref::dropoutScale(ratio);
  const std::array<uint32_t, 2> key =
      ref::dropoutKey(static_cast<uint64_t>(op.getSeed()));
  Type i32 = b.getI32Type(), i64 = b.getI64Type();
  Type element = type.getElementType();

  Value step = arith::TruncIOp::create(b, loc, i32, l.loadScalar(loc, op.getStep()));
  Value stream = arith::ConstantOp::create(
      b, loc, b.getIntegerAttr(i32, static_cast<uint32_t>(op.getStream())));
  Value x = l.viewAs(op.getInput(), physical);
  Value y = l.viewAs(op.getOutput(), physical);
  l.parallelLoops(loc, physical, [&](ValueRange ivs) {
    Value index = arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(0));
    for (auto [iv, stride] : llvm::zip(ivs, strides)) {
      Value i = arith::IndexCastOp::create(b, loc, i64, iv);
      Value s = arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(stride));
      index = arith::AddIOp::create(b, loc, index,
                                    arith::MulIOp::create(b, loc, i, s));
    }
    Value lo = arith::TruncIOp::create(b, loc, i32, index);
    Value hi = arith::TruncIOp::create(
        b, loc, i32,
        arith::ShRUIOp::create(
            b, loc, index,
            arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(32))));
    Value word = emitPhiloxFirstWord(b, loc, {lo, hi, step, stream}, key);
    Value keep = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::uge, word,
        arith::ConstantOp::create(b, loc, b.getIntegerAttr(i32, threshold)));
    Value v = widenToF32(b, loc, memref::LoadOp::create(b, loc, x, ivs));
    Value scaled = arith::MulFOp::create(b, loc, v, l.f32(loc, scale));
    Value out = arith::SelectOp::create(b, loc, keep, scaled, l.f32(loc, 0.0));
    memref::StoreOp::create(b, loc, narrowTo(b, loc, out, element), y, ivs);
  });
  return success();
}

} // namespace kiln
