//===- GemmTest.cpp - The array's numerics and its timing model -----------===//

#include "kiln/sim/Gemm.h"
#include "kiln/ref/bf16.h"
#include "kiln/ref/init.h"
#include "kiln/sim/Simulator.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace kiln::sim;

namespace {

std::unique_ptr<Simulator> gemm(int64_t m, int64_t k, int64_t n,
                                GemmOptions options = {},
                                TargetConfig target = {}) {
  std::unique_ptr<Program> program;
  kiln::Status s = buildGemmProgram(target, m, k, n, options, program);
  EXPECT_TRUE(s.isOk()) << s.message();
  std::unique_ptr<Simulator> sim;
  s = Simulator::create(std::move(program), target, sim);
  EXPECT_TRUE(s.isOk()) << s.message();
  return sim;
}

std::vector<float> randomValues(int64_t n, const char *name) {
  kiln::ref::RandomStream r(7, name);
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[size_t(i)] = float(r.normal(uint64_t(i)));
  return v;
}

/// C [M, N], read from HBM or assembled from the per-tile accumulators.
std::vector<float> result(Simulator &sim, int64_t m, int64_t n, bool hbm) {
  std::vector<float> c;
  if (hbm) {
    EXPECT_TRUE(sim.read("c", c).isOk());
    return c;
  }
  c.resize(size_t(m * n));
  int64_t cols = sim.target().arrayCols;
  for (int64_t t = 0; t * cols < n; ++t) {
    std::vector<float> tile;
    EXPECT_TRUE(sim.read("c." + std::to_string(t), tile).isOk());
    int64_t nt = std::min(cols, n - t * cols);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < nt; ++j)
        c[size_t(i * n + t * cols + j)] = tile[size_t(i * nt + j)];
  }
  return c;
}

} // namespace

// The array rounds operands to bf16 and accumulates exact products in fp32:
// compare with a double-precision product of the bf16-rounded operands.
TEST(Gemm, FunctionalMatchesBf16ProductsWithFp32Accumulation) {
  for (auto [m, k, n] :
       {std::array<int64_t, 3>{5, 7, 3}, {130, 300, 260}, {64, 128, 128}}) {
    for (bool hbm : {false, true}) {
      GemmOptions o;
      o.fromHbm = hbm;
      o.mxus = 2;
      auto sim = gemm(m, k, n, o);
      std::vector<float> a = randomValues(m * k, "a"),
                         b = randomValues(k * n, "b");
      ASSERT_TRUE(sim->setInput("a", a).isOk());
      ASSERT_TRUE(sim->setInput("b", b).isOk());
      ASSERT_TRUE(sim->runStep().isOk());
      std::vector<float> c = result(*sim, m, n, hbm);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double exact = 0, magnitude = 0;
          for (int64_t p = 0; p < k; ++p) {
            double x = kiln::ref::roundToBf16(a[size_t(i * k + p)]) *
                       double(kiln::ref::roundToBf16(b[size_t(p * n + j)]));
            exact += x;
            magnitude += std::fabs(x);
          }
          // fp32 accumulation of k terms: at most ~k ulps of the magnitude.
          EXPECT_NEAR(c[size_t(i * n + j)], exact, 1e-6 * magnitude * k + 1e-30)
              << m << "x" << k << "x" << n << " at " << i << "," << j;
        }
    }
  }
}

TEST(Gemm, RoundsOperandsLikeTheHardware) {
  auto sim = gemm(1, 1, 1);
  // 1 + 2^-8 is halfway between bf16 neighbours 1 and 1 + 2^-7: ties to even
  // gives 1; 1 + 3*2^-9 rounds up.
  ASSERT_TRUE(sim->setInput("a", {1.0f + 1.0f / 256}).isOk());
  ASSERT_TRUE(sim->setInput("b", {1.0f + 3.0f / 512}).isOk());
  ASSERT_TRUE(sim->runStep().isOk());
  std::vector<float> c = result(*sim, 1, 1, false);
  EXPECT_EQ(c[0], 1.0f * (1.0f + 1.0f / 128));
}

// The timed executor reproduces the analytical model (Timing.h) exactly for
// every shape: fill, drain, folds of K over the rows and N over the columns,
// and partial tiles.
TEST(Gemm, CyclesFollowTheAnalyticalModel) {
  TargetConfig t;
  for (int64_t m : {1, 7, 64, 127, 128, 129, 500, 2048})
    for (int64_t k : {1, 3, 64, 128, 129, 300, 512})
      for (int64_t n : {1, 16, 128, 129, 384}) {
        auto sim = gemm(m, k, n, {}, t);
        EXPECT_EQ(sim->timing().cycles, gemmModelCycles(m, k, n, t))
            << m << "x" << k << "x" << n;
      }
}

TEST(Gemm, ModelClosedFormForTallShapes) {
  TargetConfig t;
  // M >= R: T*M + k1 + R + C - 2.
  EXPECT_EQ(gemmModelCycles(1000, 256, 256, t), 4u * 1000 + 128 + 254);
  // A single small tile: load k, stream m, fill and drain.
  EXPECT_EQ(gemmModelCycles(10, 20, 30, t), 20u + 10 + 254);
  // Weight loads longer than the streams are exposed: m = 16 < k = 128.
  EXPECT_EQ(gemmModelCycles(16, 256, 128, t), 128u + 128 + 16 + 254);
}

TEST(Gemm, LargeAlignedShapesUseTheArrayFully) {
  TargetConfig t;
  GemmOptions o;
  o.mxus = 2;
  auto sim = gemm(2048, 1024, 1024, o, t);
  Report r = sim->report();
  EXPECT_GT(r.mxuUtilization, 0.99);
  EXPECT_GT(r.mxuBusyUtilization, 0.99);
  // Misaligned shapes waste the edge tiles.
  auto odd = gemm(2048, 1024 + 1, 1024 + 1, o, t);
  EXPECT_LT(odd->report().mxuUtilization, 0.90);
  // Short streams cannot hide the weight loads.
  auto flat = gemm(32, 1024, 1024, o, t);
  EXPECT_LT(flat->report().mxuUtilization, 0.25);
}

TEST(Gemm, FromHbmAddsTheTransfers) {
  TargetConfig t;
  GemmOptions o;
  o.fromHbm = true;
  auto sim = gemm(512, 512, 512, o, t);
  const TimingResult &r = sim->timing();
  EXPECT_EQ(r.hbmBytesRead, uint64_t(2 * 512 * 512 * 2));
  EXPECT_EQ(r.hbmBytesWritten, uint64_t(512 * 512 * 4));
  EXPECT_GT(r.cycles, gemmModelCycles(512, 512, 512, t));
}
