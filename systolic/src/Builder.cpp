//===- Builder.cpp - Building programs with automatic synchronization -----===//

#include "kiln/sim/Builder.h"

#include "kiln/sim/Isa.h"
#include "kiln/sim/Timing.h"
#include "kiln/sim/View.h"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace kiln::sim {

namespace {

// Unit keys for dependency tracking (independent of the MXU count).
constexpr uint32_t kVectorUnit = 1u << 20, kScalarUnit = kVectorUnit + 1,
                   kDmaIn = kVectorUnit + 2, kDmaOut = kVectorUnit + 3,
                   kIci = kVectorUnit + 4;

/// Vector ops that add into (or scatter into) their destinations.
bool readsDestinations(fb::VectorOp op) {
  using Op = fb::VectorOp;
  return op == Op::ChannelSum || op == Op::ChannelMoments ||
         op == Op::ChannelCenteredDot || op == Op::XentLoss ||
         op == Op::SumSquares;
}

/// The elements an operand's view touches.
ProgramBuilder::Use touched(const fb::OperandT &op) {
  int64_t lo, hi;
  operandTouchedRange(op, lo, hi);
  return {op.buffer, lo, std::max(lo, hi + 1)};
}

} // namespace

std::unique_ptr<fb::OperandT> OperandSpec::build() const {
  auto op = std::make_unique<fb::OperandT>();
  op->buffer = buffer;
  op->base = base;
  op->row_counts = rows;
  op->col_counts = cols;
  for (const CoordSpec &c : coords) {
    auto q = std::make_unique<fb::CoordT>();
    q->stride = c.stride;
    q->offset = c.offset;
    q->bound = c.bound;
    q->row_coef = c.row;
    q->col_coef = c.col;
    op->coords.push_back(std::move(q));
  }
  return op;
}

OperandSpec OperandSpec::matrix(uint32_t buffer, int64_t offset, int64_t rows,
                                int64_t cols, int64_t ld) {
  OperandSpec s;
  s.buffer = buffer;
  s.base = offset;
  s.rows = {rows};
  s.cols = {cols};
  s.coords = {{ld, 0, rows, {1}, {}}, {1, 0, cols, {}, {1}}};
  return s;
}

OperandSpec OperandSpec::transposed(uint32_t buffer, int64_t offset,
                                    int64_t rows, int64_t cols, int64_t ld) {
  OperandSpec s;
  s.buffer = buffer;
  s.base = offset;
  s.rows = {cols};
  s.cols = {rows};
  s.coords = {{ld, 0, rows, {}, {1}}, {1, 0, cols, {1}, {}}};
  return s;
}

std::unique_ptr<fb::BufferT> makeBuffer(const BufferSpec &spec) {
  auto b = std::make_unique<fb::BufferT>();
  b->name = spec.name;
  b->dtype = spec.dtype;
  b->space = spec.space;
  b->role = spec.role;
  b->binding = spec.binding;
  b->shape = spec.shape;
  b->offset = spec.offset;
  b->init = spec.init;
  b->init_std = spec.initStd;
  b->data = spec.data;
  b->host_layout = spec.hostLayout;
  return b;
}

uint32_t ProgramBuilder::addBuffer(BufferSpec spec) {
  uint32_t id = uint32_t(buffers.size());
  BufferState state;
  if (spec.space == fb::Space::OnChip) {
    int64_t lo = spec.offset,
            hi = lo + shapeElements(spec.shape) * dtypeBytes(spec.dtype);
    // Collect the previous owners of [lo, hi) and make this buffer the owner.
    auto it = owners.upper_bound(lo);
    if (it != owners.begin())
      --it;
    std::vector<std::pair<int64_t, std::pair<int64_t, uint32_t>>> keep;
    while (it != owners.end() && it->first < hi) {
      int64_t s = it->first, e = it->second.first;
      uint32_t owner = it->second.second;
      if (e > lo) {
        state.predecessors.push_back(owner);
        if (s < lo)
          keep.push_back({s, {lo, owner}});
        if (e > hi)
          keep.push_back({hi, {e, owner}});
        it = owners.erase(it);
      } else {
        ++it;
      }
    }
    for (auto &k : keep)
      owners[k.first] = k.second;
    owners[lo] = {hi, id};
    std::sort(state.predecessors.begin(), state.predecessors.end());
    state.predecessors.erase(
        std::unique(state.predecessors.begin(), state.predecessors.end()),
        state.predecessors.end());
  }
  state.spec = std::move(spec);
  if (trial.active)
    trial.held.push_back({int64_t(id), {}});
  else
    sink.addBuffer(state.spec);
  buffers.push_back(std::move(state));
  return id;
}

uint32_t ProgramBuilder::beginSourceOp(const std::string &kind,
                                       const std::string &layer) {
  if (trial.active)
    trial.held.push_back({-1, {kind, layer}});
  else
    sink.addSourceOp(kind, layer);
  currentOp = numOps++;
  return currentOp;
}

uint32_t ProgramBuilder::emit(std::unique_ptr<fb::InstructionT> instr,
                              uint32_t unit, const std::vector<Use> &reads,
                              const std::vector<Use> &writes,
                              const std::vector<Use> &drainedReads) {
  if (capturing) {
    captured.push_back(
        {std::move(instr), unit, currentOp, reads, writes, drainedReads});
    return UINT32_MAX;
  }
  assert(!trial.active && "a trial's instructions must be captured");
  uint32_t index = count++;
  std::vector<uint32_t> deps;
  auto touch = [&](uint32_t b) {
    BufferState &s = buffers[b];
    if (!s.used) {
      s.used = true;
      s.first = index;
      for (uint32_t p : s.predecessors)
        for (const Access &a : buffers[p].accesses)
          deps.push_back(a.index);
    }
    s.last = index;
  };
  // Of the reads (writes) of one buffer that an instruction waits for, each
  // unit's last stands for its earlier ones (units run in order and their
  // results become ready in order).
  auto waitFor = [&](const Use &u, bool sameUnit, bool writesOnly) {
    std::map<std::pair<uint32_t, bool>, uint32_t> last;
    for (const Access &a : buffers[u.buffer].accesses)
      if ((a.unit == unit) == sameUnit && (a.write || !writesOnly) &&
          a.lo < u.hi && u.lo < a.hi) {
        uint32_t &l = last[{a.unit, a.write}];
        l = std::max(l, a.index);
      }
    for (auto &l : last)
      deps.push_back(l.second);
  };
  for (const Use &u : reads) {
    touch(u.buffer);
    waitFor(u, false, true);
  }
  // An MXU's result leaves the array R + C - 2 cycles after its last row
  // streamed in, while the unit already streams its next pass: a pass that
  // takes that result as an operand must wait for it like any other unit.
  for (const Use &u : drainedReads)
    waitFor(u, true, true);
  for (const Use &u : writes) {
    touch(u.buffer);
    waitFor(u, false, false);
  }
  // Otherwise instructions of one unit run in order, so same-unit hazards
  // need no flags.
  auto record = [&](const Use &u, bool write) {
    std::vector<Access> &list = buffers[u.buffer].accesses;
    list.erase(std::remove_if(list.begin(), list.end(),
                              [&](const Access &a) {
                                bool covered = u.lo <= a.lo && a.hi <= u.hi;
                                return covered &&
                                       (write || (!a.write && a.unit == unit));
                              }),
               list.end());
    list.push_back({u.lo, u.hi, unit, index, write});
  };
  for (const Use &u : reads)
    record(u, false);
  for (const Use &u : writes)
    record(u, true);
  std::sort(deps.begin(), deps.end());
  deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
  instr->deps = std::move(deps);
  instr->op = currentOp;
  sink.addInstruction(std::move(instr));
  return index;
}

void ProgramBuilder::estimate(const fb::InstructionT &in,
                              const TargetConfig &target, uint64_t &busy,
                              uint64_t &latency) const {
  busy = latency = 0;
  if (const fb::MatMulT *m = in.kind.AsMatMul()) {
    // The next pass's weights load while this one streams.
    busy = uint64_t(std::max(operandRows(*m->lhs), operandCols(*m->lhs)));
    latency = target.fillDrainCycles();
  } else if (const fb::VectorT *v = in.kind.AsVector()) {
    busy = std::max<uint64_t>(
        1, (vectorWork(*v) + target.vectorLanes - 1) / target.vectorLanes);
    latency = target.vectorLatency;
  } else if (const fb::DmaT *d = in.kind.AsDma()) {
    const fb::OperandT &h =
        buffers[d->src->buffer].spec.space == fb::Space::HBM ? *d->src
                                                             : *d->dst;
    double bytes = double(countInBounds(h)) *
                   double(dtypeBytes(buffers[h.buffer].spec.dtype));
    busy = target.dmaOverhead +
           uint64_t(std::ceil(bytes / target.hbmBytesPerCycle()));
    latency = target.dmaLatency;
  }
}

void ProgramBuilder::emitInterleaved(std::vector<Capture> captures,
                                     const TargetConfig &target) {
  uint32_t op = currentOp;
  for (Captured &k : merge(std::move(captures), target)) {
    currentOp = k.op;
    emit(std::move(k.instr), k.unit, k.reads, k.writes, k.drainedReads);
  }
  currentOp = op;
}

/// need[j]: how many instructions of `a` must be out before b[j] may be,
/// from the conflicting accesses of the two (per buffer, a's uses in order).
static std::vector<size_t> needs(const ProgramBuilder::Capture &a,
                                 const ProgramBuilder::Capture &b) {
  using Use = ProgramBuilder::Use;
  struct AUse {
    size_t index;
    int64_t lo, hi;
    bool write;
  };
  std::map<uint32_t, std::vector<AUse>> aUses;
  for (size_t i = 0; i < a.size(); ++i) {
    for (const Use &u : a[i].reads)
      aUses[u.buffer].push_back({i, u.lo, u.hi, false});
    for (const Use &u : a[i].writes)
      aUses[u.buffer].push_back({i, u.lo, u.hi, true});
  }
  std::vector<size_t> need(b.size(), 0);
  for (size_t j = 0; j < b.size(); ++j) {
    auto scan = [&](const Use &u, bool write) {
      auto it = aUses.find(u.buffer);
      if (it == aUses.end())
        return;
      for (auto k = it->second.rbegin(); k != it->second.rend(); ++k)
        if ((write || k->write) && k->lo < u.hi && u.lo < k->hi) {
          need[j] = std::max(need[j], k->index + 1);
          return;
        }
    };
    for (const Use &u : b[j].reads)
      scan(u, false);
    for (const Use &u : b[j].writes)
      scan(u, true);
  }
  return need;
}

struct ProgramBuilder::Schedule {
  std::map<uint32_t, uint64_t> unitFree, written, touched;
  uint64_t hbmFree = 0, finish = 0;
};

void ProgramBuilder::schedule(
    const std::vector<Capture> &cs, const TargetConfig &target, Schedule &s,
    std::vector<std::pair<size_t, size_t>> *order) const {
  size_t n = cs.size();
  // need[x][y][k]: instructions of cs[x] (x < y) that must be out before
  // cs[y][k].
  std::vector<std::vector<std::vector<size_t>>> need(
      n, std::vector<std::vector<size_t>>(n));
  for (size_t y = 0; y < n; ++y)
    for (size_t x = 0; x < y; ++x)
      need[x][y] = needs(cs[x], cs[y]);
  // One schedule of all instructions on shared units: each step places the
  // next instruction of the capture whose next one would start first.
  std::vector<size_t> next(n, 0);
  std::vector<std::vector<uint64_t>> end(n);
  for (size_t y = 0; y < n; ++y)
    end[y].assign(cs[y].size(), 0);
  size_t total = 0, placed = 0;
  for (const Capture &c : cs)
    total += c.size();
  // The latest access to the buffers whose on-chip bytes `b` reuses.
  auto reused = [&](uint32_t b) {
    uint64_t t = 0;
    for (uint32_t p : buffers[b].predecessors) {
      auto it = s.touched.find(p);
      if (it != s.touched.end())
        t = std::max(t, it->second);
    }
    return t;
  };
  while (placed < total) {
    size_t best = n;
    uint64_t bestStart = UINT64_MAX, bestBusy = 0, bestLatency = 0;
    for (size_t y = 0; y < n; ++y) {
      size_t k = next[y];
      if (k == cs[y].size())
        continue;
      const Captured &c = cs[y][k];
      uint64_t t = s.unitFree[c.unit];
      bool ready = true;
      for (size_t x = 0; x < y && ready; ++x) {
        size_t want = need[x][y][k];
        if (want > next[x])
          ready = false;
        else if (want > 0)
          t = std::max(t, end[x][want - 1]);
      }
      if (!ready)
        continue;
      for (const Use &u : c.reads)
        t = std::max({t, s.written[u.buffer], reused(u.buffer)});
      for (const Use &u : c.writes)
        t = std::max({t, s.touched[u.buffer], reused(u.buffer)});
      uint64_t busy, latency;
      estimate(*c.instr, target, busy, latency);
      if (c.instr->kind.AsDma())
        t = std::max(t, s.hbmFree);
      if (t < bestStart) {
        best = y, bestStart = t, bestBusy = busy, bestLatency = latency;
      }
    }
    const Captured &c = cs[best][next[best]];
    uint64_t t = bestStart, e = t + bestBusy + bestLatency;
    if (order)
      order->push_back({best, next[best]});
    end[best][next[best]++] = e;
    ++placed;
    s.unitFree[c.unit] = t + bestBusy;
    s.finish = std::max(s.finish, e);
    if (c.instr->kind.AsDma())
      s.hbmFree = t + bestBusy;
    for (const Use &u : c.reads)
      s.touched[u.buffer] = std::max(s.touched[u.buffer], t + bestBusy);
    for (const Use &u : c.writes) {
      s.written[u.buffer] = e;
      s.touched[u.buffer] = std::max(s.touched[u.buffer], e);
    }
  }
}

ProgramBuilder::Capture
ProgramBuilder::merge(std::vector<Capture> cs,
                      const TargetConfig &target) const {
  Schedule s;
  std::vector<std::pair<size_t, size_t>> order;
  schedule(cs, target, s, &order);
  Capture merged;
  merged.reserve(order.size());
  for (auto [y, k] : order)
    merged.push_back(std::move(cs[y][k]));
  return merged;
}

uint64_t
ProgramBuilder::estimateCycles(const std::vector<std::vector<Capture>> &steps,
                               const TargetConfig &target) const {
  Schedule s;
  for (const std::vector<Capture> &step : steps)
    schedule(step, target, s, nullptr);
  return s.finish;
}

void ProgramBuilder::beginTrial() {
  assert(!trial.active && !capturing && "trials do not nest");
  trial.active = true;
  trial.buffers = buffers.size();
  trial.owners = owners;
  trial.numOps = numOps;
  trial.currentOp = currentOp;
  trial.held.clear();
}

void ProgramBuilder::endTrial(bool keep) {
  assert(trial.active && !capturing);
  trial.active = false;
  if (keep) {
    for (auto &[buffer, op] : trial.held) {
      if (buffer >= 0)
        sink.addBuffer(buffers[size_t(buffer)].spec);
      else
        sink.addSourceOp(op.first, op.second);
    }
  } else {
    buffers.resize(trial.buffers);
    owners = std::move(trial.owners);
    numOps = trial.numOps;
    currentOp = trial.currentOp;
  }
  trial.owners.clear();
  trial.held.clear();
}

uint32_t ProgramBuilder::dmaUnit(uint32_t srcBuffer) const {
  return buffers[srcBuffer].spec.space == fb::Space::HBM ? kDmaIn : kDmaOut;
}

uint32_t ProgramBuilder::dma(const OperandSpec &src, const OperandSpec &dst) {
  auto instr = std::make_unique<fb::InstructionT>();
  fb::DmaT d;
  d.src = src.build();
  d.dst = dst.build();
  Use from = touched(*d.src), to = touched(*d.dst);
  instr->kind.Set(std::move(d));
  return emit(std::move(instr), dmaUnit(src.buffer), {from}, {to});
}

uint32_t ProgramBuilder::matmul(uint32_t mxu, const OperandSpec &lhs,
                                const OperandSpec &rhs, const OperandSpec &out,
                                bool accumulate) {
  auto instr = std::make_unique<fb::InstructionT>();
  fb::MatMulT m;
  m.mxu = mxu;
  m.lhs = lhs.build();
  m.rhs = rhs.build();
  m.out = out.build();
  m.accumulate = accumulate;
  Use l = touched(*m.lhs), r = touched(*m.rhs), o = touched(*m.out);
  instr->kind.Set(std::move(m));
  std::vector<Use> reads = {l, r};
  if (accumulate)
    reads.push_back(o);
  return emit(std::move(instr), mxu, reads, {o}, {l, r});
}

uint32_t ProgramBuilder::vector(fb::VectorOp op, std::vector<fb::Region> srcs,
                                std::vector<fb::Region> dsts, int64_t rows,
                                int64_t channels, std::vector<double> fattrs,
                                std::vector<int64_t> iattrs) {
  // Regions count as the whole buffer (what a vector op touches beyond
  // rows x channels depends on the op).
  std::vector<Use> reads, writes;
  for (const fb::Region &r : srcs)
    reads.push_back({r.buffer()});
  for (const fb::Region &r : dsts) {
    writes.push_back({r.buffer()});
    if (readsDestinations(op))
      reads.push_back({r.buffer()});
  }
  auto instr = std::make_unique<fb::InstructionT>();
  fb::VectorT v;
  v.op = op;
  v.srcs = std::move(srcs);
  v.dsts = std::move(dsts);
  v.rows = rows;
  v.channels = channels;
  v.fattrs = std::move(fattrs);
  v.iattrs = std::move(iattrs);
  instr->kind.Set(std::move(v));
  uint32_t unit = vectorSignature(op).unit == VectorUnit::Scalar ? kScalarUnit
                                                                 : kVectorUnit;
  return emit(std::move(instr), unit, reads, writes);
}

uint32_t ProgramBuilder::allReduce(std::vector<uint32_t> bufs) {
  auto instr = std::make_unique<fb::InstructionT>();
  fb::AllReduceT a;
  a.buffers = bufs;
  instr->kind.Set(std::move(a));
  std::vector<Use> uses;
  for (uint32_t b : bufs)
    uses.push_back({b});
  return emit(std::move(instr), kIci, uses, uses);
}

void ProgramBuilder::finish() {
  for (uint32_t id = 0; id < buffers.size(); ++id) {
    const BufferState &s = buffers[id];
    if (s.spec.space == fb::Space::OnChip)
      sink.setLiveRange(id, s.used ? s.first : 0, s.used ? s.last : 0);
  }
}

ProgramTSink::ProgramTSink(const TargetConfig &target, std::string name,
                           int64_t batch)
    : program(std::make_unique<Program>()) {
  program->name = std::move(name);
  program->batch = batch;
  program->target = targetToProgram(target);
}

void ProgramTSink::addBuffer(const BufferSpec &spec) {
  program->buffers.push_back(makeBuffer(spec));
}

void ProgramTSink::addSourceOp(const std::string &kind,
                               const std::string &layer) {
  auto op = std::make_unique<fb::SourceOpT>();
  op->kind = kind;
  op->layer = layer;
  program->ops.push_back(std::move(op));
}

void ProgramTSink::addInstruction(std::unique_ptr<fb::InstructionT> instr) {
  program->instructions.push_back(std::move(instr));
}

void ProgramTSink::setLiveRange(uint32_t buffer, uint32_t begin, uint32_t end) {
  program->buffers[buffer]->live_begin = begin;
  program->buffers[buffer]->live_end = end;
}

} // namespace kiln::sim
