//===- LowerBatchNorm.cpp - Batch normalization, forward and backward -----===//
//
// An NHWC input is viewed as [M, C/16] (M = elements per channel), an
// nChw16c one as [N, C/16, H*W], both of vector<16xT>, with per-channel
// vectors as [C/16] of vector<16xf32>: the channels are innermost, 16 to an
// element, and every loop runs over contiguous memory. (A plain loop over 16
// or 32 channels would be unrolled to scalar code by LLVM before its
// vectorizer sees it.) Each lane sums its channel in the same order as a
// scalar loop would, so the results do not depend on the vector form. NHWC
// with channels not a multiple of 16 stays [M, C] of scalars. Statistics
// take one pass, shifted by a sample's mean for accuracy; rows of fewer than
// 4 vectors, and nChw16c, sum in registers (registerChannelSums);
// per-channel coefficients go to temporaries so the big loops do one fma
// each.
//
//===----------------------------------------------------------------------===//

#include "passes/Conversion/KilnToLinalg/Lowering.h"

#include "dialects/Kiln/IR/KilnLayout.h"
#include "dialects/Kiln/IR/KilnOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;

namespace kiln {

namespace {
/// The views of a batch-norm operand and of its per-channel vectors in the
/// op's layout, and the maps of the loops over them.
struct ChannelLoops {
  bool blocked;
  /// Elements are vector<16xT> (16 channels).
  bool lanes;
  int64_t m, c;
  /// Pixels per image (M / N; 1 for a 2-D input).
  int64_t pixels;
  /// [M, C/16] or [N, C/16, H*W] when blocked, of vector<16xT>; [M, C].
  SmallVector<int64_t> rowShape;
  /// [C/16] of vector<16xf32>, or [C].
  SmallVector<int64_t> channelShape;
  AffineMap full, channel;
  SmallVector<utils::IteratorType> parallel;

  ChannelLoops(MLIRContext *ctx, RankedTensorType type, Layout layout)
      : blocked(layout == Layout::NChw16c) {
    ArrayRef<int64_t> shape = type.getShape();
    c = shape.back();
    m = type.getNumElements() / c;
    pixels = m / shape[0];
    lanes = c % 16 == 0;
    if (blocked) {
      rowShape = {shape[0], c / 16, shape[1] * shape[2]};
      channelShape = {c / 16};
      AffineExpr n, cb, s;
      bindDims(ctx, n, cb, s);
      full = AffineMap::get(3, 0, {n, cb, s}, ctx);
      channel = AffineMap::get(3, 0, {cb}, ctx);
    } else {
      rowShape = {m, lanes ? c / 16 : c};
      channelShape = {rowShape[1]};
      AffineExpr i, j;
      bindDims(ctx, i, j);
      full = AffineMap::get(2, 0, {i, j}, ctx);
      channel = AffineMap::get(2, 0, {j}, ctx);
    }
    parallel.assign(rowShape.size(), utils::IteratorType::parallel);
  }

  /// The element type of the views: 16 of `scalar`, or `scalar`.
  Type element(Type scalar) const {
    return lanes ? channelLanes(scalar) : scalar;
  }
  /// The view of an activation operand.
  Value rows(Lowering &l, Value value) const {
    Type scalar = cast<RankedTensorType>(value.getType()).getElementType();
    return l.viewAs(value, rowShape, element(scalar));
  }
  /// The view of a per-channel vector.
  Value channels(Lowering &l, Value value) const {
    return l.viewAs(value, channelShape, element(l.b.getF32Type()));
  }
  Value temporary(Lowering &l, Location loc) const {
    return l.temporary(loc, channelShape, element(l.b.getF32Type()));
  }
  /// An f32 constant for the loop bodies (a splat when blocked).
  Value f32(Lowering &l, Location loc, double value) const {
    return l.constant(loc, element(l.b.getF32Type()), value);
  }
};
} // namespace

/// Rounds `v` to the element type of `memref` (see kiln::narrowTo).
static Value narrowTo(OpBuilder &b, Location loc, Value v, Value memref) {
  return kiln::narrowTo(b, loc, v,
                        cast<MemRefType>(memref.getType()).getElementType());
}
static void yield(OpBuilder &b, Location loc, ValueRange values) {
  linalg::YieldOp::create(b, loc, values);
}

/// The number of row blocks a reduction over M rows is split into, so that
/// the blocks run in parallel: the largest divisor of M up to 16.
static int64_t rowBlocks(int64_t m) {
  for (int64_t b = 16; b > 1; --b)
    if (m % b == 0 && m / b >= 8)
      return b;
  return 1;
}

/// Sums the block's partial sums `partials` (leading dimension summed) into
/// `outs`.
static void sumPartials(Lowering &l, Location loc, ValueRange partials,
                        ValueRange outs) {
  OpBuilder &b = l.b;
  MLIRContext *ctx = b.getContext();
  unsigned rank = cast<MemRefType>(partials.front().getType()).getRank();
  SmallVector<AffineMap> maps(partials.size(),
                              AffineMap::getMultiDimIdentityMap(rank, ctx));
  for (size_t n = 0; n < outs.size(); ++n)
    maps.push_back(AffineMap::getMultiDimIdentityMap(rank, ctx).dropResult(0));
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  iterators[0] = utils::IteratorType::reduction;
  for (Value out : outs)
    l.fill(loc, out, 0.0);
  l.generic(loc, partials, outs, maps, iterators,
            [&](OpBuilder &nb, Location loc, ValueRange a) {
              SmallVector<Value> sums;
              size_t n = a.size() / 2;
              for (size_t t = 0; t < n; ++t)
                sums.push_back(arith::AddFOp::create(nb, loc, a[t], a[n + t]));
              linalg::YieldOp::create(nb, loc, sums);
            });
}

/// Sums `body` over the reduction dimension of `iterators` into one row of
/// partial sums per parallel block (`partialShape`, indexed by
/// `partialMap`), then those rows into `outs`.
static void sumByBlocks(
    Lowering &l, Location loc, const ChannelLoops &cl, ValueRange rows,
    AffineMap rowMap, ValueRange channelInputs, AffineMap channelMap,
    ArrayRef<int64_t> partialShape, AffineMap partialMap,
    ArrayRef<utils::IteratorType> iterators, ValueRange outs,
    function_ref<void(OpBuilder &, Location, ValueRange)> body) {
  SmallVector<Value> inputs(rows), partials;
  SmallVector<AffineMap> maps(rows.size(), rowMap);
  for (Value in : channelInputs) {
    inputs.push_back(in);
    maps.push_back(channelMap);
  }
  for (size_t n = 0; n < outs.size(); ++n) {
    Value partial =
        l.temporary(loc, partialShape, cl.element(l.b.getF32Type()));
    l.fill(loc, partial, 0.0);
    partials.push_back(partial);
    maps.push_back(partialMap);
  }
  l.generic(loc, inputs, partials, maps, iterators, body);
  sumPartials(l, loc, partials, outs);
}

/// The form of blockedChannelSums for rows of few vectors: per (p, q) of
/// the parallel dimensions (row block and channel vector of an [M, C'] view,
/// or image and channel block of an nChw16c one), an scf.for over the
/// reduction dimension carries the running sums in registers, and stores
/// them once into that (p, q)'s partial sums. (A linalg.generic keeps them
/// in the partial-sum rows, which LLVM cannot promote to registers as they
/// might alias the inputs: with under 4 vectors a row, each row is then
/// bound by the latency of a load and store per sum.) `rows` are [P, R, Q]
/// (`reductionInMiddle`) or [P, Q, R].
static void registerChannelSums(
    Lowering &l, Location loc, const ChannelLoops &cl, ValueRange rows,
    bool reductionInMiddle, ValueRange channelInputs, ValueRange outs,
    function_ref<void(OpBuilder &, Location, ValueRange)> body) {
  OpBuilder &b = l.b;
  ArrayRef<int64_t> shape = cast<MemRefType>(rows.front().getType()).getShape();
  int64_t p = shape[0], q = reductionInMiddle ? shape[2] : shape[1];
  int64_t r = reductionInMiddle ? shape[1] : shape[2];
  Type accType = cl.element(b.getF32Type());
  SmallVector<Value> partials;
  for (size_t n = 0; n < outs.size(); ++n)
    partials.push_back(l.temporary(loc, {p, q}, accType));
  l.parallelLoops(loc, {p, q}, [&](ValueRange pq) {
    SmallVector<Value> channelValues;
    for (Value in : channelInputs)
      channelValues.push_back(memref::LoadOp::create(b, loc, in, pq[1]));
    SmallVector<Value> init(outs.size(), floatConstant(b, loc, accType, 0.0));
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    auto loop = scf::ForOp::create(
        b, loc, zero, arith::ConstantIndexOp::create(b, loc, r), one, init,
        [&](OpBuilder &nb, Location loc, Value i, ValueRange sums) {
          SmallVector<Value> args;
          for (Value row : rows) {
            SmallVector<Value> at = reductionInMiddle
                                        ? SmallVector<Value>{pq[0], i, pq[1]}
                                        : SmallVector<Value>{pq[0], pq[1], i};
            args.push_back(memref::LoadOp::create(nb, loc, row, at));
          }
          args.append(channelValues);
          args.append(sums.begin(), sums.end());
          // The bodies end in a linalg.yield, written for a linalg.generic;
          // here its values continue the loop.
          body(nb, loc, args);
          Operation *yield = nb.getInsertionBlock()->getTerminator();
          SmallVector<Value> next(yield->getOperands());
          yield->erase();
          scf::YieldOp::create(nb, loc, next);
        });
    for (auto [partial, sum] : llvm::zip(partials, loop.getResults()))
      memref::StoreOp::create(b, loc, sum, partial, pq);
  });
  sumPartials(l, loc, partials, outs);
}

/// out[c] = sum over m of f(row m), computed as partial sums per block of
/// rows (one parallel loop over blocks: row blocks of the [M, C'] view, or
/// the images of an nChw16c one) then a sum over the blocks. `body` gets
/// the values of one element (x-like inputs, per-channel inputs,
/// accumulators) and yields the new accumulators with a linalg.yield. Rows
/// of under 4 vectors, and nChw16c, sum in registers (registerChannelSums).
static void blockedChannelSums(
    Lowering &l, Location loc, const ChannelLoops &cl, ValueRange rowInputs,
    ValueRange channelInputs, ValueRange outs,
    function_ref<void(OpBuilder &, Location, ValueRange)> body) {
  OpBuilder &b = l.b;
  if (cl.blocked) {
    // [N, C/16, H*W]: one channel block per loop, summed in registers.
    registerChannelSums(l, loc, cl, rowInputs, /*reductionInMiddle=*/false,
                        channelInputs, outs, body);
    return;
  }
  // A contiguous [M, C'] view reinterpreted as [blocks, M / blocks, C'].
  int64_t blocks = rowBlocks(cl.m);
  SmallVector<Value> rows;
  for (Value in : rowInputs)
    rows.push_back(memref::ExpandShapeOp::create(
        b, loc,
        MemRefType::get({blocks, cl.m / blocks, cl.rowShape[1]},
                        cast<MemRefType>(in.getType()).getElementType()),
        in, ArrayRef<ReassociationIndices>{{0, 1}, {2}}));
  if (cl.lanes && cl.rowShape[1] < 4) {
    registerChannelSums(l, loc, cl, rows, /*reductionInMiddle=*/true,
                        channelInputs, outs, body);
    return;
  }
  // Rows of 4 or more vectors (or of scalars) keep enough independent sums
  // in flight for the generic's in-memory accumulators.
  MLIRContext *ctx = b.getContext();
  auto parallel = utils::IteratorType::parallel;
  auto reduction = utils::IteratorType::reduction;
  AffineExpr d0, d1, d2;
  bindDims(ctx, d0, d1, d2);
  sumByBlocks(l, loc, cl, rows, AffineMap::get(3, 0, {d0, d1, d2}, ctx),
              channelInputs, AffineMap::get(3, 0, {d2}, ctx),
              {blocks, cl.rowShape[1]}, AffineMap::get(3, 0, {d0, d2}, ctx),
              {parallel, reduction, parallel}, outs, body);
}

/// mean[c] and var[c] of x in one pass over it: the sums of d = x - k[c]
/// and of d^2, where k[c] is the channel's mean over a sample: the first
/// image (of a 4-D input), or the first 64 rows (of a 2-D one). With k close
/// to the mean, var = E[d^2] - E[d]^2 does not cancel the way the textbook
/// E[x^2] - E[x]^2 does (k = one element of the channel was not close
/// enough: training drifted from kiln-run's two-pass statistics by 1e-4 in
/// 4 steps). A second pass for the squared deviations would read x once
/// more, a quarter of batch norm's traffic; the sample is a small part.
static void emitStatistics(Lowering &l, Location loc, const ChannelLoops &cl,
                           Value x, Value mean, Value var) {
  OpBuilder &b = l.b;
  MLIRContext *ctx = b.getContext();
  auto parallel = utils::IteratorType::parallel;
  auto reduction = utils::IteratorType::reduction;
  AffineExpr c, p, zero = getAffineConstantExpr(0, ctx);
  bindDims(ctx, c, p);
  // Image 0 of nChw16c [N, C/16, H*W]; rows [0, sample) of [M, C'].
  Value sample = x;
  int64_t sampleRows = cl.pixels;
  AffineMap sampleMap = AffineMap::get(2, 0, {zero, c, p}, ctx);
  if (!cl.blocked) {
    sampleRows = std::min(cl.m, std::max<int64_t>(cl.pixels, 64));
    sample = memref::SubViewOp::create(
        b, loc, x, ArrayRef<int64_t>{0, 0},
        ArrayRef<int64_t>{sampleRows, cl.rowShape[1]}, ArrayRef<int64_t>{1, 1});
    sampleMap = AffineMap::get(2, 0, {p, c}, ctx);
  }
  Value shift = cl.temporary(l, loc);
  l.fill(loc, shift, 0.0);
  l.generic(
      loc, sample, shift, {sampleMap, AffineMap::get(2, 0, {c}, ctx)},
      {parallel, reduction}, [&](OpBuilder &nb, Location loc, ValueRange a) {
        yield(nb, loc,
              arith::AddFOp::create(nb, loc, widenToF32(nb, loc, a[0]), a[1])
                  .getResult());
      });
  Value inverseSample = cl.f32(l, loc, 1.0 / double(sampleRows));
  l.elementwise(
      loc, shift, shift, [&](OpBuilder &nb, Location loc, ValueRange a) {
        yield(nb, loc,
              arith::MulFOp::create(nb, loc, a[0], inverseSample).getResult());
      });
  Value sum = cl.temporary(l, loc);
  Value sumOfSquares = cl.temporary(l, loc);
  blockedChannelSums(
      l, loc, cl, x, shift, ValueRange{sum, sumOfSquares},
      [&](OpBuilder &nb, Location loc, ValueRange a) {
        Value d =
            arith::SubFOp::create(nb, loc, widenToF32(nb, loc, a[0]), a[1]);
        yield(nb, loc,
              ValueRange{arith::AddFOp::create(nb, loc, d, a[2]),
                         math::FmaOp::create(nb, loc, d, d, a[3])});
      });
  Value inverseM = cl.f32(l, loc, 1.0 / double(cl.m));
  Value zeroF = cl.f32(l, loc, 0.0);
  l.elementwise(
      loc, ValueRange{shift, sum, sumOfSquares}, ValueRange{mean, var},
      [&](OpBuilder &nb, Location loc, ValueRange a) {
        Value meanD = arith::MulFOp::create(nb, loc, a[1], inverseM);
        Value meanD2 = arith::MulFOp::create(nb, loc, a[2], inverseM);
        Value v = arith::SubFOp::create(
            nb, loc, meanD2, arith::MulFOp::create(nb, loc, meanD, meanD));
        yield(nb, loc,
              ValueRange{arith::AddFOp::create(nb, loc, a[0], meanD),
                         arith::MaximumFOp::create(nb, loc, v, zeroF)});
      });
}

void emitBatchNormCoefficients(Lowering &l, Location loc, Value gamma,
                               Value beta, Value mean, Value var, float epsilon,
                               Value scale, Value shift) {
  Value eps = l.constant(
      loc, cast<MemRefType>(scale.getType()).getElementType(), epsilon);
  l.elementwise(loc, ValueRange{gamma, beta, mean, var}, ValueRange{scale, shift},
                [&](OpBuilder &nb, Location loc, ValueRange a) {
                  Value rstd = math::RsqrtOp::create(
                      nb, loc, arith::AddFOp::create(nb, loc, a[3], eps));
                  Value s = arith::MulFOp::create(nb, loc, a[0], rstd);
                  Value t = arith::SubFOp::create(
                      nb, loc, a[1], arith::MulFOp::create(nb, loc, a[2], s));
                  yield(nb, loc, ValueRange{s, t});
                });
}

/// scale and shift (emitBatchNormCoefficients), then y = x * scale + shift
/// (+ residual, if given; then rectified with `relu`).
static void emitNormalize(Lowering &l, Location loc, const ChannelLoops &cl,
                          Value x, Value gamma, Value beta, Value mean,
                          Value var, float epsilon, Value y, bool relu,
                          Value residual = Value()) {
  Value scale = cl.temporary(l, loc);
  Value shift = cl.temporary(l, loc);
  emitBatchNormCoefficients(l, loc, gamma, beta, mean, var, epsilon, scale,
                            shift);
  SmallVector<Value> inputs = {x, scale, shift};
  SmallVector<AffineMap> maps = {cl.full, cl.channel, cl.channel};
  if (residual) {
    inputs.push_back(residual);
    maps.push_back(cl.full);
  }
  maps.push_back(cl.full);
  l.generic(loc, inputs, y, maps, cl.parallel,
            [&](OpBuilder &nb, Location loc, ValueRange a) {
              Value v = math::FmaOp::create(nb, loc, widenToF32(nb, loc, a[0]), a[1], a[2]);
              // A fused residual add and rectifier cost nothing in the same
              // pass, and save one over the activations each.
              if (residual)
                v = arith::AddFOp::create(nb, loc, v,
                                          widenToF32(nb, loc, a[3]));
              if (relu)
                v = arith::MaximumFOp::create(
                    nb, loc, v, floatConstant(nb, loc, v.getType(), 0.0));
              yield(nb, loc, narrowTo(nb, loc, v, y));
            });
}

/// A training batch norm (or the one of a fused convolution) given its
/// batch statistics: the normalizing pass, then the running statistics.
template <typename TrainOp>
static void emitTrainingNormalize(Lowering &l, Location loc,
                                  const ChannelLoops &cl, TrainOp bn, Value x,
                                  Value mean, Value var) {
  emitNormalize(l, loc, cl, x, cl.channels(l, bn.getScale()),
                cl.channels(l, bn.getOffset()), mean, var,
                bn.getEpsilon().convertToFloat(), cl.rows(l, bn.getOutput()),
                bn.getRelu(),
                bn.getResidual() ? cl.rows(l, bn.getResidual()) : Value());
  // Running statistics with the unbiased variance (Bessel's correction;
  // none for a single element per channel, as TF does).
  double momentum = bn.getMomentum().convertToFloat();
  double bessel = cl.m > 1 ? double(cl.m) / double(cl.m - 1) : 1.0;
  Value keep = cl.f32(l, loc, momentum);
  Value take = cl.f32(l, loc, 1.0 - momentum);
  Value takeVar = cl.f32(l, loc, (1.0 - momentum) * bessel);
  l.elementwise(
      loc,
      ValueRange{cl.channels(l, bn.getRunningMean()),
                 cl.channels(l, bn.getRunningVar()), mean, var},
      ValueRange{cl.channels(l, bn.getNewRunningMean()),
                 cl.channels(l, bn.getNewRunningVar())},
      [&](OpBuilder &nb, Location loc, ValueRange a) {
        Value rm = math::FmaOp::create(
            nb, loc, a[0], keep, arith::MulFOp::create(nb, loc, a[2], take));
        Value rv = math::FmaOp::create(
            nb, loc, a[1], keep, arith::MulFOp::create(nb, loc, a[3], takeVar));
        yield(nb, loc, ValueRange{rm, rv});
      });
}

static void lowerBatchNormTrain(Lowering &l, BatchNormTrainOp bn,
                                Layout layout) {
  Location loc = bn.getLoc();
  ChannelLoops cl(l.b.getContext(), bn.getInput().getType(), layout);
  Value x = cl.rows(l, bn.getInput());
  Value mean = cl.channels(l, bn.getBatchMean());
  Value var = cl.channels(l, bn.getBatchVar());
  emitStatistics(l, loc, cl, x, mean, var);
  emitTrainingNormalize(l, loc, cl, bn, x, mean, var);
}

static void lowerFusedConvBatchNormTrain(Lowering &l,
                                         FusedConv2DBatchNormTrainOp fused,
                                         Layout layout) {
  Location loc = fused.getLoc();
  MLIRContext *ctx = l.b.getContext();
  // The convolution call writes the batch statistics ([2][C]: means,
  // variances) with its output; they are copied into the results.
  Value statistics = emitConvolutionWithStatistics(l, fused);
  AffineExpr c = getAffineDimExpr(0, ctx);
  AffineExpr zero = getAffineConstantExpr(0, ctx);
  AffineExpr one = getAffineConstantExpr(1, ctx);
  l.generic(
      loc, ValueRange{statistics, statistics},
      ValueRange{l.view(fused.getBatchMean()), l.view(fused.getBatchVar())},
      {AffineMap::get(1, 0, {zero, c}, ctx),
       AffineMap::get(1, 0, {one, c}, ctx), AffineMap::get(1, 0, {c}, ctx),
       AffineMap::get(1, 0, {c}, ctx)},
      {utils::IteratorType::parallel},
      [&](OpBuilder &nb, Location loc, ValueRange a) {
        yield(nb, loc, ValueRange{a[0], a[1]});
      });
  ChannelLoops cl(ctx, fused.getConvOutput().getType(), layout);
  emitTrainingNormalize(l, loc, cl, fused, cl.rows(l, fused.getConvOutput()),
                        cl.channels(l, fused.getBatchMean()),
                        cl.channels(l, fused.getBatchVar()));
}

static void lowerBatchNormInference(Lowering &l, BatchNormInferenceOp bn,
                                    Layout layout) {
  ChannelLoops cl(l.b.getContext(), bn.getInput().getType(), layout);
  emitNormalize(l, bn.getLoc(), cl, cl.rows(l, bn.getInput()),
                cl.channels(l, bn.getScale()), cl.channels(l, bn.getOffset()),
                cl.channels(l, bn.getMean()), cl.channels(l, bn.getVariance()),
                bn.getEpsilon().convertToFloat(), cl.rows(l, bn.getOutput()),
                bn.getRelu());
}

/// 1 / sqrt(var + epsilon) per channel, into a temporary.
static Value emitInverseStd(Lowering &l, Location loc, const ChannelLoops &cl,
                            BatchNormBackwardOp bn) {
  Value eps = cl.f32(l, loc, bn.getEpsilon().convertToFloat());
  Value rstd = cl.temporary(l, loc);
  l.elementwise(loc, cl.channels(l, bn.getBatchVar()), rstd,
                [&](OpBuilder &nb, Location loc, ValueRange a) {
                  yield(nb, loc, math::RsqrtOp::create(
                                     nb, loc, arith::AddFOp::create(nb, loc, a[0], eps))
                                     .getResult());
                });
  return rstd;
}

/// With a fused rectifier, dy counts only where the forward's output was
/// positive: x * scale + shift > 0, with the forward's coefficients
/// (emitBatchNormCoefficients, the same ops as emitNormalize's, so the
/// same bits), computed from x, which both passes read anyway. Returns
/// {scale, shift}, or nothing without a rectifier.
static SmallVector<Value> emitReluCoefficients(Lowering &l, Location loc,
                                               const ChannelLoops &cl,
                                               BatchNormBackwardOp bn,
                                               Value mean) {
  Value offset = bn.getReluOffset();
  if (!offset)
    return {};
  Value reluScale = cl.temporary(l, loc);
  Value reluShift = cl.temporary(l, loc);
  emitBatchNormCoefficients(
      l, loc, cl.channels(l, bn.getScale()), cl.channels(l, offset), mean,
      cl.channels(l, bn.getBatchVar()), bn.getEpsilon().convertToFloat(),
      reluScale, reluShift);
  return {reluScale, reluShift};
}

/// `g` where x * coefficients[0] + coefficients[1] > 0, else 0; `g` itself
/// without coefficients.
static Value maskByRelu(OpBuilder &nb, Location loc, Value g, Value xF32,
                        ValueRange coefficients) {
  if (coefficients.empty())
    return g;
  Value zero = floatConstant(nb, loc, g.getType(), 0.0);
  Value v =
      math::FmaOp::create(nb, loc, xF32, coefficients[0], coefficients[1]);
  Value positive =
      arith::CmpFOp::create(nb, loc, arith::CmpFPredicate::OGT, v, zero);
  return arith::SelectOp::create(nb, loc, positive, g, zero).getResult();
}

/// dbeta = sum dy, dgamma = sum dy * xhat (`rows` = {dy, x}).
static void emitParameterGradients(Lowering &l, Location loc,
                                   const ChannelLoops &cl, ValueRange rows,
                                   Value mean, Value rstd,
                                   ValueRange coefficients, Value dgamma,
                                   Value dbeta) {
  size_t extra = coefficients.size();
  SmallVector<Value> sumChannels = {mean, rstd};
  sumChannels.append(coefficients.begin(), coefficients.end());
  blockedChannelSums(
      l, loc, cl, rows, sumChannels, ValueRange{dgamma, dbeta},
      [&](OpBuilder &nb, Location loc, ValueRange in) {
        // in: dy, x, mean, rstd, [scale, shift], dgamma, dbeta.
        Value xF32 = widenToF32(nb, loc, in[1]);
        Value g = maskByRelu(nb, loc, widenToF32(nb, loc, in[0]), xF32,
                             in.slice(4, extra));
        Value xhat = arith::MulFOp::create(
            nb, loc, arith::SubFOp::create(nb, loc, xF32, in[2]), in[3]);
        yield(nb, loc,
              ValueRange{math::FmaOp::create(nb, loc, g, xhat, in[4 + extra]),
                         arith::AddFOp::create(nb, loc, g, in[5 + extra])});
      });
}

/// dx = gamma * rstd * (dy - dbeta / M - xhat * dgamma / M)
///    = k * dy + k2 * (x - mean) + k3, per channel:
///   k = gamma * rstd, k2 = -k * rstd * dgamma / M, k3 = -k * dbeta / M.
static void emitInputGradient(Lowering &l, Location loc, const ChannelLoops &cl,
                              BatchNormBackwardOp bn, ValueRange rows,
                              Value mean, Value rstd, ValueRange coefficients,
                              Value dgamma, Value dbeta) {
  size_t extra = coefficients.size();
  Value k = cl.temporary(l, loc);
  Value k2 = cl.temporary(l, loc);
  Value k3 = cl.temporary(l, loc);
  Value inverseM = cl.f32(l, loc, 1.0 / double(cl.m));
  l.elementwise(loc, ValueRange{cl.channels(l, bn.getScale()), rstd, dgamma, dbeta},
                ValueRange{k, k2, k3},
                [&](OpBuilder &nb, Location loc, ValueRange a) {
                  Value kk = arith::MulFOp::create(nb, loc, a[0], a[1]);
                  Value kOverM = arith::MulFOp::create(nb, loc, kk, inverseM);
                  Value kk2 = arith::NegFOp::create(
                      nb, loc,
                      arith::MulFOp::create(
                          nb, loc, kOverM, arith::MulFOp::create(nb, loc, a[1], a[2])));
                  Value kk3 = arith::NegFOp::create(
                      nb, loc, arith::MulFOp::create(nb, loc, kOverM, a[3]));
                  yield(nb, loc, ValueRange{kk, kk2, kk3});
                });
  Value dx = cl.rows(l, bn.getInputGrad());
  SmallVector<Value> dxInputs(rows.begin(), rows.end());
  dxInputs.append({mean, k, k2, k3});
  dxInputs.append(coefficients.begin(), coefficients.end());
  SmallVector<AffineMap> dxMaps(rows.size(), cl.full);
  dxMaps.append(4 + extra, cl.channel);
  dxMaps.push_back(cl.full);
  l.generic(loc, dxInputs, dx, dxMaps, cl.parallel,
            [&](OpBuilder &nb, Location loc, ValueRange in) {
              // in: dy, x, mean, k, k2, k3, [scale, shift], dx.
              Value xF32 = widenToF32(nb, loc, in[1]);
              Value g = maskByRelu(nb, loc, widenToF32(nb, loc, in[0]), xF32,
                                   in.slice(6, extra));
              Value centered = arith::SubFOp::create(nb, loc, xF32, in[2]);
              Value v = math::FmaOp::create(nb, loc, in[3], g, in[5]);
              v = math::FmaOp::create(nb, loc, in[4], centered, v);
              yield(nb, loc, narrowTo(nb, loc, v, dx));
            });
}

static void lowerBatchNormBackward(Lowering &l, BatchNormBackwardOp bn,
                                   Layout layout) {
  Location loc = bn.getLoc();
  ChannelLoops cl(l.b.getContext(), bn.getInput().getType(), layout);
  Value dy = cl.rows(l, bn.getOutputGrad());
  Value x = cl.rows(l, bn.getInput());
  Value mean = cl.channels(l, bn.getBatchMean());
  Value dgamma = cl.channels(l, bn.getScaleGrad());
  Value dbeta = cl.channels(l, bn.getOffsetGrad());
  Value rstd = emitInverseStd(l, loc, cl, bn);
  SmallVector<Value> coefficients = emitReluCoefficients(l, loc, cl, bn, mean);
  SmallVector<Value> rows = {dy, x};
  emitParameterGradients(l, loc, cl, rows, mean, rstd, coefficients, dgamma,
                         dbeta);
  emitInputGradient(l, loc, cl, bn, rows, mean, rstd, coefficients, dgamma,
                    dbeta);
}

LogicalResult lowerBatchNorm(Lowering &l, Operation *op) {
  Layout layout = getComputeLayout(op);
  if (auto bn = dyn_cast<BatchNormTrainOp>(op))
    lowerBatchNormTrain(l, bn, layout);
  else if (auto fused = dyn_cast<FusedConv2DBatchNormTrainOp>(op))
    lowerFusedConvBatchNormTrain(l, fused, layout);
  else if (auto bn = dyn_cast<BatchNormInferenceOp>(op))
    lowerBatchNormInference(l, bn, layout);
  else
    lowerBatchNormBackward(l, cast<BatchNormBackwardOp>(op), layout);
  return success();
}

} // namespace kiln
