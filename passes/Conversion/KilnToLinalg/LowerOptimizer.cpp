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
/// kiln.learning_rate documents and reference/src/schedule.cpp computes.
static Value scheduleValue(F64 &f, Schedule kind, ArrayRef<Value> p, Value s) {
  switch (kind) {
  case Schedule::Constant:
    return p[0];
  case Schedule::LinearWarmupLinearDecay: {
    // [init, warmup, peak, total]
    Value d = f.sub(p[3], p[1]);
    Value decay = f.mul(p[2], f.sub(f.c(1), f.div(f.min(f.sub(s, p[1]), d), d)));
    return f.select(f.lt(s, p[1]), f.ramp(p[0], p[2], s, p[1]), decay);
  }
  case Schedule::WarmupPolynomialDecay: {
    // [base, warmup, train, end, power]; warmup 0 means none.
    Value d = f.add(f.sub(p[2], p[1]), f.c(1));
    Value frac = f.sub(f.c(1), f.div(f.min(f.sub(s, p[1]), d), d));
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
    Value d = f.sub(p[3], p[2]);
    Value angle = f.mul(f.c(llvm::numbers::pi), f.div(f.min(f.sub(s, p[2]), d), d));
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

/// All parameters of a kiln.fused_sgd_update in one loop: the parameters'
/// elements are cut into chunks of kSgdChunk (a parameter's last chunk may
/// be short), the chunks of all parameters numbered one after the other, and
/// one scf.parallel runs over the chunk numbers; each iteration finds its
/// parameter and runs a plain loop over its chunk. One kernel launch for the
/// whole group, the work spread evenly over the threads, the inner loops
/// contiguous and vectorizable.
static LogicalResult lowerFusedSgdUpdate(Lowering &l, FusedSgdUpdateOp op) {
  Location loc = op.getLoc();
  OpBuilder &b = l.b;
  SgdStep step{l.loadScalar(loc, op.getLearningRate()),
               l.f32(loc, op.getMomentum().convertToFloat()),
               l.f32(loc, op.getWeightDecay().convertToFloat()),
               op.getNesterov()};
  struct Param {
    Value w, g, v, newW, newV;
    int64_t elements, firstChunk, chunks;
  };
  SmallVector<Param> params;
  int64_t chunks = 0;
  for (unsigned i = 0, e = op.getWeights().size(); i < e; ++i) {
    int64_t n =
        cast<RankedTensorType>(op.getWeights()[i].getType()).getNumElements();
    auto flat = [&](Value v) { return l.viewAs(v, {n}); };
    int64_t count = llvm::divideCeil(n, kSgdChunk);
    params.push_back({flat(op.getWeights()[i]), flat(op.getGradients()[i]),
                      flat(op.getVelocities()[i]), flat(op.getNewWeights()[i]),
                      flat(op.getNewVelocities()[i]), n, chunks, count});
    chunks += count;
  }
  SmallVector<int64_t> cases = llvm::to_vector(
      llvm::seq<int64_t>(0, static_cast<int64_t>(params.size())));
  scf::ParallelOp::create(
      b, loc, ValueRange{l.index(loc, 0)}, ValueRange{l.index(loc, chunks)},
      ValueRange{l.index(loc, 1)},
      [&](OpBuilder &nb, Location loc, ValueRange ivs) {
        Value chunk = ivs[0];
        auto constant = [&](int64_t v) {
          return arith::ConstantIndexOp::create(nb, loc, v).getResult();
        };
        // The parameter: how many parameters after the first start at or
        // before this chunk.
        Value param = constant(0);
        for (const Param &p : ArrayRef(params).drop_front()) {
          Value starts =
              arith::CmpIOp::create(nb, loc, arith::CmpIPredicate::uge, chunk,
                                    constant(p.firstChunk));
          param = arith::AddIOp::create(
              nb, loc, param,
              arith::IndexCastOp::create(
                  nb, loc, nb.getIndexType(),
                  arith::ExtUIOp::create(nb, loc, nb.getI64Type(), starts)));
        }
        auto dispatch = scf::IndexSwitchOp::create(nb, loc, TypeRange{}, param,
                                                   cases, cases.size());
        for (auto [caseRegion, caseParam] :
             llvm::zip(dispatch.getCaseRegions(), params)) {
          const Param &p = caseParam;
          OpBuilder cb = OpBuilder::atBlockBegin(&caseRegion.emplaceBlock());
          auto index = [&](int64_t v) {
            return arith::ConstantIndexOp::create(cb, loc, v).getResult();
          };
          Value begin = arith::MulIOp::create(
              cb, loc,
              arith::SubIOp::create(cb, loc, chunk, index(p.firstChunk)),
              index(kSgdChunk));
          Value end =
              p.chunks == 1
                  ? index(p.elements)
                  : arith::MinSIOp::create(
                        cb, loc,
                        arith::AddIOp::create(cb, loc, begin, index(kSgdChunk)),
                        index(p.elements))
                        .getResult();
          scf::ForOp::create(
              cb, loc, begin, end, index(1), ValueRange{},
              [&](OpBuilder &fb, Location loc, Value i, ValueRange) {
                auto load = [&](Value memref) {
                  return memref::LoadOp::create(fb, loc, memref, ValueRange{i});
                };
                auto [w, v] =
                    step.build(fb, loc, load(p.w), load(p.g), load(p.v));
                memref::StoreOp::create(fb, loc, w, p.newW, ValueRange{i});
                memref::StoreOp::create(fb, loc, v, p.newV, ValueRange{i});
                scf::YieldOp::create(fb, loc);
              });
          scf::YieldOp::create(cb, loc);
        }
        OpBuilder db = OpBuilder::atBlockBegin(
            &dispatch.getDefaultRegion().emplaceBlock());
        scf::YieldOp::create(db, loc);
      });
  return success();
}

LogicalResult lowerOptimizer(Lowering &l, Operation *op) {
  Location loc = op->getLoc();
  OpBuilder &b = l.b;

  if (auto rate = dyn_cast<LearningRateOp>(op)) {
    Value params = l.view(rate.getParams());
    SmallVector<Value> p;
    for (int64_t i = 0, e = rate.getParams().getType().getDimSize(0); i < e; ++i)
      p.push_back(memref::LoadOp::create(b, loc, params, ValueRange{l.index(loc, i)}));
    Value step = arith::SIToFPOp::create(b, loc, b.getF64Type(),
                                         l.loadScalar(loc, rate.getStep()));
    F64 f{b, loc};
    Value lr = scheduleValue(f, rate.getSchedule(), p, step);
    memref::StoreOp::create(b, loc,
                            arith::TruncFOp::create(b, loc, b.getF32Type(), lr),
                            l.view(rate.getLearningRate()), ValueRange{});
    return success();
  }

  if (auto update = dyn_cast<SgdUpdateOp>(op)) {
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
  if (auto fused = dyn_cast<FusedSgdUpdateOp>(op))
    return lowerFusedSgdUpdate(l, fused);

  auto update = cast<LarsUpdateOp>(op);
  Value w = l.view(update.getWeight()), g = l.view(update.getGradient());
  float wd = update.getSkipAdaptation() ? 0.0f
                                        : update.getWeightDecay().convertToFloat();
  Value lr = l.loadScalar(loc, update.getLearningRate());
  Value factor = lr;
  if (!update.getSkipAdaptation()) {
    // Norms in f64: trust = eta |w| / (|g| + wd |w| + eps), or 1 when either
    // norm is zero.
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
    l.generic(loc, ValueRange{flat(update.getWeight()), flat(update.getGradient())},
              ValueRange{acc, accG}, {identity, identity, toScalar, toScalar},
              {utils::IteratorType::reduction},
              [&](OpBuilder &nb, Location loc, ValueRange a) {
                Value x = arith::ExtFOp::create(nb, loc, nb.getF64Type(), a[0]);
                Value y = arith::ExtFOp::create(nb, loc, nb.getF64Type(), a[1]);
                yield(nb, loc,
                      ValueRange{math::FmaOp::create(nb, loc, x, x, a[2]),
                                 math::FmaOp::create(nb, loc, y, y, a[3])});
              });
    F64 f{b, loc};
    Value wn = math::SqrtOp::create(b, loc, memref::LoadOp::create(b, loc, acc, ValueRange{}));
    Value gn = math::SqrtOp::create(b, loc, memref::LoadOp::create(b, loc, accG, ValueRange{}));
    Value denom = f.add(f.add(gn, f.mul(f.c(wd), wn)),
                        f.c(update.getEpsilon().convertToFloat()));
    Value trust = f.div(f.mul(f.c(update.getEta().convertToFloat()), wn), denom);
    Value positive = arith::AndIOp::create(b, loc, f.lt(f.c(0), wn), f.lt(f.c(0), gn));
    trust = f.select(positive, trust, f.c(1));
    factor = arith::MulFOp::create(
        b, loc, lr, arith::TruncFOp::create(b, loc, b.getF32Type(), trust));
  }
  Value m = l.f32(loc, update.getMomentum().convertToFloat());
  Value decay = l.f32(loc, wd);
  l.elementwise(
      loc, ValueRange{w, g, l.view(update.getVelocity())},
      ValueRange{l.view(update.getNewWeight()), l.view(update.getNewVelocity())},
      [&](OpBuilder &nb, Location loc, ValueRange a) {
        Value grad = math::FmaOp::create(nb, loc, decay, a[0], a[1]);
        Value v = math::FmaOp::create(nb, loc, m, a[2],
                                      arith::MulFOp::create(nb, loc, factor, grad));
        yield(nb, loc, ValueRange{arith::SubFOp::create(nb, loc, a[0], v), v});
      });
  return success();
}

} // namespace kiln
