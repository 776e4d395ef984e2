//===- Program.cpp - Loading, saving and verifying programs ---------------===//

#include "kiln/sim/Program.h"

#include "kiln/sim/Isa.h"
#include "kiln/sim/View.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

namespace kiln::sim {

namespace {

std::string instrName(size_t index) {
  return "instruction " + std::to_string(index);
}

struct Checker {
  const Program &prog;
  const TargetConfig &target;

  const fb::BufferT *buffer(uint32_t id) const {
    return id < prog.buffers.size() ? prog.buffers[id].get() : nullptr;
  }

  /// Checks an operand's buffer, shape and address range; returns the
  /// buffer through `out`.
  Status checkOperand(const fb::OperandT *op, const char *what,
                      const fb::BufferT *&out) const {
    if (!op)
      return invalidArgumentError(std::string(what) + " is missing");
    out = buffer(op->buffer);
    if (!out)
      return invalidArgumentError(std::string(what) + " names buffer " +
                                  std::to_string(op->buffer) +
                                  ", which does not exist");
    for (int64_t c : op->row_counts)
      if (c <= 0)
        return invalidArgumentError(std::string(what) +
                                    " has a non-positive row count");
    for (int64_t c : op->col_counts)
      if (c <= 0)
        return invalidArgumentError(std::string(what) +
                                    " has a non-positive column count");
    for (const auto &q : op->coords) {
      if (q->row_coef.size() > op->row_counts.size() ||
          q->col_coef.size() > op->col_counts.size())
        return invalidArgumentError(std::string(what) +
                                    " has more coefficients than dimensions");
    }
    int64_t lo, hi;
    operandAddressRange(*op, lo, hi);
    int64_t size = shapeElements(out->shape);
    if (lo <= hi && (lo < 0 || hi >= size))
      return invalidArgumentError(std::string(what) + " reaches elements [" +
                                  std::to_string(lo) + ", " +
                                  std::to_string(hi) + "] of '" + out->name +
                                  "', which has " + std::to_string(size));
    return Status::ok();
  }

  Status checkLive(const fb::BufferT *b, size_t index) const {
    if (b->space == fb::Space::OnChip &&
        (index < b->live_begin || index > b->live_end))
      return invalidArgumentError("uses on-chip buffer '" + b->name +
                                  "' outside its live range [" +
                                  std::to_string(b->live_begin) + ", " +
                                  std::to_string(b->live_end) + "]");
    return Status::ok();
  }

  Status checkDma(const fb::DmaT &d, size_t index) const {
    const fb::BufferT *src, *dst;
    KILN_RETURN_IF_ERROR(checkOperand(d.src.get(), "DMA source", src));
    KILN_RETURN_IF_ERROR(checkOperand(d.dst.get(), "DMA destination", dst));
    if (operandRows(*d.src) != operandRows(*d.dst) ||
        operandCols(*d.src) != operandCols(*d.dst))
      return invalidArgumentError("DMA source and destination differ in shape");
    if (src->dtype != dst->dtype)
      return invalidArgumentError(
          "DMA from '" + src->name + "' (" + dtypeName(src->dtype) + ") to '" +
          dst->name + "' (" + dtypeName(dst->dtype) +
          ") would convert; only the vector unit converts");
    if (src->space == dst->space)
      return invalidArgumentError(
          "DMA from '" + src->name + "' to '" + dst->name +
          "' does not cross between HBM and on-chip memory");
    KILN_RETURN_IF_ERROR(checkLive(src, index));
    return checkLive(dst, index);
  }

  Status checkMatMul(const fb::MatMulT &m, size_t index) const {
    if (m.mxu >= target.mxuCount)
      return invalidArgumentError("uses MXU " + std::to_string(m.mxu) + " of " +
                                  std::to_string(target.mxuCount));
    const fb::BufferT *lhs, *rhs, *out;
    KILN_RETURN_IF_ERROR(checkOperand(m.lhs.get(), "matmul lhs", lhs));
    KILN_RETURN_IF_ERROR(checkOperand(m.rhs.get(), "matmul rhs", rhs));
    KILN_RETURN_IF_ERROR(checkOperand(m.out.get(), "matmul out", out));
    int64_t mm = operandRows(*m.lhs), k = operandCols(*m.lhs),
            n = operandCols(*m.rhs);
    if (operandRows(*m.rhs) != k || operandRows(*m.out) != mm ||
        operandCols(*m.out) != n)
      return invalidArgumentError(
          "matmul shapes disagree: lhs " + std::to_string(mm) + "x" +
          std::to_string(k) + ", rhs " + std::to_string(operandRows(*m.rhs)) +
          "x" + std::to_string(n) + ", out " +
          std::to_string(operandRows(*m.out)) + "x" +
          std::to_string(operandCols(*m.out)));
    if (k > int64_t(target.arrayRows) || n > int64_t(target.arrayCols))
      return invalidArgumentError("matmul weight tile " + std::to_string(k) +
                                  "x" + std::to_string(n) + " exceeds the " +
                                  std::to_string(target.arrayRows) + "x" +
                                  std::to_string(target.arrayCols) + " array");
    for (const fb::BufferT *b : {lhs, rhs, out})
      if (b->space != fb::Space::OnChip)
        return invalidArgumentError("matmul operand '" + b->name +
                                    "' is not on chip");
    if (out->dtype != fb::DType::F32)
      return invalidArgumentError("matmul accumulates into '" + out->name +
                                  "', which is not f32");
    for (const fb::BufferT *b : {lhs, rhs, out})
      KILN_RETURN_IF_ERROR(checkLive(b, index));
    return Status::ok();
  }

  Status checkVector(const fb::VectorT &v, size_t index) const {
    std::vector<int64_t> srcExt, dstExt;
    Status s = vectorExtents(v, srcExt, dstExt);
    if (!s.isOk())
      return s;
    auto checkRegions = [&](const std::vector<fb::Region> &regions,
                            const std::vector<int64_t> &extents) -> Status {
      for (size_t i = 0; i < regions.size(); ++i) {
        const fb::BufferT *b = buffer(regions[i].buffer());
        if (!b)
          return invalidArgumentError("vector operand names a missing buffer");
        if (b->space != fb::Space::OnChip)
          return invalidArgumentError("vector operand '" + b->name +
                                      "' is not on chip");
        int64_t off = regions[i].offset();
        if (off < 0 || off + extents[i] > shapeElements(b->shape))
          return invalidArgumentError(
              std::string(vectorSignature(v.op).name) + " operand " +
              std::to_string(i) + " spans [" + std::to_string(off) + ", " +
              std::to_string(off + extents[i]) + ") of '" + b->name +
              "', which has " + std::to_string(shapeElements(b->shape)));
        KILN_RETURN_IF_ERROR(checkLive(b, index));
      }
      return Status::ok();
    };
    KILN_RETURN_IF_ERROR(checkRegions(v.srcs, srcExt));
    return checkRegions(v.dsts, dstExt);
  }

  Status checkBuffers() const {
    std::set<std::string> names;
    size_t numInstrs = prog.instructions.size();
    for (const auto &bp : prog.buffers) {
      if (!bp)
        return invalidArgumentError("a buffer entry is empty");
      const fb::BufferT &b = *bp;
      if (b.name.empty())
        return invalidArgumentError("a buffer has no name");
      if (!names.insert(b.name).second)
        return invalidArgumentError("buffer name '" + b.name +
                                    "' is used twice");
      for (int64_t d : b.shape)
        if (d <= 0)
          return invalidArgumentError("buffer '" + b.name +
                                      "' has a non-positive dimension");
      int64_t elems = shapeElements(b.shape);
      if (b.space == fb::Space::OnChip) {
        int64_t bytes = elems * dtypeBytes(b.dtype);
        if (b.offset < 0 || b.offset + bytes > target.onChipBytes)
          return invalidArgumentError(
              "on-chip buffer '" + b.name + "' spans bytes [" +
              std::to_string(b.offset) + ", " +
              std::to_string(b.offset + bytes) + ") of " +
              std::to_string(target.onChipBytes) + " bytes of on-chip memory");
        if (b.live_begin > b.live_end || (numInstrs && b.live_end >= numInstrs))
          return invalidArgumentError("on-chip buffer '" + b.name +
                                      "' has an invalid live range");
      }
      bool needsData =
          b.role == fb::Role::Constant || b.init == fb::Init::Value;
      if (needsData && int64_t(b.data.size()) != elems)
        return invalidArgumentError("buffer '" + b.name + "' needs " +
                                    std::to_string(elems) + " values, has " +
                                    std::to_string(b.data.size()));
      if ((b.role == fb::Role::Input || b.role == fb::Role::Output ||
           b.role == fb::Role::Parameter || b.role == fb::Role::State) &&
          b.binding.empty())
        return invalidArgumentError("host-visible buffer '" + b.name +
                                    "' has no binding");
      if (b.host_layout == fb::HostLayout::SpaceToDepth2 &&
          (b.role != fb::Role::Input || b.shape.size() != 4 ||
           b.shape[3] % 4 != 0))
        return invalidArgumentError(
            "buffer '" + b.name +
            "': space-to-depth applies to NHWC inputs whose "
            "channels are a multiple of 4");
    }
    return Status::ok();
  }

  /// No two on-chip buffers may share bytes while both are live: a sweep
  /// over time keeping the live buffers ordered by address.
  Status checkOverlaps() const {
    struct Event {
      uint32_t time;
      bool end;
      uint32_t id;
    };
    std::vector<Event> events;
    std::vector<bool> used = referencedBuffers(prog);
    for (uint32_t id = 0; id < prog.buffers.size(); ++id) {
      const fb::BufferT &b = *prog.buffers[id];
      if (b.space != fb::Space::OnChip || !used[id])
        continue;
      events.push_back({b.live_begin, false, id});
      events.push_back({b.live_end, true, id});
    }
    // Starts before ends at the same time: live ranges are inclusive.
    std::sort(events.begin(), events.end(), [](const Event &a, const Event &b) {
      if (a.time != b.time)
        return a.time < b.time;
      return a.end < b.end;
    });
    std::map<int64_t, uint32_t> live; // start offset -> buffer
    auto extent = [&](uint32_t id) {
      const fb::BufferT &b = *prog.buffers[id];
      return std::make_pair(b.offset, b.offset + shapeElements(b.shape) *
                                                     dtypeBytes(b.dtype));
    };
    for (const Event &e : events) {
      auto [lo, hi] = extent(e.id);
      if (e.end) {
        auto it = live.find(lo);
        if (it != live.end() && it->second == e.id)
          live.erase(it);
        continue;
      }
      auto next = live.lower_bound(lo);
      if (next != live.end() && next->first < hi)
        return overlapError(e.id, next->second);
      if (next != live.begin()) {
        auto prev = std::prev(next);
        if (extent(prev->second).second > lo)
          return overlapError(e.id, prev->second);
      }
      live[lo] = e.id;
    }
    return Status::ok();
  }

  Status overlapError(uint32_t a, uint32_t b) const {
    return invalidArgumentError("on-chip buffers '" + prog.buffers[a]->name +
                                "' and '" + prog.buffers[b]->name +
                                "' share memory while both are live");
  }

  Status run() const {
    KILN_RETURN_IF_ERROR(validateTarget(target));
    KILN_RETURN_IF_ERROR(checkBuffers());
    for (size_t i = 0; i < prog.instructions.size(); ++i) {
      const auto &ip = prog.instructions[i];
      if (!ip)
        return invalidArgumentError(instrName(i) + " is empty");
      for (uint32_t d : ip->deps)
        if (d >= i)
          return invalidArgumentError(instrName(i) + " waits for instruction " +
                                      std::to_string(d) +
                                      ", which is not earlier");
      if (!prog.ops.empty() && ip->op >= prog.ops.size())
        return invalidArgumentError(instrName(i) + " names source op " +
                                    std::to_string(ip->op) +
                                    ", which does not exist");
      Status s;
      switch (ip->kind.type) {
      case fb::Kind::Dma:
        s = checkDma(*ip->kind.AsDma(), i);
        break;
      case fb::Kind::MatMul:
        s = checkMatMul(*ip->kind.AsMatMul(), i);
        break;
      case fb::Kind::Vector:
        s = checkVector(*ip->kind.AsVector(), i);
        break;
      case fb::Kind::AllReduce:
        for (uint32_t b : ip->kind.AsAllReduce()->buffers)
          if (!buffer(b))
            s = invalidArgumentError("allreduce names a missing buffer");
        break;
      default:
        s = invalidArgumentError("has no kind");
      }
      if (!s.isOk())
        return invalidArgumentError(instrName(i) + ": " + s.message());
    }
    return checkOverlaps();
  }
};

} // namespace

std::vector<bool> referencedBuffers(const Program &program) {
  std::vector<bool> used(program.buffers.size(), false);
  auto mark = [&](uint32_t id) {
    if (id < used.size())
      used[id] = true;
  };
  for (const auto &in : program.instructions) {
    if (!in)
      continue;
    switch (in->kind.type) {
    case fb::Kind::Dma:
      if (in->kind.AsDma()->src)
        mark(in->kind.AsDma()->src->buffer);
      if (in->kind.AsDma()->dst)
        mark(in->kind.AsDma()->dst->buffer);
      break;
    case fb::Kind::MatMul:
      for (const auto *o :
           {in->kind.AsMatMul()->lhs.get(), in->kind.AsMatMul()->rhs.get(),
            in->kind.AsMatMul()->out.get()})
        if (o)
          mark(o->buffer);
      break;
    case fb::Kind::Vector:
      for (const fb::Region &r : in->kind.AsVector()->srcs)
        mark(r.buffer());
      for (const fb::Region &r : in->kind.AsVector()->dsts)
        mark(r.buffer());
      break;
    case fb::Kind::AllReduce:
      for (uint32_t b : in->kind.AsAllReduce()->buffers)
        mark(b);
      break;
    default:
      break;
    }
  }
  return used;
}

TargetConfig targetFromProgram(const fb::TargetConfigT &c) {
  TargetConfig t;
  t.name = c.name;
  t.mxuCount = c.mxu_count;
  t.arrayRows = c.array_rows;
  t.arrayCols = c.array_cols;
  t.clockHz = c.clock_hz;
  t.onChipBytes = c.onchip_bytes;
  t.hbmBytesPerSecond = c.hbm_bytes_per_s;
  t.vectorLanes = c.vector_lanes;
  t.vectorLatency = c.vector_latency;
  t.dmaLatency = c.dma_latency;
  t.dmaOverhead = c.dma_overhead;
  t.iciBytesPerSecond = c.ici_bytes_per_s;
  return t;
}

std::unique_ptr<fb::TargetConfigT> targetToProgram(const TargetConfig &t) {
  auto c = std::make_unique<fb::TargetConfigT>();
  c->name = t.name;
  c->mxu_count = t.mxuCount;
  c->array_rows = t.arrayRows;
  c->array_cols = t.arrayCols;
  c->clock_hz = t.clockHz;
  c->onchip_bytes = t.onChipBytes;
  c->hbm_bytes_per_s = t.hbmBytesPerSecond;
  c->vector_lanes = t.vectorLanes;
  c->vector_latency = t.vectorLatency;
  c->dma_latency = t.dmaLatency;
  c->dma_overhead = t.dmaOverhead;
  c->ici_bytes_per_s = t.iciBytesPerSecond;
  return c;
}

Status verifyProgram(const Program &program, const TargetConfig &target) {
  if (!program.target)
    return invalidArgumentError("program has no target config");
  return Checker{program, target}.run();
}

std::vector<uint8_t> serializeProgram(const Program &program) {
  flatbuffers::FlatBufferBuilder fbb(1 << 16);
  auto offset = fb::Program::Pack(fbb, &program);
  fb::FinishProgramBuffer(fbb, offset);
  std::vector<uint8_t> bytes(fbb.GetBufferPointer(),
                             fbb.GetBufferPointer() + fbb.GetSize());
  return bytes;
}

Status readFile(const std::string &path, std::vector<uint8_t> &bytes) {
  FILE *f = std::fopen(path.c_str(), "rb");
  if (!f)
    return invalidArgumentError("cannot open '" + path + "'");
  bytes.clear();
  uint8_t chunk[1 << 16];
  size_t n;
  while ((n = std::fread(chunk, 1, sizeof(chunk), f)) > 0)
    bytes.insert(bytes.end(), chunk, chunk + n);
  bool failed = std::ferror(f);
  std::fclose(f);
  if (failed)
    return invalidArgumentError("cannot read '" + path + "'");
  return Status::ok();
}

Status saveProgram(const Program &program, const std::string &path) {
  std::vector<uint8_t> bytes = serializeProgram(program);
  std::string tmp = path + ".tmp";
  FILE *f = std::fopen(tmp.c_str(), "wb");
  if (!f)
    return invalidArgumentError("cannot create '" + tmp + "'");
  bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  ok = (std::fclose(f) == 0) && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return invalidArgumentError("cannot write '" + path + "'");
  }
  return Status::ok();
}

Status parseProgram(const uint8_t *data, size_t size,
                    std::unique_ptr<Program> &program) {
  if (size < 8 || !fb::ProgramBufferHasIdentifier(data))
    return invalidArgumentError("not a Kiln systolic program (file identifier "
                                "'KSAP' missing)");
  // Large programs (ResNet-50: ~10^6 tables) exceed the default table limit.
  flatbuffers::Verifier verifier(data, size, /*max_depth=*/64,
                                 /*max_tables=*/1u << 30);
  if (!fb::VerifyProgramBuffer(verifier))
    return invalidArgumentError(
        "corrupt program: FlatBuffers verification failed");
  const fb::Program *root = fb::GetProgram(data);
  if (root->version_major() != kProgramVersionMajor)
    return invalidArgumentError("program schema version " +
                                std::to_string(root->version_major()) + "." +
                                std::to_string(root->version_minor()) +
                                " is not readable by this simulator (version " +
                                std::to_string(kProgramVersionMajor) + "." +
                                std::to_string(kProgramVersionMinor) + ")");
  program.reset(root->UnPack());
  return Status::ok();
}

Status loadProgram(const uint8_t *data, size_t size, const TargetConfig &target,
                   std::unique_ptr<Program> &program) {
  std::unique_ptr<Program> parsed;
  KILN_RETURN_IF_ERROR(parseProgram(data, size, parsed));
  KILN_RETURN_IF_ERROR(verifyProgram(*parsed, target));
  program = std::move(parsed);
  return Status::ok();
}

Status loadProgramFile(const std::string &path, const TargetConfig &target,
                       std::unique_ptr<Program> &program) {
  std::vector<uint8_t> bytes;
  KILN_RETURN_IF_ERROR(readFile(path, bytes));
  Status s = loadProgram(bytes.data(), bytes.size(), target, program);
  if (!s.isOk())
    return invalidArgumentError(path + ": " + s.message());
  return Status::ok();
}

} // namespace kiln::sim
