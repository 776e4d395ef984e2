//===- SaToProgram.cpp - Serializing sa programs --------------------------===//

#include "compiler/Target/Systolic/SaToProgram.h"

#include "passes/Conversion/KilnToSa/ProgramEnums.h"

#include "kiln/sim/Builder.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

using namespace mlir;

namespace kiln::sa {

sim::TargetConfig targetOf(ProgramOp program) {
  sim::TargetConfig t;
  DictionaryAttr d = program.getTarget();
  auto f = [&](StringRef name, double dflt) {
    auto a = dyn_cast_or_null<FloatAttr>(d.get(name));
    return a ? a.getValueAsDouble() : dflt;
  };
  if (auto name = dyn_cast_or_null<StringAttr>(d.get("name")))
    t.name = name.str();
  t.mxuCount = uint32_t(program.getTargetInt("mxu_count"));
  t.arrayRows = uint32_t(program.getTargetInt("array_rows"));
  t.arrayCols = uint32_t(program.getTargetInt("array_cols"));
  t.onChipBytes = program.getTargetInt("onchip_bytes");
  t.vectorLanes = uint32_t(program.getTargetInt("vector_lanes"));
  t.vectorLatency = uint32_t(program.getTargetInt("vector_latency"));
  t.dmaLatency = uint32_t(program.getTargetInt("dma_latency"));
  t.dmaOverhead = uint32_t(program.getTargetInt("dma_overhead"));
  t.clockHz = f("clock_hz", t.clockHz);
  t.hbmBytesPerSecond = f("hbm_bytes_per_s", t.hbmBytesPerSecond);
  t.iciBytesPerSecond = f("ici_bytes_per_s", t.iciBytesPerSecond);
  return t;
}

LogicalResult translateToProgram(ProgramOp program,
                                 std::unique_ptr<sim::Program> &out) {
  auto prog = std::make_unique<sim::Program>();
  prog->name = program.getSymName().str();
  prog->batch = int64_t(program.getBatch());
  prog->target = sim::targetToProgram(targetOf(program));
  llvm::StringMap<uint32_t> index;
  llvm::DenseMap<Value, uint32_t> tokens;
  std::vector<std::pair<uint32_t, uint32_t>> live; // first, last use
  std::vector<bool> used;
  auto ref = [&](Attribute a) {
    uint32_t id = index.lookup(cast<FlatSymbolRefAttr>(a).getValue());
    uint32_t now = uint32_t(prog->instructions.size());
    if (!used[id]) {
      used[id] = true;
      live[id].first = now;
    }
    live[id].second = now;
    return id;
  };
  auto operand = [&](FlatSymbolRefAttr name, ViewAttr view) {
    return viewToOperand(view, ref(name));
  };
  for (Operation &op : program.getBody().front()) {
    if (auto buf = dyn_cast<BufferOp>(op)) {
      sim::BufferSpec s;
      s.name = buf.getSymName().str();
      s.dtype = toProgram(buf.getDtype());
      s.space = toProgram(buf.getSpace());
      s.role = toProgram(buf.getRole());
      s.shape.assign(buf.getShape().begin(), buf.getShape().end());
      s.offset = buf.getOffset() ? int64_t(*buf.getOffset()) : 0;
      if (buf.getBinding())
        s.binding = buf.getBinding()->str();
      s.init = toProgram(buf.getInit());
      s.initStd =
          buf.getInitStd() ? float(buf.getInitStdAttr().getValueAsDouble()) : 0;
      if (auto v = buf.getValueAttr())
        for (APFloat x : v.getValues<APFloat>())
          s.data.push_back(float(x.convertToDouble()));
      s.hostLayout = toProgram(buf.getHostLayout());
      index[s.name] = uint32_t(prog->buffers.size());
      prog->buffers.push_back(sim::makeBuffer(s));
      live.push_back({0, 0});
      used.push_back(false);
      continue;
    }
    if (auto src = dyn_cast<SourceOp>(op)) {
      auto s = std::make_unique<sim::fb::SourceOpT>();
      s->kind = src.getKind().str();
      s->layer = src.getLayer().str();
      prog->ops.push_back(std::move(s));
      continue;
    }
    auto in = std::make_unique<sim::fb::InstructionT>();
    in->op = prog->ops.empty() ? 0 : uint32_t(prog->ops.size() - 1);
    for (Value dep : op.getOperands()) {
      auto it = tokens.find(dep);
      if (it == tokens.end())
        return op.emitError("token does not come from an earlier instruction");
      in->deps.push_back(it->second);
    }
    if (auto d = dyn_cast<DmaOp>(op)) {
      sim::fb::DmaT t;
      t.src = operand(d.getSrcAttr(), d.getSrcView());
      t.dst = operand(d.getDstAttr(), d.getDstView());
      in->kind.Set(std::move(t));
    } else if (auto m = dyn_cast<MatmulOp>(op)) {
      sim::fb::MatMulT t;
      t.mxu = uint32_t(m.getMxu());
      t.lhs = operand(m.getLhsAttr(), m.getLhsView());
      t.rhs = operand(m.getRhsAttr(), m.getRhsView());
      t.out = operand(m.getOutAttr(), m.getOutView());
      t.accumulate = m.getAccumulate();
      in->kind.Set(std::move(t));
    } else if (auto v = dyn_cast<VectorOp>(op)) {
      sim::fb::VectorT t;
      t.op = toProgram(v.getKind());
      for (auto [name, off] : llvm::zip(v.getSrcs(), v.getSrcOffsets()))
        t.srcs.emplace_back(ref(name), off);
      for (auto [name, off] : llvm::zip(v.getDsts(), v.getDstOffsets()))
        t.dsts.emplace_back(ref(name), off);
      t.rows = int64_t(v.getRows());
      t.channels = int64_t(v.getChannels());
      t.fattrs.assign(v.getFattrs().begin(), v.getFattrs().end());
      t.iattrs.assign(v.getIattrs().begin(), v.getIattrs().end());
      in->kind.Set(std::move(t));
    } else if (auto a = dyn_cast<AllReduceOp>(op)) {
      sim::fb::AllReduceT t;
      for (Attribute name : a.getBuffers())
        t.buffers.push_back(ref(name));
      in->kind.Set(std::move(t));
    } else {
      return op.emitError("unexpected op in sa.program");
    }
    tokens[op.getResult(0)] = uint32_t(prog->instructions.size());
    prog->instructions.push_back(std::move(in));
  }
  for (size_t i = 0; i < prog->buffers.size(); ++i)
    if (prog->buffers[i]->space == sim::fb::Space::OnChip) {
      prog->buffers[i]->live_begin = live[i].first;
      prog->buffers[i]->live_end = live[i].second;
    }
  out = std::move(prog);
  return success();
}

} // namespace kiln::sa
