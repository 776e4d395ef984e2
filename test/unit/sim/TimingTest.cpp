//===- TimingTest.cpp - DMA, overlap and dependencies in the timed model --===//

#include "kiln/sim/Timing.h"
#include "kiln/sim/Builder.h"
#include "kiln/sim/View.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace kiln::sim;

namespace {

struct Fixture {
  TargetConfig target;
  ProgramTSink sink{target, "t", 1};
  ProgramBuilder b{sink};
  Fixture() { b.beginSourceOp("op", "layer"); }
  uint32_t buffer(const char *name, fb::Space space, int64_t elems,
                  int64_t offset = 0) {
    BufferSpec s;
    s.name = name;
    s.space = space;
    s.shape = {elems};
    s.offset = offset;
    return b.addBuffer(s);
  }
  OperandSpec all(uint32_t buf, int64_t elems) {
    return OperandSpec::matrix(buf, 0, 1, elems, elems);
  }
  TimingResult run() {
    b.finish();
    auto p = sink.take();
    kiln::Status s = verifyProgram(*p, target);
    EXPECT_TRUE(s.isOk()) << s.message();
    return simulateTiming(*p, target);
  }
};

} // namespace

TEST(Timing, DmaCostsOverheadBandwidthAndLatency) {
  Fixture f;
  int64_t n = 1 << 20; // 4 MiB of f32
  uint32_t h = f.buffer("h", fb::Space::HBM, n),
           v = f.buffer("v", fb::Space::OnChip, n);
  f.b.dma(f.all(h, n), f.all(v, n));
  TimingResult r = f.run();
  uint64_t transfer =
      uint64_t(std::ceil(4.0 * n / f.target.hbmBytesPerCycle()));
  EXPECT_EQ(r.cycles, f.target.dmaOverhead + transfer + f.target.dmaLatency);
  EXPECT_EQ(r.hbmBytesRead, uint64_t(4 * n));
}

TEST(Timing, LoadsAndStoresShareTheHbmChannel) {
  Fixture f;
  int64_t n = 1 << 18;
  uint32_t h1 = f.buffer("h1", fb::Space::HBM, n),
           h2 = f.buffer("h2", fb::Space::HBM, n);
  uint32_t v1 = f.buffer("v1", fb::Space::OnChip, n, 0),
           v2 = f.buffer("v2", fb::Space::OnChip, n, 4 * n);
  f.b.dma(f.all(h1, n), f.all(v1, n)); // load
  f.b.dma(f.all(v2, n), f.all(h2, n)); // independent store
  TimingResult r = f.run();
  // Different engines, one channel: the second transfer waits for the first.
  EXPECT_EQ(r.instrs[1].start, r.instrs[0].start + r.instrs[0].busy);
}

TEST(Timing, ComputeOverlapsIndependentTransfersAndWaitsForItsData) {
  Fixture f;
  int64_t n = 1 << 18;
  uint32_t h = f.buffer("h", fb::Space::HBM, n);
  uint32_t v = f.buffer("v", fb::Space::OnChip, n, 0),
           w = f.buffer("w", fb::Space::OnChip, n, 4 * n);
  f.b.dma(f.all(h, n), f.all(v, n));
  // Independent of the DMA: starts at 0.
  f.b.vector(fb::VectorOp::Fill, {}, {fb::Region(w, 0)}, 1, n, {1.0});
  // Needs the DMA's data: waits for its end, and the wait is a stall.
  f.b.vector(fb::VectorOp::Relu, {fb::Region(v, 0)}, {fb::Region(v, 0)}, 1, n);
  TimingResult r = f.run();
  EXPECT_EQ(r.instrs[1].start, 0u);
  EXPECT_EQ(r.instrs[2].start, r.instrs[0].end);
  EXPECT_EQ(r.instrs[2].stall, r.instrs[0].end - r.instrs[1].busy);
  EXPECT_EQ(r.instrs[2].busy, uint64_t(n / f.target.vectorLanes));
}

TEST(Timing, ReusedOnChipBytesWaitForTheirPreviousOwner) {
  Fixture f;
  int64_t n = 1 << 16;
  uint32_t h = f.buffer("h", fb::Space::HBM, n);
  uint32_t a = f.buffer("a", fb::Space::OnChip, n, 0);
  f.b.vector(fb::VectorOp::Fill, {}, {fb::Region(a, 0)}, 1, n, {2.0});
  f.b.dma(f.all(a, n), f.all(h, n));
  // b reuses a's bytes: its DMA must not start before a's store has read them.
  uint32_t b = f.buffer("b", fb::Space::OnChip, n, 0);
  f.b.dma(f.all(h, n), f.all(b, n));
  TimingResult r = f.run();
  EXPECT_GE(r.instrs[2].start, r.instrs[1].end);
}

TEST(Timing, OnChipPeakFollowsLiveRanges) {
  Fixture f;
  uint32_t a = f.buffer("a", fb::Space::OnChip, 100, 0);
  uint32_t b = f.buffer("b", fb::Space::OnChip, 50, 400);
  f.b.vector(fb::VectorOp::Fill, {}, {fb::Region(a, 0)}, 1, 100, {1.0});
  f.b.vector(fb::VectorOp::Fill, {}, {fb::Region(b, 0)}, 1, 50, {1.0});
  uint32_t c = f.buffer("c", fb::Space::OnChip, 100, 0); // reuses a
  f.b.vector(fb::VectorOp::Copy, {fb::Region(b, 0)}, {fb::Region(c, 0)}, 1, 50);
  TimingResult r = f.run();
  EXPECT_EQ(r.onChipPeakBytes, 4 * 150);
  EXPECT_EQ(r.onChipHighWater, 4 * 150);
}

// A pass that reads an earlier pass's result waits for it to drain from
// the array whichever MXU ran that pass: on the same MXU it must not come
// out faster than on the other one (the unit streams on, the result does
// not leave earlier), and it waits for the producer's end.
TEST(Timing, DependentPassOnTheSameMxuWaitsForTheResultToDrain) {
  auto chain = [](uint32_t secondMxu) {
    Fixture f;
    int64_t m = 64, k = 128, n = 128;
    uint32_t x = f.buffer("x", fb::Space::OnChip, m * k, 0),
             w0 = f.buffer("w0", fb::Space::OnChip, k * n, 4 * m * k),
             w1 = f.buffer("w1", fb::Space::OnChip, n * n, 4 * (m * k + k * n)),
             a = f.buffer("a", fb::Space::OnChip, m * n,
                          4 * (m * k + k * n + n * n)),
             c = f.buffer("c", fb::Space::OnChip, m * n,
                          4 * (m * k + k * n + n * n + m * n));
    f.b.vector(fb::VectorOp::Fill, {}, {fb::Region(x, 0)}, 1, m * k, {1.0});
    f.b.vector(fb::VectorOp::Fill, {}, {fb::Region(w0, 0)}, 1, k * n, {1.0});
    f.b.vector(fb::VectorOp::Fill, {}, {fb::Region(w1, 0)}, 1, n * n, {1.0});
    f.b.matmul(0, OperandSpec::matrix(x, 0, m, k, k),
               OperandSpec::matrix(w0, 0, k, n, n),
               OperandSpec::matrix(a, 0, m, n, n), false);
    // a is the streamed operand of the second pass.
    f.b.matmul(secondMxu, OperandSpec::matrix(a, 0, m, n, n),
               OperandSpec::matrix(w1, 0, n, n, n),
               OperandSpec::matrix(c, 0, m, n, n), false);
    return f.run();
  };
  TimingResult same = chain(0), other = chain(1);
  EXPECT_GE(same.instrs[4].end, other.instrs[4].end);
  EXPECT_GE(same.instrs[4].start, same.instrs[3].end);
  EXPECT_EQ(same.cycles, other.cycles);
}

// The closed-form count of in-bounds elements (used for DMA traffic) agrees
// with decoding the view, for strided, negative and out-of-range mappings.
TEST(Timing, InBoundsCountsMatchTheDecodedView) {
  int checked = 0;
  for (int64_t offset : {-7, -1, 0, 2, 9})
    for (int64_t coef : {-3, -1, 1, 2, 5})
      for (int64_t bound : {1, 4, 13}) {
        OperandSpec s;
        s.rows = {3, 6};
        s.cols = {7};
        s.coords = {{100, offset, bound, {0, coef}, {0}},
                    {1, offset / 2, bound + 3, {0, 0}, {coef}},
                    {1000, 1, 3, {1, 0}, {0}}};
        auto op = s.build();
        View v(*op);
        int64_t brute = 0;
        for (int64_t i = 0; i < v.rows(); ++i)
          for (int64_t j = 0; j < v.cols(); ++j)
            brute += v.inBounds(i, j);
        EXPECT_EQ(countInBounds(*op), brute)
            << "offset " << offset << " coef " << coef << " bound " << bound;
        ++checked;
      }
  EXPECT_EQ(checked, 75);
}

// The vector-unit ops of newer CNNs take ceil(work / lanes) cycles: one
// multiply-add per window element and channel for a depthwise convolution,
// ~40 integer operations per element for dropout's Philox draws, four
// passes for the smooth activations and two for the clipped ones, one per
// operand read over the broadcast shape.
TEST(Timing, NewerCnnVectorOpsCostTheirWork) {
  Fixture f;
  uint32_t a = f.buffer("a", fb::Space::OnChip, 1 << 16, 0),
           b = f.buffer("b", fb::Space::OnChip, 1 << 16, 1 << 18),
           c = f.buffer("c", fb::Space::OnChip, 1 << 16, 1 << 19);
  using Op = fb::VectorOp;
  // 4 images of 16x16x32, a 3x3/1 filter with padding 1: 16x16 outputs.
  f.b.vector(Op::DepthwiseConv, {fb::Region(a, 0), fb::Region(b, 0)},
             {fb::Region(c, 0)}, 0, 0, {},
             {4, 16, 16, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1});
  f.b.vector(Op::Dropout, {fb::Region(a, 0), fb::Region(b, 0)},
             {fb::Region(c, 0)}, 64, 128, {0.5}, {0, 0, 0});
  f.b.vector(Op::Activation, {fb::Region(a, 0)}, {fb::Region(c, 0)}, 64, 128,
             {}, {1});
  f.b.vector(Op::Activation, {fb::Region(a, 0)}, {fb::Region(c, 0)}, 64, 128,
             {}, {2});
  // Squeeze-and-excitation's mul: [4, 16, 16, 32] x [4, 1, 1, 32].
  f.b.vector(Op::BroadcastBinary, {fb::Region(a, 0), fb::Region(b, 0)},
             {fb::Region(c, 0)}, 0, 0, {},
             {2, 4, 4, 16, 16, 32, 4, 16, 16, 32, 4, 1, 1, 32});
  TimingResult r = f.run();
  uint64_t lanes = f.target.vectorLanes;
  EXPECT_EQ(r.instrs[0].busy, (4u * 16 * 16 * 32 * 9 + lanes - 1) / lanes);
  EXPECT_EQ(r.instrs[1].busy, 40u * 64 * 128 / lanes);
  EXPECT_EQ(r.instrs[2].busy, 4u * 64 * 128 / lanes);
  EXPECT_EQ(r.instrs[3].busy, 2u * 64 * 128 / lanes);
  EXPECT_EQ(r.instrs[4].busy, 2u * 4 * 16 * 16 * 32 / lanes);
}

// Dependencies through HBM are per range: a load of the half of a buffer
// that the first store wrote waits for that store only, so it starts while
// the second store is still in flight; a load that overlaps both waits for
// both.
TEST(Timing, LoadsWaitForTheStoresOfTheElementsTheyRead) {
  Fixture f;
  int64_t n = 1 << 12;
  uint32_t h = f.buffer("h", fb::Space::HBM, 2 * n);
  uint32_t v = f.buffer("v", fb::Space::OnChip, 2 * n, 0),
           u = f.buffer("u", fb::Space::OnChip, n, 8 * n),
           w = f.buffer("w", fb::Space::OnChip, n, 12 * n);
  f.b.dma(OperandSpec::matrix(v, 0, 1, n, n), OperandSpec::matrix(h, 0, 1, n, n));
  f.b.dma(OperandSpec::matrix(v, n, 1, n, n), OperandSpec::matrix(h, n, 1, n, n));
  f.b.dma(OperandSpec::matrix(h, 0, 1, n, n), OperandSpec::matrix(u, 0, 1, n, n));
  f.b.dma(OperandSpec::matrix(h, n / 2, 1, n, n),
          OperandSpec::matrix(w, 0, 1, n, n));
  f.b.finish();
  auto p = f.sink.take();
  ASSERT_TRUE(verifyProgram(*p, f.target).isOk());
  EXPECT_EQ(p->instructions[2]->deps, std::vector<uint32_t>({0}));
  EXPECT_EQ(p->instructions[3]->deps, std::vector<uint32_t>({1}));
  TimingResult r = simulateTiming(*p, f.target);
  EXPECT_EQ(r.instrs[2].start, r.instrs[0].end);
  EXPECT_LT(r.instrs[2].start, r.instrs[1].end);
  EXPECT_GE(r.instrs[3].start, r.instrs[1].end);
}
