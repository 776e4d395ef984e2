//===- Timing.cpp - The timed executor and the GEMM model -----------------===//

#include "kiln/sim/Timing.h"

#include "kiln/sim/Isa.h"
#include "kiln/sim/View.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace kiln::sim {

std::string UnitIds::name(uint32_t unit) const {
  if (unit < mxuCount)
    return "mxu" + std::to_string(unit);
  if (unit == vector())
    return "vector";
  if (unit == scalar())
    return "scalar";
  if (unit == dmaIn())
    return "dma_in";
  if (unit == dmaOut())
    return "dma_out";
  return "ici";
}

namespace {

uint64_t ceilDiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

/// A resource granted in intervals (the HBM channel): a request takes the
/// earliest gap at or after its ready time that is long enough.
class Channel {
public:
  uint64_t reserve(uint64_t ready, uint64_t length) {
    if (length == 0)
      return ready;
    uint64_t t = ready;
    auto it = busy.upper_bound(t);
    if (it != busy.begin()) {
      auto prev = std::prev(it);
      if (prev->second > t)
        t = prev->second;
    }
    while (it != busy.end() && it->first < t + length) {
      t = std::max(t, it->second);
      ++it;
    }
    insert(t, t + length);
    return t;
  }

private:
  void insert(uint64_t lo, uint64_t hi) {
    auto it = busy.lower_bound(lo);
    // Merge with a predecessor that ends where this starts, and successors
    // that start where it ends, so a saturated channel stays one interval.
    if (it != busy.begin()) {
      auto prev = std::prev(it);
      if (prev->second == lo) {
        lo = prev->first;
        busy.erase(prev);
      }
    }
    it = busy.lower_bound(lo);
    while (it != busy.end() && it->first <= hi) {
      hi = std::max(hi, it->second);
      it = busy.erase(it);
    }
    busy[lo] = hi;
  }
  std::map<uint64_t, uint64_t> busy;
};

struct MxuState {
  uint64_t weightPortFree = 0, streamFree = 0;
};

} // namespace

/// Counts in-bounds elements without decoding the view when every
/// coordinate depends on at most one index dimension: the count is then a
/// product over dimensions of the length of an interval.
static bool countSeparable(const fb::OperandT &op, int64_t &count) {
  std::vector<int64_t> dims = op.row_counts;
  dims.insert(dims.end(), op.col_counts.begin(), op.col_counts.end());
  std::vector<int64_t> lo(dims.size(), 0), hi(dims.size());
  for (size_t d = 0; d < dims.size(); ++d)
    hi[d] = dims[d]; // [lo, hi)
  size_t nr = op.row_counts.size();
  for (const auto &q : op.coords) {
    int dim = -1;
    int64_t coef = 0;
    for (size_t d = 0; d < dims.size(); ++d) {
      int64_t c = d < nr
                      ? (d < q->row_coef.size() ? q->row_coef[d] : 0)
                      : (d - nr < q->col_coef.size() ? q->col_coef[d - nr] : 0);
      if (c == 0)
        continue;
      if (dim >= 0)
        return false;
      dim = int(d);
      coef = c;
    }
    if (dim < 0) {
      if (q->offset < 0 || q->offset >= q->bound) {
        count = 0;
        return true;
      }
      continue;
    }
    // 0 <= offset + coef * i < bound, for integer i.
    auto floorDiv = [](int64_t a, int64_t b) {
      return a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
    };
    int64_t a, b; // a <= i <= b
    if (coef > 0) {
      a = floorDiv(-q->offset + coef - 1, coef); // ceil(-offset / coef)
      b = floorDiv(q->bound - 1 - q->offset, coef);
    } else {
      int64_t c = -coef;
      a = floorDiv(q->offset - (q->bound - 1) + c - 1, c);
      b = floorDiv(q->offset, c);
    }
    lo[size_t(dim)] = std::max(lo[size_t(dim)], a);
    hi[size_t(dim)] = std::min(hi[size_t(dim)], b + 1);
  }
  count = 1;
  for (size_t d = 0; d < dims.size(); ++d)
    count *= std::max<int64_t>(0, hi[d] - lo[d]);
  return true;
}

int64_t countInBounds(const fb::OperandT &op) {
  int64_t fast;
  if (countSeparable(op, fast))
    return fast;
  View v(op);
  if (!v.hasJointCoords()) {
    int64_t rows = 0, cols = 0;
    for (int64_t i = 0; i < v.rows(); ++i)
      rows += v.rowInBounds(i);
    for (int64_t j = 0; j < v.cols(); ++j)
      cols += v.colInBounds(j);
    return rows * cols;
  }
  int64_t n = 0;
  for (int64_t i = 0; i < v.rows(); ++i)
    if (v.rowInBounds(i))
      for (int64_t j = 0; j < v.cols(); ++j)
        n += v.inBounds(i, j);
  return n;
}

uint64_t vectorWork(const fb::VectorT &v) {
  using Op = fb::VectorOp;
  uint64_t e = uint64_t(v.rows * v.channels), c = uint64_t(v.channels);
  switch (v.op) {
  case Op::Fill:
  case Op::Copy:
  case Op::Add:
  case Op::Scale:
  case Op::Relu:
  case Op::ReluGrad:
  case Op::ChannelAdd:
  case Op::ChannelSum:
  case Op::SumSquares:
    return e;
  case Op::ChannelMoments:
  case Op::ChannelAffine:
    return 2 * e;
  case Op::ChannelCenteredDot:
  case Op::ChannelAffine2:
    return 3 * e;
  case Op::BnStats:
  case Op::BnGradCoeffs:
    // A square root and a division per channel.
    return 16 * c;
  case Op::MaxPool:
  case Op::AvgPool:
  case Op::MaxPoolGrad:
  case Op::AvgPoolGrad: {
    PoolShape s;
    if (!decodePoolShape(v.iattrs, s).isOk())
      return 0;
    uint64_t windows =
        uint64_t(s.n * s.oh * s.ow * s.c) * uint64_t(s.kh * s.kw);
    // Gradients compare (max) or add (avg) and then scatter-add.
    return v.op == Op::MaxPool || v.op == Op::AvgPool ? windows : 2 * windows;
  }
  case Op::GlobalAvgPool:
  case Op::GlobalAvgPoolGrad:
    return uint64_t(v.iattrs[0] * v.iattrs[1] * v.iattrs[2]);
  case Op::XentLoss:
  case Op::XentGrad:
    // max, exp, sum, log, and the gradient: transcendental-heavy.
    return 8 * e;
  case Op::SgdUpdate:
    return 4 * e;
  case Op::LarsUpdate:
    return 5 * e;
  case Op::LearningRate:
    return 64;
  case Op::Activation:
  case Op::ActivationGrad: {
    // Sigmoid and SiLU take an exponential and a reciprocal (a few passes
    // of the transcendental unit); the clipped kinds compare and scale.
    bool smooth = v.iattrs.size() == 1 && v.iattrs[0] <= 1;
    return (smooth ? 4 : 2) * e;
  }
  case Op::BroadcastBinary:
  case Op::BroadcastBinaryGrad: {
    // One pass over the broadcast shape (dy's for the gradient) per operand
    // read; division twice.
    BroadcastShape b;
    if (!decodeBroadcast(v, b).isOk())
      return 0;
    uint64_t n = uint64_t(shapeElements(b.out));
    return (b.kind == 3 ? 2 : 1) * n * uint64_t(v.srcs.size());
  }
  case Op::Dropout:
    // Philox4x32-10 per element: ten rounds of two 32x32->64 multiplies and
    // xors, about 40 integer operations (docs/systolic.md).
    return 40 * e;
  case Op::DepthwiseConv:
  case Op::DepthwiseConvGradData:
  case Op::DepthwiseConvGradFilter: {
    // One multiply-add per window element and lane.
    DepthwiseShape s;
    if (!decodeDepthwiseShape(v.iattrs, s).isOk())
      return 0;
    return uint64_t(s.n * s.oh * s.ow * s.c) * uint64_t(s.kh * s.kw);
  }
  }
  return e;
}

uint64_t gemmModelCycles(int64_t m, int64_t k, int64_t n,
                         const TargetConfig &t) {
  std::vector<int64_t> loads;
  for (int64_t n0 = 0; n0 < n; n0 += t.arrayCols)
    for (int64_t k0 = 0; k0 < k; k0 += t.arrayRows)
      loads.push_back(std::min<int64_t>(t.arrayRows, k - k0));
  if (loads.empty())
    return 0;
  uint64_t cycles = uint64_t(loads[0]);
  for (size_t i = 0; i < loads.size(); ++i) {
    int64_t next = i + 1 < loads.size() ? loads[i + 1] : 0;
    cycles += uint64_t(std::max(m, next));
  }
  return cycles + t.fillDrainCycles();
}

TimingResult simulateTiming(const Program &program, const TargetConfig &target,
                            const TimingOptions &options) {
  TimingResult r;
  r.units = UnitIds{target.mxuCount};
  const UnitIds &u = r.units;
  r.unitBusy.assign(u.count(), 0);
  r.unitStall.assign(u.count(), 0);
  r.instrs.resize(program.instructions.size());
  std::vector<uint64_t> unitFree(u.count(), 0);
  std::vector<MxuState> mxus(target.mxuCount);
  // For MXU passes: when streaming started. A later pass on the same MXU
  // that only accumulates into (or reuses the bytes of) its output follows it
  // in stream order; one that reads its output as an operand waits for the
  // result to drain, as on any other unit.
  std::vector<uint64_t> streamStart(program.instructions.size(), 0);
  Channel hbm;
  double bytesPerCycle = target.hbmBytesPerCycle();
  double iciPerCycle = target.iciBytesPerSecond / target.clockHz;
  const uint64_t fillDrain = target.fillDrainCycles();

  for (size_t i = 0; i < program.instructions.size(); ++i) {
    const fb::InstructionT &in = *program.instructions[i];
    InstrTiming &t = r.instrs[i];
    const fb::MatMulT *mm = in.kind.AsMatMul();
    uint64_t ready = 0;
    for (uint32_t d : in.deps) {
      const InstrTiming &dep = r.instrs[d];
      const fb::MatMulT *depMm = program.instructions[d]->kind.AsMatMul();
      bool inStreamOrder = mm && depMm && depMm->mxu == mm->mxu &&
                           depMm->out->buffer != mm->lhs->buffer &&
                           depMm->out->buffer != mm->rhs->buffer;
      ready = std::max(ready, inStreamOrder ? streamStart[d] : dep.end);
    }
    switch (in.kind.type) {
    case fb::Kind::MatMul: {
      t.unit = mm->mxu;
      MxuState &s = mxus[mm->mxu];
      uint64_t m = uint64_t(operandRows(*mm->lhs));
      uint64_t k = uint64_t(operandCols(*mm->lhs));
      uint64_t n = uint64_t(operandCols(*mm->rhs));
      uint64_t loadStart = std::max(ready, s.weightPortFree);
      uint64_t loaded = loadStart + k;
      uint64_t start = std::max(loaded, s.streamFree);
      t.start = loadStart;
      t.stall = ready > std::max(s.weightPortFree, s.streamFree)
                    ? ready - std::max(s.weightPortFree, s.streamFree)
                    : 0;
      streamStart[i] = start;
      s.weightPortFree = start;
      s.streamFree = start + m;
      t.busy = s.streamFree - std::max(loadStart, unitFree[t.unit]);
      unitFree[t.unit] = s.streamFree;
      t.end = s.streamFree + fillDrain;
      t.macs = m * k * n;
      break;
    }
    case fb::Kind::Vector: {
      const fb::VectorT &v = *in.kind.AsVector();
      bool scalar = vectorSignature(v.op).unit == VectorUnit::Scalar;
      t.unit = scalar ? u.scalar() : u.vector();
      uint64_t work =
          std::max<uint64_t>(1, ceilDiv(vectorWork(v), target.vectorLanes));
      t.start = std::max(ready, unitFree[t.unit]);
      t.stall = ready > unitFree[t.unit] ? ready - unitFree[t.unit] : 0;
      t.busy = work;
      unitFree[t.unit] = t.start + work;
      t.end = t.start + work + target.vectorLatency;
      break;
    }
    case fb::Kind::Dma: {
      const fb::DmaT &d = *in.kind.AsDma();
      bool load = program.buffers[d.src->buffer]->space == fb::Space::HBM;
      const fb::OperandT &hbmSide = load ? *d.src : *d.dst;
      fb::DType dtype = program.buffers[hbmSide.buffer]->dtype;
      t.hbmBytes =
          uint64_t(countInBounds(hbmSide)) * uint64_t(dtypeBytes(dtype));
      (load ? r.hbmBytesRead : r.hbmBytesWritten) += t.hbmBytes;
      t.unit = load ? u.dmaIn() : u.dmaOut();
      uint64_t length = target.dmaOverhead +
                        uint64_t(std::ceil(double(t.hbmBytes) / bytesPerCycle));
      uint64_t want = std::max(ready, unitFree[t.unit]);
      t.stall = ready > unitFree[t.unit] ? ready - unitFree[t.unit] : 0;
      t.start = hbm.reserve(want, length);
      t.busy = length;
      unitFree[t.unit] = t.start + length;
      t.end = t.start + length + target.dmaLatency;
      break;
    }
    case fb::Kind::AllReduce: {
      t.unit = u.ici();
      uint64_t bytes = 0;
      for (uint32_t b : in.kind.AsAllReduce()->buffers) {
        const fb::BufferT &buf = *program.buffers[b];
        bytes += uint64_t(shapeElements(buf.shape) * dtypeBytes(buf.dtype));
      }
      uint64_t length = 0;
      if (options.ranks > 1) {
        double moved =
            2.0 * (options.ranks - 1) / options.ranks * double(bytes);
        length = uint64_t(std::ceil(moved / iciPerCycle));
        r.iciBytes += uint64_t(moved);
      }
      t.start = std::max(ready, unitFree[t.unit]);
      t.stall = ready > unitFree[t.unit] ? ready - unitFree[t.unit] : 0;
      t.busy = length;
      unitFree[t.unit] = t.start + length;
      t.end = t.start + length;
      break;
    }
    default:
      break;
    }
    r.unitBusy[t.unit] += t.busy;
    r.unitStall[t.unit] += t.stall;
    r.macs += t.macs;
    r.cycles = std::max(r.cycles, t.end);
  }

  // On-chip occupancy over the program, from the buffers' live ranges.
  std::vector<int64_t> delta(program.instructions.size() + 1, 0);
  std::vector<bool> used = referencedBuffers(program);
  for (size_t id = 0; id < program.buffers.size(); ++id) {
    const auto &b = program.buffers[id];
    if (b->space != fb::Space::OnChip || !used[id])
      continue;
    int64_t bytes = shapeElements(b->shape) * dtypeBytes(b->dtype);
    delta[b->live_begin] += bytes;
    delta[size_t(b->live_end) + 1] -= bytes;
    r.onChipHighWater = std::max(r.onChipHighWater, b->offset + bytes);
  }
  int64_t live = 0;
  for (int64_t d : delta) {
    live += d;
    r.onChipPeakBytes = std::max(r.onChipPeakBytes, live);
  }
  return r;
}

} // namespace kiln::sim
