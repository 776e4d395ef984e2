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

namespace {

/// Builds a sim::Program from an `sa.program`, one op at a time.
class ProgramWriter {
public:
  explicit ProgramWriter(sim::Program &prog) : prog(prog) {}

  void addBuffer(BufferOp buf);
  void addSource(SourceOp src);
  LogicalResult addInstruction(Operation &op);
  void setLiveRanges();

private:
  uint32_t ref(Attribute a);
  std::unique_ptr<sim::fb::OperandT> operand(FlatSymbolRefAttr name,
                                             ViewAttr view) {
    return viewToOperand(view, ref(name));
  }
  LogicalResult setKind(Operation &op, sim::fb::InstructionT &in);
  void setVector(VectorOp v, sim::fb::InstructionT &in);

  sim::Program &prog;
  llvm::StringMap<uint32_t> index;
  llvm::DenseMap<Value, uint32_t> tokens;
  std::vector<std::pair<uint32_t, uint32_t>> live; // first, last use
  std::vector<bool> used;
};

} // namespace

/// The index of buffer `a`, recording a use of it by the next instruction.
uint32_t ProgramWriter::ref(Attribute a) {
  uint32_t id = index.lookup(cast<FlatSymbolRefAttr>(a).getValue());
  uint32_t now = uint32_t(prog.instructions.size());
  if (!used[id]) {
    used[id] = true;
    live[id].first = now;
  }
  live[id].second = now;
  return id;
}

void ProgramWriter::addBuffer(BufferOp buf) {
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
  index[s.name] = uint32_t(prog.buffers.size());
  prog.buffers.push_back(sim::makeBuffer(s));
  live.push_back({0, 0});
  used.push_back(false);
}

void ProgramWriter::addSource(SourceOp src) {
  auto s = std::make_unique<sim::fb::SourceOpT>();
  s->kind = src.getKind().str();
  s->layer = src.getLayer().str();
  prog.ops.push_back(std::move(s));
}

void ProgramWriter::setVector(VectorOp v, sim::fb::InstructionT &in) {
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
  in.kind.Set(std::move(t));
}

/// The instruction-specific part of `in`: a DMA, matmul, vector op or
/// all-reduce.
LogicalResult ProgramWriter::setKind(Operation &op, sim::fb::InstructionT &in) {
  if (auto d = dyn_cast<DmaOp>(op)) {
    sim::fb::DmaT t;
    t.src = operand(d.getSrcAttr(), d.getSrcView());
    t.dst = operand(d.getDstAttr(), d.getDstView());
    in.kind.Set(std::move(t));
  } else if (auto m = dyn_cast<MatmulOp>(op)) {
    sim::fb::MatMulT t;
    t.mxu = uint32_t(m.getMxu());
    t.lhs = operand(m.getLhsAttr(), m.getLhsView());
    t.rhs = operand(m.getRhsAttr(), m.getRhsView());
    t.out = operand(m.getOutAttr(), m.getOutView());
    t.accumulate = m.getAccumulate();
    in.kind.Set(std::move(t));
  } else if (auto v = dyn_cast<VectorOp>(op)) {
    setVector(v, in);
  } else if (auto a = dyn_cast<AllReduceOp>(op)) {
    sim::fb::AllReduceT t;
    for (Attribute name : a.getBuffers())
      t.buffers.push_back(ref(name));
    in.kind.Set(std::move(t));
  } else {
    return op.emitError("unexpected op in sa.program");
  }
  return success();
}

/// An instruction of the current source op, its tokens turned into the
/// indices of the instructions it waits for.
LogicalResult ProgramWriter::addInstruction(Operation &op) {
  auto in = std::make_unique<sim::fb::InstructionT>();
  in->op = prog.ops.empty() ? 0 : uint32_t(prog.ops.size() - 1);
  // An interleaved op's instructions name their source op
  // (kiln-convert-to-sa).
  if (auto source = op.getAttrOfType<IntegerAttr>("sa.op")) {
    if (source.getInt() < 0 || uint64_t(source.getInt()) >= prog.ops.size())
      return op.emitError("sa.op ") << source.getInt()
                                     << " names no earlier sa.source";
    in->op = uint32_t(source.getInt());
  }
  for (Value dep : op.getOperands()) {
    auto it = tokens.find(dep);
    if (it == tokens.end())
      return op.emitError("token does not come from an earlier instruction");
    in->deps.push_back(it->second);
  }
  if (failed(setKind(op, *in)))
    return failure();
  tokens[op.getResult(0)] = uint32_t(prog.instructions.size());
  prog.instructions.push_back(std::move(in));
  return success();
}

/// On-chip buffers live from their first to their last use.
void ProgramWriter::setLiveRanges() {
  for (size_t i = 0; i < prog.buffers.size(); ++i)
    if (prog.buffers[i]->space == sim::fb::Space::OnChip) {
      prog.buffers[i]->live_begin = live[i].first;
      prog.buffers[i]->live_end = live[i].second;
    }
}

LogicalResult translateToProgram(ProgramOp program,
                                 std::unique_ptr<sim::Program> &out) {
  auto prog = std::make_unique<sim::Program>();
  prog->name = program.getSymName().str();
  prog->batch = int64_t(program.getBatch());
  prog->target = sim::targetToProgram(targetOf(program));
  ProgramWriter writer(*prog);
  for (Operation &op : program.getBody().front()) {
    if (auto buf = dyn_cast<BufferOp>(op))
      writer.addBuffer(buf);
    else if (auto src = dyn_cast<SourceOp>(op))
      writer.addSource(src);
    else if (failed(writer.addInstruction(op)))
      return failure();
  }
  writer.setLiveRanges();
  out = std::move(prog);
  return success();
}

} // namespace kiln::sa
