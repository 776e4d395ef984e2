//===- DropoutTest.cpp - Philox4x32-10 and kiln.dropout's kernel ---------===//
//
// Part of Kiln. The generator against Random123's published known answers,
// the mask rule of kiln/ref/philox.h against its statement, the fraction
// dropped over a large tensor, and the gradient (the same map on dy) by
// finite differences with the mask fixed by the seed, step and stream.
//
//===----------------------------------------------------------------------===//

#include "GradCheck.h"

#include "kiln/ref/dropout.h"
#include "kiln/ref/philox.h"

#include "gtest/gtest-spi.h"
#include "gtest/gtest.h"

#include <cmath>

namespace kiln::ref {
namespace {

using test::dot;
using test::expectGradient;
using test::randomTensor;
using test::smooth;

using Words = std::array<uint32_t, 4>;

/// std::array's == is constexpr only from C++20.
constexpr bool same(const Words &a, const Words &b) {
  return a[0] == b[0] && a[1] == b[1] && a[2] == b[2] && a[3] == b[3];
}

// Random123's kat_vectors, the three philox4x32 10 lines (counter, key,
// expected). Checked at compile time too: the lowering folds key schedules
// with the same constexpr function.
static_assert(same(philox4x32_10({0, 0, 0, 0}, {0, 0}),
                   {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
static_assert(same(philox4x32_10({0xffffffff, 0xffffffff, 0xffffffff,
                                  0xffffffff},
                                 {0xffffffff, 0xffffffff}),
                   {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
static_assert(same(philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e,
                                  0x03707344},
                                 {0xa4093822, 0x299f31d0}),
                   {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));

TEST(PhiloxTest, MatchesRandom123KnownAnswers) {
  // The same vectors at run time (a constexpr evaluator bug would not show
  // in the static_asserts alone).
  volatile uint32_t zero = 0;
  EXPECT_EQ(philox4x32_10({zero, 0, 0, 0}, {0, 0}),
            (Words{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(philox4x32_10({0x243f6a88 + zero, 0x85a308d3, 0x13198a2e,
                           0x03707344},
                          {0xa4093822, 0x299f31d0}),
            (Words{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(PhiloxTest, DropoutCountersFollowTheRule) {
  EXPECT_EQ(dropoutKey(0x0123456789abcdefULL),
            (std::array<uint32_t, 2>{0x89abcdef, 0x01234567}));
  // Element index in words 0-1, step modulo 2^32 in word 2, stream in 3.
  EXPECT_EQ(dropoutCounter(0x100000002ULL, 0x500000007ULL, 9),
            (Words{2, 1, 7, 9}));
  EXPECT_EQ(dropoutThreshold(0.0), 0u);
  EXPECT_EQ(dropoutThreshold(0.5), 0x80000000u);
  EXPECT_EQ(dropoutThreshold(0.25), 0x40000000u);
  EXPECT_EQ(dropoutThreshold(std::nextafter(1.0, 0.0)), 0xffffffffu);
  EXPECT_EQ(dropoutScale(0.5), 2.0f);
  EXPECT_EQ(dropoutScale(0.2), static_cast<float>(1.0 / 0.8));
}

Tensor ones(const Shape &shape) {
  Tensor t(shape);
  for (float &v : t.data)
    v = 1.0f;
  return t;
}

TEST(DropoutTest, KeptElementsAreScaledOthersZero) {
  std::mt19937 rng(3);
  Tensor x = randomTensor({4, 5, 6}, rng);
  DropoutAttrs attrs{0.3, 11, 4, 2};
  Tensor y = dropout(x, attrs);
  uint32_t threshold = dropoutThreshold(0.3);
  for (int64_t i = 0; i < x.size(); ++i) {
    bool keep = philox4x32_10(dropoutCounter(i, 4, 2), dropoutKey(11))[0] >=
                threshold;
    EXPECT_EQ(y[i], keep ? x[i] * static_cast<float>(1.0 / 0.7) : 0.0f) << i;
  }
}

TEST(DropoutTest, MaskDependsOnSeedStepAndStreamOnly) {
  Tensor x = ones({64, 33});
  DropoutAttrs base{0.5, 1, 7, 0};
  Tensor y = dropout(x, base);
  // Deterministic: the same counters draw the same mask.
  EXPECT_EQ(dropout(x, base).data, y.data);
  // The step enters modulo 2^32.
  DropoutAttrs wrapped = base;
  wrapped.step += uint64_t(1) << 32;
  EXPECT_EQ(dropout(x, wrapped).data, y.data);
  for (DropoutAttrs other : {DropoutAttrs{0.5, 2, 7, 0},
                             DropoutAttrs{0.5, 1, 8, 0},
                             DropoutAttrs{0.5, 1, 7, 1}})
    EXPECT_NE(dropout(x, other).data, y.data);
}

TEST(DropoutTest, RatioZeroKeepsEverything) {
  std::mt19937 rng(5);
  Tensor x = randomTensor({3, 7}, rng);
  EXPECT_EQ(dropout(x, DropoutAttrs{0.0, 0, 0, 0}).data, x.data);
}

/// The fraction dropped over 2^20 elements is within 5 standard deviations
/// (sqrt(r (1 - r) / n), 2.4e-3 at r = 0.5) of the ratio, for several
/// ratios, steps and streams; so is the mean of the output (1 in
/// expectation: inverted dropout).
TEST(DropoutTest, FractionDroppedMatchesTheRatio) {
  const int64_t n = int64_t(1) << 20;
  Tensor x = ones({n});
  for (double ratio : {0.1, 0.2, 0.5, 0.9})
    for (uint64_t step : {0, 1, 1000})
      for (uint32_t stream : {0u, 3u}) {
        Tensor y = dropout(x, DropoutAttrs{ratio, 42, step, stream});
        int64_t dropped = 0;
        double sum = 0.0;
        for (float v : y.data) {
          dropped += v == 0.0f;
          sum += v;
        }
        double sigma = std::sqrt(ratio * (1.0 - ratio) / double(n));
        EXPECT_NEAR(double(dropped) / double(n), ratio, 5.0 * sigma)
            << "ratio " << ratio << " step " << step << " stream " << stream;
        EXPECT_NEAR(sum / double(n), 1.0, 5.0 * sigma / (1.0 - ratio))
            << "ratio " << ratio << " step " << step << " stream " << stream;
      }
}

/// Neighbouring elements and consecutive steps are not correlated: the
/// masks of steps s and s + 1 agree on r^2 + (1 - r)^2 of the elements.
TEST(DropoutTest, ConsecutiveStepsAreIndependent) {
  const int64_t n = int64_t(1) << 18;
  Tensor x = ones({n});
  Tensor a = dropout(x, DropoutAttrs{0.5, 0, 10, 0});
  Tensor b = dropout(x, DropoutAttrs{0.5, 0, 11, 0});
  int64_t same = 0, neighbours = 0;
  for (int64_t i = 0; i < n; ++i) {
    same += (a[i] == 0.0f) == (b[i] == 0.0f);
    if (i > 0)
      neighbours += (a[i] == 0.0f) == (a[i - 1] == 0.0f);
  }
  double sigma = std::sqrt(0.25 / double(n));
  EXPECT_NEAR(double(same) / double(n), 0.5, 5.0 * sigma);
  EXPECT_NEAR(double(neighbours) / double(n - 1), 0.5, 5.0 * sigma);
}

/// The gradient of dot(r, dropout(x)) with respect to x is dropout(r) with
/// the same counters; finite differences agree (the mask is fixed by the
/// counters, so the objective is linear in x).
TEST(DropoutGradTest, GradientIsTheSameDropoutOfDy) {
  std::mt19937 rng(7);
  Tensor x = randomTensor({2, 3, 4, 5}, rng);
  Tensor r = randomTensor(x.shape, rng);
  DropoutAttrs attrs{0.4, 5, 12, 1};
  auto loss = smooth([&] { return dot(r, dropout(x, attrs)); });
  expectGradient("dx", x, dropout(r, attrs), loss, 1e-3);
}

/// The check fails when the backward draws another mask (another step).
TEST(DropoutGradTest, AnotherMaskIsCaught) {
  std::mt19937 rng(7);
  Tensor x = randomTensor({2, 3, 4, 5}, rng);
  Tensor r = randomTensor(x.shape, rng);
  DropoutAttrs attrs{0.4, 5, 12, 1};
  DropoutAttrs later = attrs;
  later.step = 13;
  auto loss = smooth([&] { return dot(r, dropout(x, attrs)); });
  EXPECT_NONFATAL_FAILURE(
      expectGradient("dx", x, dropout(r, later), loss, 1e-3), "dx");
}

TEST(DropoutTest, RatioOutsideTheRangeIsAnError) {
  EXPECT_FALSE(checkDropout(DropoutAttrs{1.0, 0, 0, 0}).isOk());
  EXPECT_FALSE(checkDropout(DropoutAttrs{-0.1, 0, 0, 0}).isOk());
  EXPECT_TRUE(checkDropout(DropoutAttrs{0.99, 0, 0, 0}).isOk());
}

} // namespace
} // namespace kiln::ref
