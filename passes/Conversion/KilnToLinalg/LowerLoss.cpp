//===- LowerLoss.cpp - Softmax cross-entropy, forward and backward --------===//
//
// Row by row with the max-subtracted log-sum-exp. With smoothing ls over K
// classes, a row's loss is lse - (1 - ls) * x[label] - ls / K * sum(x).
//
//===----------------------------------------------------------------------===//

#include "passes/Conversion/KilnToLinalg/Lowering.h"

#include "dialects/Kiln/IR/KilnOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <limits>

using namespace mlir;

namespace kiln {

/// A loop over [0, bound) carrying `inits`; `body(iv, carried)` returns the
/// next carried values.
static ValueRange reduceLoop(
    OpBuilder &b, Location loc, int64_t bound, ValueRange inits,
    std::function<SmallVector<Value>(OpBuilder &, Value, ValueRange)> body) {
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value upper = arith::ConstantIndexOp::create(b, loc, bound);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  auto loop = scf::ForOp::create(
      b, loc, zero, upper, one, inits,
      [&](OpBuilder &nb, Location loc, Value iv, ValueRange carried) {
        scf::YieldOp::create(nb, loc, body(nb, iv, carried));
      });
  return loop.getResults();
}

/// The log-sum-exp of row `n` of `logits` [N, K], and the row's sum.
static std::pair<Value, Value> rowStatistics(OpBuilder &b, Location loc,
                                             Value logits, Value n, int64_t k) {
  Value lowest = arith::ConstantOp::create(
      b, loc, b.getF32FloatAttr(-std::numeric_limits<float>::infinity()));
  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0f));
  Value max = reduceLoop(b, loc, k, lowest,
                         [&](OpBuilder &nb, Value j, ValueRange acc) {
                           Value x = memref::LoadOp::create(nb, loc, logits,
                                                            ValueRange{n, j});
                           return SmallVector<Value>{
                               arith::MaximumFOp::create(nb, loc, acc[0], x)};
                         })[0];
  ValueRange sums = reduceLoop(
      b, loc, k, ValueRange{zero, zero},
      [&](OpBuilder &nb, Value j, ValueRange acc) {
        Value x = memref::LoadOp::create(nb, loc, logits, ValueRange{n, j});
        Value e = math::ExpOp::create(nb, loc,
                                      arith::SubFOp::create(nb, loc, x, max));
        return SmallVector<Value>{arith::AddFOp::create(nb, loc, acc[0], e),
                                  arith::AddFOp::create(nb, loc, acc[1], x)};
      });
  Value lse =
      arith::AddFOp::create(b, loc, max, math::LogOp::create(b, loc, sums[0]));
  return {lse, sums[1]};
}

static Value labelIndex(OpBuilder &b, Location loc, Value labels, Value n) {
  Value label = memref::LoadOp::create(b, loc, labels, ValueRange{n});
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), label);
}

LogicalResult lowerLoss(Lowering &l, Operation *op) {
  Location loc = op->getLoc();
  OpBuilder &b = l.b;

  if (auto loss = dyn_cast<SoftmaxCrossEntropyOp>(op)) {
    auto type = loss.getLogits().getType();
    int64_t rows = type.getDimSize(0), k = type.getDimSize(1);
    double ls = loss.getLabelSmoothing().convertToFloat();
    Value logits = l.view(loss.getLogits()), labels = l.view(loss.getLabels());
    Value hit = l.f32(loc, 1.0 - ls), spread = l.f32(loc, ls / double(k));
    Value total = reduceLoop(
        b, loc, rows, l.f32(loc, 0.0),
        [&](OpBuilder &nb, Value n, ValueRange acc) {
          auto [lse, sum] = rowStatistics(nb, loc, logits, n, k);
          Value xl = memref::LoadOp::create(
              nb, loc, logits, ValueRange{n, labelIndex(nb, loc, labels, n)});
          Value row = arith::SubFOp::create(
              nb, loc, lse, arith::MulFOp::create(nb, loc, hit, xl));
          row = arith::SubFOp::create(nb, loc, row,
                                      arith::MulFOp::create(nb, loc, spread, sum));
          return SmallVector<Value>{arith::AddFOp::create(nb, loc, acc[0], row)};
        })[0];
    Value mean = arith::MulFOp::create(b, loc, total, l.f32(loc, 1.0 / rows));
    memref::StoreOp::create(b, loc, mean, l.view(loss.getLoss()), ValueRange{});
    return success();
  }

  auto backward = cast<SoftmaxCrossEntropyBackwardOp>(op);
  auto type = backward.getLogits().getType();
  int64_t rows = type.getDimSize(0), k = type.getDimSize(1);
  double ls = backward.getLabelSmoothing().convertToFloat();
  Value logits = l.view(backward.getLogits());
  Value labels = l.view(backward.getLabels());
  Value out = l.view(backward.getLogitsGrad());
  Value scale = arith::MulFOp::create(b, loc, l.loadScalar(loc, backward.getLossGrad()),
                                      l.f32(loc, 1.0 / rows));
  Value hit = l.f32(loc, 1.0 - ls), spread = l.f32(loc, ls / double(k));
  Value zero = l.f32(loc, 0.0);
  l.loops(loc, {rows}, [&](ValueRange ivs) {
    Value n = ivs[0];
    Value lse = rowStatistics(b, loc, logits, n, k).first;
    Value label = labelIndex(b, loc, labels, n);
    l.loops(loc, {k}, [&](ValueRange inner) {
      Value j = inner[0];
      Value x = memref::LoadOp::create(b, loc, logits, ValueRange{n, j});
      Value p = math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, x, lse));
      Value isLabel =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, j, label);
      Value q = arith::AddFOp::create(
          b, loc, spread, arith::SelectOp::create(b, loc, isLabel, hit, zero));
      Value g = arith::MulFOp::create(b, loc, scale,
                                      arith::SubFOp::create(b, loc, p, q));
      memref::StoreOp::create(b, loc, g, out, ValueRange{n, j});
    });
  });
  return success();
}

} // namespace kiln
