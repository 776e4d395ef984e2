//===- ProgramTest.cpp - The program format and its verifier --------------===//

#include "kiln/sim/Program.h"
#include "kiln/sim/Builder.h"
#include "kiln/sim/Gemm.h"

#include <gtest/gtest.h>

using namespace kiln::sim;

namespace {

std::unique_ptr<Program> smallGemm() {
  std::unique_ptr<Program> p;
  GemmOptions o;
  o.fromHbm = true;
  EXPECT_TRUE(buildGemmProgram(TargetConfig(), 64, 64, 64, o, p).isOk());
  return p;
}

std::string verifyError(const Program &p, TargetConfig t = {}) {
  kiln::Status s = verifyProgram(p, t);
  return s.isOk() ? "" : s.message();
}

bool contains(const std::string &s, const std::string &what) {
  return s.find(what) != std::string::npos;
}

/// A 4x8 f32 buffer on chip, what the vector-op tests lower into.
BufferSpec onChip4x8(std::string name) {
  BufferSpec s;
  s.name = std::move(name);
  s.space = fb::Space::OnChip;
  s.shape = {4, 8};
  return s;
}

} // namespace

TEST(Program, RoundTripsThroughFlatBuffers) {
  auto p = smallGemm();
  std::vector<uint8_t> bytes = serializeProgram(*p);
  std::unique_ptr<Program> q;
  kiln::Status s = loadProgram(bytes.data(), bytes.size(), TargetConfig(), q);
  ASSERT_TRUE(s.isOk()) << s.message();
  EXPECT_EQ(q->name, p->name);
  EXPECT_EQ(q->version_major, kProgramVersionMajor);
  ASSERT_EQ(q->instructions.size(), p->instructions.size());
  ASSERT_EQ(q->buffers.size(), p->buffers.size());
  EXPECT_EQ(serializeProgram(*q), bytes);
}

TEST(Program, RejectsForeignAndCorruptFiles) {
  std::vector<uint8_t> junk(64, 0x5a);
  std::unique_ptr<Program> q;
  kiln::Status s = loadProgram(junk.data(), junk.size(), TargetConfig(), q);
  EXPECT_TRUE(contains(s.message(), "file identifier"));
  std::vector<uint8_t> bytes = serializeProgram(*smallGemm());
  bytes.resize(bytes.size() / 2);
  s = loadProgram(bytes.data(), bytes.size(), TargetConfig(), q);
  EXPECT_TRUE(contains(s.message(), "FlatBuffers verification failed"))
      << s.message();
}

TEST(Program, RejectsAnotherMajorVersion) {
  auto p = smallGemm();
  p->version_major = kProgramVersionMajor + 1;
  std::vector<uint8_t> bytes = serializeProgram(*p);
  std::unique_ptr<Program> q;
  kiln::Status s = loadProgram(bytes.data(), bytes.size(), TargetConfig(), q);
  EXPECT_TRUE(contains(s.message(), "schema version 2.1 is not readable"))
      << s.message();
  // A newer minor version only adds fields: accepted.
  p->version_major = kProgramVersionMajor;
  p->version_minor = kProgramVersionMinor + 3;
  bytes = serializeProgram(*p);
  EXPECT_TRUE(
      loadProgram(bytes.data(), bytes.size(), TargetConfig(), q).isOk());
}

TEST(Program, VerifierChecksTileSizesAgainstTheTarget) {
  auto p = smallGemm();
  TargetConfig small;
  small.arrayRows = 32;
  EXPECT_TRUE(contains(verifyError(*p, small), "exceeds the 32x128 array"));
  small = TargetConfig();
  small.mxuCount = 1;
  p->instructions[2]->kind.AsMatMul()->mxu = 1;
  EXPECT_TRUE(contains(verifyError(*p, small), "uses MXU 1 of 1"));
}

TEST(Program, VerifierChecksOperandBounds) {
  auto p = smallGemm();
  p->instructions[0]->kind.AsDma()->dst->base = 10;
  EXPECT_TRUE(
      contains(verifyError(*p), "reaches elements [10, 4105] of 'b.vmem'"))
      << verifyError(*p);
}

TEST(Program, VerifierChecksDependencyOrder) {
  auto p = smallGemm();
  p->instructions[1]->deps = {1};
  EXPECT_TRUE(contains(verifyError(*p),
                       "waits for instruction 1, which is not earlier"));
}

TEST(Program, VerifierChecksDmaTypesAndSpaces) {
  auto p = smallGemm();
  p->buffers[3]->dtype = fb::DType::F32; // the HBM copy of a
  EXPECT_TRUE(contains(verifyError(*p), "would convert"));
  p = smallGemm();
  p->buffers[3]->space = fb::Space::OnChip;
  p->buffers[3]->offset = 1 << 22;
  p->buffers[3]->live_end = 3;
  EXPECT_TRUE(
      contains(verifyError(*p), "does not cross between HBM and on-chip"))
      << verifyError(*p);
}

TEST(Program, VerifierChecksOnChipCapacityAndOverlap) {
  auto p = smallGemm();
  p->buffers[0]->offset = (16 << 20) - 100;
  EXPECT_TRUE(contains(verifyError(*p), "of 16777216 bytes of on-chip memory"));
  p = smallGemm();
  p->buffers[1]->offset = 100; // overlaps a.vmem while both are live
  EXPECT_TRUE(contains(verifyError(*p),
                       "on-chip buffers 'a.vmem' and 'b.vmem' share memory"))
      << verifyError(*p);
  // Disjoint live ranges may share bytes.
  p->buffers[1]->live_begin = p->buffers[1]->live_end = 0;
  p->buffers[0]->live_begin = 1;
  EXPECT_TRUE(contains(verifyError(*p), "outside its live range"));
}

TEST(Program, VerifierChecksVectorOperands) {
  TargetConfig t;
  ProgramTSink sink(t, "v", 1);
  ProgramBuilder b(sink);
  b.beginSourceOp("relu", "x");
  BufferSpec s = onChip4x8("x");
  uint32_t x = b.addBuffer(s);
  b.vector(fb::VectorOp::Relu, {fb::Region(x, 0)}, {fb::Region(x, 0)}, 4, 8);
  b.vector(fb::VectorOp::Relu, {fb::Region(x, 8)}, {fb::Region(x, 0)}, 4, 8);
  b.finish();
  auto p = sink.take();
  EXPECT_TRUE(contains(verifyError(*p),
                       "instruction 1: relu operand 0 spans [8, 40) of 'x'"))
      << verifyError(*p);
  p->instructions.pop_back();
  p->buffers[0]->live_end = 0;
  p->instructions[0]->kind.AsVector()->srcs.clear();
  EXPECT_TRUE(
      contains(verifyError(*p), "relu takes 1 sources and 1 destinations"));
}

// A trial holds its buffers and source ops back from the sink: dropped, the
// builder is as before it (the next buffer takes the dropped one's id and
// the sink never saw it); kept, they reach the sink before the merged
// instructions.
TEST(Program, BuilderTrialsAreKeptOrDropped) {
  TargetConfig t;
  ProgramTSink sink(t, "trial", 1);
  ProgramBuilder b(sink);
  b.beginSourceOp("relu", "first");
  BufferSpec s = onChip4x8("x");
  uint32_t x = b.addBuffer(s);
  b.vector(fb::VectorOp::Relu, {fb::Region(x, 0)}, {fb::Region(x, 0)}, 4, 8);
  auto lowerSecond = [&](const std::string &name) {
    b.beginSourceOp("relu", "second");
    BufferSpec y = s;
    y.name = name;
    y.offset = 128;
    uint32_t id = b.addBuffer(y);
    b.beginCapture();
    b.vector(fb::VectorOp::Relu, {fb::Region(x, 0)}, {fb::Region(id, 0)}, 4,
             8);
    std::vector<ProgramBuilder::Capture> captures;
    captures.push_back(b.endCapture());
    return captures;
  };
  b.beginTrial();
  lowerSecond("dropped");
  b.endTrial(false);
  b.beginTrial();
  std::vector<ProgramBuilder::Capture> kept = lowerSecond("kept");
  b.endTrial(true);
  b.emitInterleaved(std::move(kept), t);
  b.finish();
  auto p = sink.take();
  ASSERT_EQ(p->buffers.size(), 2u);
  EXPECT_EQ(p->buffers[1]->name, "kept");
  ASSERT_EQ(p->ops.size(), 2u);
  ASSERT_EQ(p->instructions.size(), 2u);
  EXPECT_EQ(p->instructions[1]->op, 1u);
  EXPECT_EQ(p->instructions[1]->kind.AsVector()->dsts[0].buffer(), 1u);
  EXPECT_EQ(verifyError(*p, t), "");
}

// The estimate of steps one after the other: an instruction whose buffer
// reuses the on-chip bytes of an earlier step's buffer waits for that
// step's accesses to them; on other bytes it overlaps them.
TEST(Program, EstimateWaitsForReusedOnChipBytes) {
  TargetConfig t;
  for (bool reuse : {false, true}) {
    ProgramTSink sink(t, "estimate", 1);
    ProgramBuilder b(sink);
    BufferSpec in;
    in.name = "in";
    in.shape = {64, 128};
    uint32_t hbm = b.addBuffer(in);
    BufferSpec s = in;
    s.space = fb::Space::OnChip;
    s.name = "a";
    uint32_t a = b.addBuffer(s);
    s.name = "b";
    s.offset = reuse ? 0 : 64 * 128 * 4;
    uint32_t c = b.addBuffer(s);
    std::vector<std::vector<ProgramBuilder::Capture>> steps(2);
    b.beginCapture();
    b.vector(fb::VectorOp::Relu, {fb::Region(a, 0)}, {fb::Region(a, 0)}, 64,
             128);
    steps[0].push_back(b.endCapture());
    b.beginCapture();
    b.dma(OperandSpec::matrix(hbm, 0, 64, 128, 128),
          OperandSpec::matrix(c, 0, 64, 128, 128));
    steps[1].push_back(b.endCapture());
    std::vector<std::vector<ProgramBuilder::Capture>> first(1), second(1);
    uint64_t both = b.estimateCycles(steps, t);
    first[0] = std::move(steps[0]);
    second[0] = std::move(steps[1]);
    uint64_t one = b.estimateCycles(first, t),
             other = b.estimateCycles(second, t);
    if (reuse)
      EXPECT_EQ(both, one + other);
    else
      EXPECT_EQ(both, std::max(one, other));
  }
}
