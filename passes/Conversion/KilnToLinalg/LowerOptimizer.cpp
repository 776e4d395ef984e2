//===- LowerOptimizer.cpp - Learning-rate schedule and parameter updates --===//
//
// The schedule is scalar f64 code reading its parameters from the schedule
// variable, so the runtime can override them. Updates are one elementwise
// loop per parameter, or one loop over all parameters of a fused update,
// written in place into the variables when the memory plan allows it.
//
//===----------------------------------------------------------------------===//

#include "passes/Conversion/KilnToLinalg/Lowering.h"

#include "dialects/Kiln/IR/KilnOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include "llvm/Support/MathExtras.h"

using namespace mlir;

namespace kiln {

static void yield(OpBuilder &b, Location loc, ValueRange values) {
  linalg::YieldOp::create(b, loc, values);
}

namespace {
/// f64 arithmetic helpers for the schedule.
struct F64 {
  OpBuilder &b;
  Location loc;
  Value c(double v) { return arith::ConstantOp::create(b, loc, b.getF64FloatAttr(v)); }
  Value add(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return arith::DivFOp::create(b, loc, x, y); }
  Value min(Value x, Value y) { return arith::MinimumFOp::create(b, loc, x, y); }
  Value floor(Value x) { return math::FloorOp::create(b, loc, x); }
  Value lt(Value x, Value y) {
    return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, x, y);
  }
  Value le(Value x, Value y) {
    return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLE, x, y);
  }
  Value select(Value cond, Value x, Value y) {
    return arith::SelectOp::create(b, loc, cond, x, y);
  }
  /// from + (to - from) * s / w: a linear warmup.
  Value ramp(Value from, Value to, Value s, Value w) {
    return add(from, div(mul(sub(to, from), s), w));
  }
};
} // namespace

/// The learning rate at step `s` (f64) for parameters `p`, as
/// kiln.learning_rate documents and reference/src/schedule.cpp computes. A
/// fractional warmup W ramps with W and decays from floor(W).
static Value scheduleValue(F64 &f, Schedule kind, ArrayRef<Value> p, Value s) {
  switch (kind) {
  case Schedule::Constant:
    return p[0];
  case Schedule::LinearWarmupLinearDecay: {
    // [init, warmup, peak, total]
    Value w0 = f.floor(p[1]);
    Value d = f.sub(p[3], w0);
    Value decay = f.mul(p[2], f.sub(f.c(1), f.div(f.min(f.sub(s, w0), d), d)));
    return f.select(f.lt(s, p[1]), f.ramp(p[0], p[2], s, p[1]), decay);
  }
  case Schedule::WarmupPolynomialDecay: {
    // [base, warmup, train, end, power]; warmup 0 means none.
    Value w0 = f.floor(p[1]);
    Value d = f.add(f.sub(p[2], w0), f.c(1));
    Value frac = f.sub(f.c(1), f.div(f.min(f.sub(s, w0), d), d));
    Value decay = f.add(
        f.mul(f.sub(p[0], p[3]), math::PowFOp::create(f.b, f.loc, frac, p[4])),
        p[3]);
    Value warm = f.div(f.mul(p[0], s), p[1]);
    Value inWarmup = arith::AndIOp::create(f.b, f.loc, f.lt(f.c(0), p[1]),
                                           f.le(s, p[1]));
    return f.select(inWarmup, warm, decay);
  }
  case Schedule::StepDecay: {
    // [base, warmup_init, warmup, factor, boundary...]
    Value lr = p[0];
    for (Value boundary : p.drop_front(4))
      lr = f.select(f.lt(s, boundary), lr, f.mul(lr, p[3]));
    return f.select(f.lt(s, p[2]), f.ramp(p[1], p[0], s, p[2]), lr);
  }
  case Schedule::CosineDecay: {
    // [base, warmup_init, warmup, total, end]
    Value w0 = f.floor(p[2]);
    Value d = f.sub(p[3], w0);
    Value angle = f.mul(f.c(llvm::numbers::pi), f.div(f.min(f.sub(s, w0), d), d));
    Value cosine = f.add(f.c(1), math::CosOp::create(f.b, f.loc, angle));
    Value decay = f.add(p[4], f.mul(f.mul(f.sub(p[0], p[4]), cosine), f.c(0.5)));
    return f.select(f.lt(s, p[2]), f.ramp(p[1], p[0], s, p[2]), decay);
  }
  }
  llvm_unreachable("unknown schedule");
}

namespace {
/// The SGD step of one element, shared by the per-parameter and the fused
/// lowering so that both give the same bits.
struct SgdStep {
  Value lr, momentum, weightDecay;
  bool nesterov;
  /// (w', v') from (w, g, v).
  std::pair<Value, Value> build(OpBuilder &b, Location loc, Value w, Value g,
                                Value v) const {
    Value grad = math::FmaOp::create(b, loc, weightDecay, w, g);
    Value velocity = math::FmaOp::create(b, loc, momentum, v, grad);
    Value step =
        nesterov
            ? math::FmaOp::create(b, loc, momentum, velocity, grad).getResult()
            : velocity;
    Value weight = arith::SubFOp::create(
        b, loc, w, arith::MulFOp::create(b, loc, lr, step));
    return {weight, velocity};
  }
};
} // namespace

/// Elements per iteration of the fused update's parallel loop.
static constexpr int64_t kSgdChunk = 4096;

namespace {
/// The views one iteration of the fused update's loop reads and writes;
/// `copy` is null when there are no copies.
struct ChunkViews {
  Value w, g, v, newW, newV, copy;
};

/// The steps of lowerFusedSgdUpdate, over the layout they share.
struct FusedSgdLowering {
  Lowering &l;
  FusedSgdUpdateOp op;
  SgdStep step;
  Type elementType;
  bool inPlace = true;
  bool copies = false;
  int64_t copyColumn = 0;
  int64_t columns = 0;
  Type copyType;
  Value chunkTable, paramTable;

  FusedSgdLowering(Lowering &l, FusedSgdUpdateOp op, SgdStep step)
      : l(l), op(op), step(step) {}

  /// Checks that the parameters share an element type and decides whether
  /// the update is in place.
  LogicalResult planInPlace() {
    elementType =
        cast<RankedTensorType>(op.getWeights()[0].getType()).getElementType();
    // In place when the plan put every new weight and velocity on its old
    // one: then the loop stores through the views it loads from, which lets
    // LLVM vectorize without a run-time overlap check that would fail.
    for (unsigned i = 0, e = op.getWeights().size(); i < e; ++i) {
      if (cast<RankedTensorType>(op.getWeights()[i].getType())
              .getElementType() != elementType)
        return op.emitOpError("x86 lowering: parameters of one fused update "
                              "must share an element type");
      inPlace &= l.offsetOf(op.getNewWeights()[i]) ==
                     l.offsetOf(op.getWeights()[i]) &&
                 l.offsetOf(op.getNewVelocities()[i]) ==
                     l.offsetOf(op.getVelocities()[i]);
    }
    return success();
  }

  /// Builds the chunk and parameter tables; returns the number of chunks.
  int64_t buildTables(Location loc) {
    // Per parameter: elements, first chunk, then the byte offsets of weight,
    // gradient, velocity (and new weight, new velocity when not in place,
    // and the copy when there are copies).
    copies = !op.getNewCopies().empty();
    copyColumn = inPlace ? 5 : 7;
    columns = copyColumn + (copies ? 1 : 0);
    copyType = copies ? cast<RankedTensorType>(op.getNewCopies()[0].getType())
                            .getElementType()
                      : Type();
    SmallVector<int64_t> paramOfChunk, params;
    for (unsigned i = 0, e = op.getWeights().size(); i < e; ++i) {
      int64_t n =
          cast<RankedTensorType>(op.getWeights()[i].getType()).getNumElements();
      params.append({n, int64_t(paramOfChunk.size()),
                     l.offsetOf(op.getWeights()[i]),
                     l.offsetOf(op.getGradients()[i]),
                     l.offsetOf(op.getVelocities()[i])});
      if (!inPlace)
        params.append({l.offsetOf(op.getNewWeights()[i]),
                       l.offsetOf(op.getNewVelocities()[i])});
      if (copies)
        params.push_back(l.offsetOf(op.getNewCopies()[i]));
      paramOfChunk.append(llvm::divideCeil(n, kSgdChunk), int64_t(i));
    }
    chunkTable = l.constantTable(loc, "kiln_sgd_chunks", paramOfChunk);
    paramTable = l.constantTable(loc, "kiln_sgd_params", params);
    return int64_t(paramOfChunk.size());
  }

  /// One iteration of the parallel loop: looks up the parameter of `chunk`
  /// in the tables and runs the SGD step over the chunk's elements.
  void buildChunk(OpBuilder &nb, Location loc, Value chunk) {
    OpBuilder &b = l.b;
    auto index = [&](int64_t v) {
      return arith::ConstantIndexOp::create(nb, loc, v).getResult();
    };
    auto load = [&](Value table, Value at) {
      return arith::IndexCastOp::create(
          nb, loc, nb.getIndexType(),
          memref::LoadOp::create(nb, loc, table, ValueRange{at}));
    };
    Value row = arith::MulIOp::create(nb, loc, load(chunkTable, chunk),
                                      index(columns));
    auto column = [&](int64_t c) {
      return load(paramTable, arith::AddIOp::create(nb, loc, row, index(c)));
    };
    Value n = column(0);
    auto viewOf = [&](int64_t c) {
      return l.viewAt(loc, column(c), n, elementType);
    };
    // Lowering::viewAt builds with l.b: keep it at this point.
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
    Value begin = arith::MulIOp::create(
        b, loc, arith::SubIOp::create(b, loc, chunk, column(1)),
        index(kSgdChunk));
    Value end = arith::MinSIOp::create(
        b, loc, arith::AddIOp::create(b, loc, begin, index(kSgdChunk)), n);
    ChunkViews views;
    views.w = viewOf(2);
    views.g = viewOf(3);
    views.v = viewOf(4);
    views.newW = inPlace ? views.w : viewOf(5);
    views.newV = inPlace ? views.v : viewOf(6);
    views.copy =
        copies ? l.viewAt(loc, column(copyColumn), n, copyType) : Value();
    scf::ForOp::create(b, loc, begin, end, index(1), ValueRange{},
                       [&](OpBuilder &fb, Location loc, Value i, ValueRange) {
                         updateElement(fb, loc, i, views);
                       });
  }

  /// The body of the loop over a chunk: updates element `i`.
  void updateElement(OpBuilder &fb, Location loc, Value i,
                     const ChunkViews &views) {
    auto at = [&](Value memref) {
      return memref::LoadOp::create(fb, loc, memref, ValueRange{i});
    };
    auto [newWeight, newVelocity] =
        step.build(fb, loc, at(views.w), at(views.g), at(views.v));
    memref::StoreOp::create(fb, loc, newWeight, views.newW, ValueRange{i});
    memref::StoreOp::create(fb, loc, newVelocity, views.newV, ValueRange{i});
    // kiln.cast's rounding, while the new weight is in a register.
    if (views.copy)
      memref::StoreOp::create(fb, loc, narrowTo(fb, loc, newWeight, copyType),
                              views.copy, ValueRange{i});
    scf::YieldOp::create(fb, loc);
  }
};
} // namespace

/// All parameters of a kiln.fused_sgd_update in one loop: the parameters'
/// elements are cut into chunks of kSgdChunk (a parameter's last chunk may
/// be short), the chunks of all parameters numbered one after the other, and
/// one scf.parallel runs over the chunk numbers. Each iteration looks its
/// parameter up in constant tables (which parameter a chunk belongs to; each
/// parameter's size, first chunk and arena offsets) and runs one loop over
/// its chunk: one kernel launch for the whole group, the work spread evenly
/// over the threads, and one vectorized loop of code whatever the number of
/// parameters (unrolling a case per parameter made ResNet-50's update kernel
/// 8,000 lines of LLVM IR and doubled its compile time).
static LogicalResult lowerFusedSgdUpdate(Lowering &l, FusedSgdUpdateOp op) {
  Location loc = op.getLoc();
  OpBuilder &b = l.b;
  FusedSgdLowering fused{l, op,
                         SgdStep{l.loadScalar(loc, op.getLearningRate()),
                                 l.f32(loc, op.getMomentum().convertToFloat()),
                                 l.f32(loc,
                                       op.getWeightDecay().convertToFloat()),
                                 op.getNesterov()}};
  if (failed(fused.planInPlace()))
    return failure();
  int64_t chunks = fused.buildTables(loc);
  scf::ParallelOp::create(
      b, loc, ValueRange{l.index(loc, 0)}, ValueRange{l.index(loc, chunks)},
      ValueRange{l.index(loc, 1)},
      [&](OpBuilder &nb, Location loc, ValueRange ivs) {
        fused.buildChunk(nb, loc, ivs[0]);
      });
  return success();
}

/// kiln.learning_rate: the schedule in f64 from the parameters it loads,
/// stored as f32.
static LogicalResult lowerLearningRate(Lowering &l, LearningRateOp rate) {
  Location loc = rate.getLoc();
  OpBuilder &b = l.b;
  Value params = l.view(rate.getParams());
  SmallVector<Value> p;
  for (int64_t i = 0, e = rate.getParams().getType().getDimSize(0); i < e; ++i)
    p.push_back(
        memref::LoadOp::create(b, loc, params, ValueRange{l.index(loc, i)}));
  Value step = arith::SIToFPOp::create(b, loc, b.getF64Type(),
                                       l.loadScalar(loc, rate.getStep()));
  F64 f{b, loc};
  Value lr = scheduleValue(f, rate.getSchedule(), p, step);
  memref::StoreOp::create(b, loc,
                          arith::TruncFOp::create(b, loc, b.getF32Type(), lr),
                          l.view(rate.getLearningRate()), ValueRange{});
  return success();
}

/// kiln.sgd_update: one elementwise loop over the parameter.
static LogicalResult lowerSgdUpdate(Lowering &l, SgdUpdateOp update) {
  Location loc = update.getLoc();
  SgdStep step{l.loadScalar(loc, update.getLearningRate()),
               l.f32(loc, update.getMomentum().convertToFloat()),
               l.f32(loc, update.getWeightDecay().convertToFloat()),
               update.getNesterov()};
  l.elementwise(loc,
                ValueRange{l.view(update.getWeight()),
                           l.view(update.getGradient()),
                           l.view(update.getVelocity())},
                ValueRange{l.view(update.getNewWeight()),
                           l.view(update.getNewVelocity())},
                [&](OpBuilder &nb, Location loc, ValueRange a) {
                  auto [w, v] = step.build(nb, loc, a[0], a[1], a[2]);
                  yield(nb, loc, ValueRange{w, v});
                });
  return success();
}

/// g' = g + wd * w, in f32 as the update computes it (v0.6 takes its norm).
static Value decayedGradient(OpBuilder &nb, Location loc, Value decay, Value wi,
                             Value gi) {
  return math::FmaOp::create(nb, loc, decay, wi, gi).getResult();
}

/// lr times LARS's trust ratio. Norms in f64: trust = eta |w| / (|n| + wd |w|
/// + eps), or 1 when either norm is zero; n is g (tf2) or g' (v0.6).
static Value larsTrustFactor(Lowering &l, LarsUpdateOp update, Value lr,
                             Value decay) {
  Location loc = update.getLoc();
  OpBuilder &b = l.b;
  float wd = update.getWeightDecay().convertToFloat();
  bool v06 = update.getForm() == LarsForm::V0_6;
  int64_t n = update.getWeight().getType().getNumElements();
  auto flat = [&](Value v) { return l.viewAs(v, {n}); };
  MLIRContext *ctx = b.getContext();
  AffineExpr i;
  bindDims(ctx, i);
  Value acc = l.temporary(loc, {}, b.getF64Type());
  Value accG = l.temporary(loc, {}, b.getF64Type());
  l.fill(loc, acc, 0.0);
  l.fill(loc, accG, 0.0);
  auto toScalar = AffineMap::get(1, 0, {}, ctx);
  auto identity = AffineMap::get(1, 0, {i}, ctx);
  l.generic(
      loc, ValueRange{flat(update.getWeight()), flat(update.getGradient())},
      ValueRange{acc, accG}, {identity, identity, toScalar, toScalar},
      {utils::IteratorType::reduction},
      [&](OpBuilder &nb, Location loc, ValueRange a) {
        Value gi = v06 ? decayedGradient(nb, loc, decay, a[0], a[1]) : a[1];
        Value x = arith::ExtFOp::create(nb, loc, nb.getF64Type(), a[0]);
        Value y = arith::ExtFOp::create(nb, loc, nb.getF64Type(), gi);
        yield(nb, loc,
              ValueRange{math::FmaOp::create(nb, loc, x, x, a[2]),
                         math::FmaOp::create(nb, loc, y, y, a[3])});
      });
  F64 f{b, loc};
  Value wn = math::SqrtOp::create(
      b, loc, memref::LoadOp::create(b, loc, acc, ValueRange{}));
  Value gn = math::SqrtOp::create(
      b, loc, memref::LoadOp::create(b, loc, accG, ValueRange{}));
  Value denom = f.add(f.add(gn, f.mul(f.c(wd), wn)),
                      f.c(update.getEpsilon().convertToFloat()));
  Value trust = f.div(f.mul(f.c(update.getEta().convertToFloat()), wn), denom);
  Value positive =
      arith::AndIOp::create(b, loc, f.lt(f.c(0), wn), f.lt(f.c(0), gn));
  trust = f.select(positive, trust, f.c(1));
  return arith::MulFOp::create(
      b, loc, lr, arith::TruncFOp::create(b, loc, b.getF32Type(), trust));
}

/// kiln.lars_update: the norms' reduction unless the parameter skips the
/// trust ratio, then one elementwise loop over the parameter.
static LogicalResult lowerLarsUpdate(Lowering &l, LarsUpdateOp update) {
  Location loc = update.getLoc();
  Value w = l.view(update.getWeight()), g = l.view(update.getGradient());
  // weight_decay is 0 for a parameter exempt from decay.
  float wd = update.getWeightDecay().convertToFloat();
  bool v06 = update.getForm() == LarsForm::V0_6;
  Value decay = l.f32(loc, wd);
  Value lr = l.loadScalar(loc, update.getLearningRate());
  Value factor = lr;
  if (!update.getSkipAdaptation())
    factor = larsTrustFactor(l, update, lr, decay);
  Value m = l.f32(loc, update.getMomentum().convertToFloat());
  SmallVector<Value> outputs = {l.view(update.getNewWeight()),
                                l.view(update.getNewVelocity())};
  Value copy = update.getNewCopy();
  if (copy)
    outputs.push_back(l.view(copy));
  l.elementwise(
      loc, ValueRange{w, g, l.view(update.getVelocity())}, outputs,
      [&](OpBuilder &nb, Location loc, ValueRange a) {
        Value grad = decayedGradient(nb, loc, decay, a[0], a[1]);
        Value v, weight;
        if (v06) {
          // v' = m v + g'; w' = w - lr trust v'
          v = math::FmaOp::create(nb, loc, m, a[2], grad);
          weight = arith::SubFOp::create(
              nb, loc, a[0], arith::MulFOp::create(nb, loc, factor, v));
        } else {
          // v' = m v + lr trust g'; w' = w - v'
          v = math::FmaOp::create(nb, loc, m, a[2],
                                  arith::MulFOp::create(nb, loc, factor, grad));
          weight = arith::SubFOp::create(nb, loc, a[0], v);
        }
        SmallVector<Value> results = {weight, v};
        // kiln.cast's rounding, while the new weight is in a register.
        if (copy)
          results.push_back(narrowTo(
              nb, loc, weight,
              cast<RankedTensorType>(copy.getType()).getElementType()));
        yield(nb, loc, results);
      });
  return success();
}

LogicalResult lowerOptimizer(Lowering &l, Operation *op) {
  if (auto rate = dyn_cast<LearningRateOp>(op))
    return lowerLearningRate(l, rate);
  if (auto update = dyn_cast<SgdUpdateOp>(op))
    return lowerSgdUpdate(l, update);
  if (auto fused = dyn_cast<FusedSgdUpdateOp>(op))
    return lowerFusedSgdUpdate(l, fused);
  return lowerLarsUpdate(l, cast<LarsUpdateOp>(op));
}

} // namespace kiln
