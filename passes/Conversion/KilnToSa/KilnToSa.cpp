//===- KilnToSa.cpp - kiln-convert-to-sa ----------------------------------===//
//
// The pass is thin: it builds the planner's graph of the training step
// (BuildGraph.cpp), runs the planner (Planner.h) with a sink that creates
// one `sa` op per buffer and instruction, and replaces the module's
// contents with the resulting `sa.program`.
//
//===----------------------------------------------------------------------===//

#include "KilnToSa.h"
#include "ProgramEnums.h"

#include "dialects/Sa/IR/SaOps.h"
#include "passes/Fusion/Fuse.h"
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_KILNCONVERTTOSA
#include "passes/Passes.h.inc"
} // namespace kiln

namespace kiln::sa {

namespace {

ViewAttr toView(MLIRContext *ctx, const sim::fb::OperandT &op) {
  SmallVector<int64_t> strides, offsets, bounds, coefs;
  for (const auto &q : op.coords) {
    strides.push_back(q->stride);
    offsets.push_back(q->offset);
    bounds.push_back(q->bound);
    for (size_t d = 0; d < op.row_counts.size(); ++d)
      coefs.push_back(d < q->row_coef.size() ? q->row_coef[d] : 0);
    for (size_t e = 0; e < op.col_counts.size(); ++e)
      coefs.push_back(e < q->col_coef.size() ? q->col_coef[e] : 0);
  }
  return ViewAttr::get(ctx, op.row_counts, op.col_counts, op.base, strides,
                       offsets, bounds, coefs);
}

/// Creates the `sa` ops of a program as the planner emits it.
class SaSink : public sim::ProgramSink {
public:
  SaSink(ProgramOp program, Location loc)
      : ctx(program.getContext()), loc(loc),
        bufferBuilder(OpBuilder::atBlockBegin(&program.getBody().front())),
        instrBuilder(OpBuilder::atBlockEnd(&program.getBody().front())) {}

  void addBuffer(const sim::BufferSpec &s) override {
    // Buffers are declared ahead of the instructions, for readers.
    if (firstInstruction)
      bufferBuilder.setInsertionPoint(firstInstruction);
    auto type =
        RankedTensorType::get({int64_t(s.data.size())}, Float32Type::get(ctx));
    DenseElementsAttr value;
    if (!s.data.empty())
      value = DenseElementsAttr::get(type, ArrayRef<float>(s.data));
    auto op = BufferOp::create(
        bufferBuilder, loc, s.name, fromProgram(s.space), fromProgram(s.dtype), s.shape,
        s.space == sim::fb::Space::OnChip
            ? bufferBuilder.getI64IntegerAttr(s.offset)
            : IntegerAttr(),
        fromProgram(s.role),
        s.binding.empty() ? StringAttr()
                          : bufferBuilder.getStringAttr(s.binding),
        fromProgram(s.init),
        s.init == sim::fb::Init::Normal
            ? bufferBuilder.getF32FloatAttr(s.initStd)
            : FloatAttr(),
        value, fromProgram(s.hostLayout));
    (void)op;
    symbols.push_back(FlatSymbolRefAttr::get(ctx, s.name));
  }

  void addSourceOp(const std::string &kind, const std::string &layer) override {
    auto op = SourceOp::create(instrBuilder, loc, kind, layer);
    if (!firstInstruction)
      firstInstruction = op;
    ++sourceOps;
  }

  void addInstruction(std::unique_ptr<sim::fb::InstructionT> in) override {
    SmallVector<Value> deps;
    for (uint32_t d : in->deps)
      deps.push_back(tokens[d]);
    Type tokenType = TokenType::get(ctx);
    Value token;
    switch (in->kind.type) {
    case sim::fb::Kind::Dma: {
      auto *d = in->kind.AsDma();
      token =
          DmaOp::create(instrBuilder, loc, tokenType, symbols[d->src->buffer],
                        toView(ctx, *d->src), symbols[d->dst->buffer],
                        toView(ctx, *d->dst), deps);
      break;
    }
    case sim::fb::Kind::MatMul: {
      auto *m = in->kind.AsMatMul();
      token = MatmulOp::create(
          instrBuilder, loc, tokenType, instrBuilder.getI64IntegerAttr(m->mxu),
          symbols[m->lhs->buffer], toView(ctx, *m->lhs),
          symbols[m->rhs->buffer], toView(ctx, *m->rhs),
          symbols[m->out->buffer], toView(ctx, *m->out),
          m->accumulate ? instrBuilder.getUnitAttr() : UnitAttr(), deps);
      break;
    }
    case sim::fb::Kind::Vector: {
      auto *v = in->kind.AsVector();
      SmallVector<Attribute> srcs, dsts;
      SmallVector<int64_t> srcOff, dstOff;
      for (const auto &r : v->srcs) {
        srcs.push_back(symbols[r.buffer()]);
        srcOff.push_back(r.offset());
      }
      for (const auto &r : v->dsts) {
        dsts.push_back(symbols[r.buffer()]);
        dstOff.push_back(r.offset());
      }
      token =
          VectorOp::create(instrBuilder, loc, tokenType, fromProgram(v->op),
                           instrBuilder.getArrayAttr(srcs), srcOff,
                           instrBuilder.getArrayAttr(dsts), dstOff, v->rows,
                           v->channels, v->fattrs, v->iattrs, deps);
      break;
    }
    case sim::fb::Kind::AllReduce: {
      SmallVector<Attribute> bufs;
      for (uint32_t b : in->kind.AsAllReduce()->buffers)
        bufs.push_back(symbols[b]);
      token = AllReduceOp::create(instrBuilder, loc, tokenType,
                                  instrBuilder.getArrayAttr(bufs), deps);
      break;
    }
    default:
      break;
    }
    if (!firstInstruction && token)
      firstInstruction = token.getDefiningOp();
    // An instruction of an interleaved op (Planner: interleave) names its
    // source op; the others belong to the sa.source before them.
    if (token && sourceOps > 0 && in->op != sourceOps - 1)
      token.getDefiningOp()->setAttr(
          "sa.op", instrBuilder.getI64IntegerAttr(int64_t(in->op)));
    tokens.push_back(token);
  }

  // Live ranges follow from the uses; the exporter recomputes them.
  void setLiveRange(uint32_t, uint32_t, uint32_t) override {}

private:
  MLIRContext *ctx;
  Location loc;
  OpBuilder bufferBuilder, instrBuilder;
  std::vector<FlatSymbolRefAttr> symbols;
  std::vector<Value> tokens;
  Operation *firstInstruction = nullptr;
  uint32_t sourceOps = 0;
};

} // namespace

DictionaryAttr targetToAttr(MLIRContext *ctx, const sim::TargetConfig &t) {
  Builder b(ctx);
  SmallVector<NamedAttribute> fields = {
      b.getNamedAttr("name", b.getStringAttr(t.name)),
      b.getNamedAttr("mxu_count", b.getI64IntegerAttr(t.mxuCount)),
      b.getNamedAttr("array_rows", b.getI64IntegerAttr(t.arrayRows)),
      b.getNamedAttr("array_cols", b.getI64IntegerAttr(t.arrayCols)),
      b.getNamedAttr("clock_hz", b.getF64FloatAttr(t.clockHz)),
      b.getNamedAttr("onchip_bytes", b.getI64IntegerAttr(t.onChipBytes)),
      b.getNamedAttr("hbm_bytes_per_s", b.getF64FloatAttr(t.hbmBytesPerSecond)),
      b.getNamedAttr("vector_lanes", b.getI64IntegerAttr(t.vectorLanes)),
      b.getNamedAttr("vector_latency", b.getI64IntegerAttr(t.vectorLatency)),
      b.getNamedAttr("dma_latency", b.getI64IntegerAttr(t.dmaLatency)),
      b.getNamedAttr("dma_overhead", b.getI64IntegerAttr(t.dmaOverhead)),
      b.getNamedAttr("ici_bytes_per_s", b.getF64FloatAttr(t.iciBytesPerSecond)),
  };
  return b.getDictionaryAttr(fields);
}

LogicalResult convertToSa(ModuleOp module, const Graph &graph,
                          const sim::TargetConfig &target,
                          const PlanOptions &options) {
  MLIRContext *ctx = module.getContext();
  Location loc = module.getLoc();
  // The new contents replace the old.
  for (Operation &op :
       llvm::make_early_inc_range(module.getBody()->getOperations()))
    op.erase();
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  auto program = ProgramOp::create(b, loc, graph.name, graph.batch,
                                   targetToAttr(ctx, target));
  program.getBody().emplaceBlock();
  SaSink sink(program, loc);
  kiln::Status s = planProgram(graph, target, options, sink);
  if (s.isOk())
    return success();
  // The target's buffers are sized for its native bf16; an f32 program needs
  // twice the room, which is usually what a user has to change. A bf16
  // program keeps some f32 temporaries (statistics), so it is the absence of
  // bf16 activations that marks an f32 program.
  std::string hint;
  bool f32 = llvm::none_of(graph.tensors, [](const Tensor &t) {
    return t.kind == TensorKind::Temp && t.dtype == fb::DType::BF16;
  });
  if (f32 && s.message().find("staging memory") != std::string::npos)
    hint = "; the program computes in f32: compile with --precision=bf16, "
           "the target's native precision, which halves every buffer";
  return emitError(loc, "kiln-convert-to-sa: ") << s.message() << hint;
}

} // namespace kiln::sa

namespace kiln {
namespace {
struct ConvertToSaPass : impl::KilnConvertToSaBase<ConvertToSaPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto fn = module.lookupSymbol<func::FuncOp>(step);
    if (!fn) {
      module.emitError("kiln-convert-to-sa: no function '") << step << "'";
      return signalPassFailure();
    }
    sim::TargetConfig target;
    kiln::Status s = sim::getTargetProfile(profile, target);
    if (!s.isOk()) {
      module.emitError("kiln-convert-to-sa: ") << s.message();
      return signalPassFailure();
    }
    // The device's schedule: the vector unit works on convolution outputs
    // and activations while a tile of them is on chip. The fused ops are
    // --kiln-fuse's, decided on the kiln IR by its patterns, in its order
    // (relu and residual into the batch norm first, then the convolution,
    // then chains of what is left).
    if (fuse) {
      for (auto populate : {populateBatchNormReluFusionPatterns,
                            populateConvBatchNormTrainFusionPatternsAnyKernel,
                            populateElementwiseFusionPatterns}) {
        RewritePatternSet patterns(&getContext());
        populate(patterns);
        if (failed(applyPatternsGreedily(fn, std::move(patterns))))
          return signalPassFailure();
      }
    }
    sa::GraphOptions graphOptions;
    if (activationType == sa::ActivationStorage::BF16)
      graphOptions.activationType = sim::fb::DType::BF16;
    graphOptions.spaceToDepthStem = spaceToDepthStem;
    sa::Graph graph;
    if (failed(sa::buildGraph(module, fn, graphOptions, graph)))
      return signalPassFailure();
    if (fuse)
      sa::fuseBatchNormBackwardSums(graph);
    sa::PlanOptions planOptions;
    planOptions.residentFraction = residentFraction;
    if (!(residentFraction >= 0 && residentFraction < 1)) {
      module.emitError(
          "kiln-convert-to-sa: resident-fraction must be in [0, 1)");
      return signalPassFailure();
    }
    planOptions.allowResident = residentFraction > 0;
    planOptions.packTaps = packTaps;
    // Overlapping ops is part of the same schedule.
    planOptions.interleave = planOptions.pipeline = fuse;
    if (failed(sa::convertToSa(module, graph, target, planOptions)))
      signalPassFailure();
  }
};
} // namespace
} // namespace kiln
