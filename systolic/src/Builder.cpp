//===- Builder.cpp - Building programs with automatic synchronization -----===//

#include "kiln/sim/Builder.h"

#include "kiln/sim/Isa.h"

#include <algorithm>

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
  sink.addBuffer(state.spec);
  buffers.push_back(std::move(state));
  return id;
}

uint32_t ProgramBuilder::beginSourceOp(const std::string &kind,
                                       const std::string &layer) {
  sink.addSourceOp(kind, layer);
  currentOp = numOps++;
  return currentOp;
}

uint32_t ProgramBuilder::emit(std::unique_ptr<fb::InstructionT> instr,
                              uint32_t unit, const std::vector<uint32_t> &reads,
                              const std::vector<uint32_t> &writes,
                              const std::vector<uint32_t> &drainedReads) {
  if (capturing) {
    captured.push_back(
        {std::move(instr), unit, currentOp, reads, writes, drainedReads});
    return UINT32_MAX;
  }
  uint32_t index = count++;
  std::vector<uint32_t> deps;
  auto touch = [&](uint32_t b) {
    BufferState &s = buffers[b];
    if (!s.used) {
      s.used = true;
      s.first = index;
      for (uint32_t p : s.predecessors) {
        for (auto &w : buffers[p].writers)
          deps.push_back(w.second);
        for (auto &r : buffers[p].readers)
          deps.push_back(r.second);
      }
    }
    s.last = index;
  };
  for (uint32_t b : reads) {
    touch(b);
    for (auto &w : buffers[b].writers)
      if (w.first != unit)
        deps.push_back(w.second);
  }
  // An MXU's result leaves the array R + C - 2 cycles after its last row
  // streamed in, while the unit already streams its next pass: a pass that
  // takes that result as an operand must wait for it like any other unit.
  for (uint32_t b : drainedReads) {
    auto w = buffers[b].writers.find(unit);
    if (w != buffers[b].writers.end())
      deps.push_back(w->second);
  }
  for (uint32_t b : writes) {
    touch(b);
    for (auto &w : buffers[b].writers)
      if (w.first != unit)
        deps.push_back(w.second);
    for (auto &r : buffers[b].readers)
      if (r.first != unit)
        deps.push_back(r.second);
  }
  // Otherwise instructions of one unit run in order, so same-unit hazards
  // need no flags.
  for (uint32_t b : reads)
    buffers[b].readers[unit] = index;
  for (uint32_t b : writes) {
    buffers[b].writers.clear();
    buffers[b].readers.clear();
    buffers[b].writers[unit] = index;
  }
  std::sort(deps.begin(), deps.end());
  deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
  instr->deps = std::move(deps);
  instr->op = currentOp;
  sink.addInstruction(std::move(instr));
  return index;
}

void ProgramBuilder::emitInterleaved(Capture a, Capture b) {
  uint32_t op = currentOp;
  size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    // The next instruction of the capture that is behind in proportion.
    bool takeA = j == b.size() ||
                 (i < a.size() && (i + 1) * b.size() <= (j + 1) * a.size());
    Captured &c = takeA ? a[i++] : b[j++];
    currentOp = c.op;
    emit(std::move(c.instr), c.unit, c.reads, c.writes, c.drainedReads);
  }
  currentOp = op;
}

uint32_t ProgramBuilder::dmaUnit(uint32_t srcBuffer) const {
  return buffers[srcBuffer].spec.space == fb::Space::HBM ? kDmaIn : kDmaOut;
}

uint32_t ProgramBuilder::dma(const OperandSpec &src, const OperandSpec &dst) {
  auto instr = std::make_unique<fb::InstructionT>();
  fb::DmaT d;
  d.src = src.build();
  d.dst = dst.build();
  instr->kind.Set(std::move(d));
  return emit(std::move(instr), dmaUnit(src.buffer), {src.buffer},
              {dst.buffer});
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
  instr->kind.Set(std::move(m));
  std::vector<uint32_t> reads = {lhs.buffer, rhs.buffer};
  if (accumulate)
    reads.push_back(out.buffer);
  return emit(std::move(instr), mxu, reads, {out.buffer},
              {lhs.buffer, rhs.buffer});
}

uint32_t ProgramBuilder::vector(fb::VectorOp op, std::vector<fb::Region> srcs,
                                std::vector<fb::Region> dsts, int64_t rows,
                                int64_t channels, std::vector<double> fattrs,
                                std::vector<int64_t> iattrs) {
  std::vector<uint32_t> reads, writes;
  for (const fb::Region &r : srcs)
    reads.push_back(r.buffer());
  for (const fb::Region &r : dsts) {
    writes.push_back(r.buffer());
    if (readsDestinations(op))
      reads.push_back(r.buffer());
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
  return emit(std::move(instr), kIci, bufs, bufs);
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
