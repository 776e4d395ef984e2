//===- PoolTest.cpp - Pooling values and gradients -------------------------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "GradCheck.h"

#include "kiln/ref/pool.h"
#include "kiln/ref/window.h"

#include "gtest/gtest.h"

#include <numeric>

namespace kiln::ref {
namespace {

using test::dot;
using test::expectGradient;
using test::randomTensor;
using test::smooth;

Pool2dAttrs makeAttrs(std::array<int64_t, 2> k, std::array<int64_t, 2> s,
                      std::array<int64_t, 4> p) {
  Pool2dAttrs a;
  a.window = k;
  a.strides = s;
  a.padding = p;
  return a;
}

Pool2dAttrs ceilAttrs(std::array<int64_t, 2> k, std::array<int64_t, 2> s,
                      std::array<int64_t, 4> p) {
  Pool2dAttrs a = makeAttrs(k, s, p);
  a.ceilMode = true;
  return a;
}

// PyTorch's pooling_output_shape: the quotient rounded up, less a last
// window that would start in the after-padding.
TEST(WindowTest, CeilMode) {
  // SqueezeNet 1.0's second pool: 54 to 27 (26 in floor mode).
  EXPECT_EQ(slidingWindowOutputSize(54, 0, 0, 3, 2, 1, true), 27);
  EXPECT_EQ(slidingWindowOutputSize(54, 0, 0, 3, 2, 1, false), 26);
  // Exact division: both modes agree.
  EXPECT_EQ(slidingWindowOutputSize(55, 0, 0, 3, 2, 1, true), 27);
  // 3 + 1 + 1 padded, window 2, stride 2: rounding up gives 3 windows, but
  // the third would start at 4, in the after-padding: 2.
  EXPECT_EQ(slidingWindowOutputSize(3, 1, 1, 2, 2, 1, true), 2);
  // A window may start in the before-padding: 4 + 1 padded, window 2,
  // stride 2: the third window starts at 4, inside, and overhangs by one.
  EXPECT_EQ(slidingWindowOutputSize(4, 1, 0, 2, 2, 1, true), 3);
  EXPECT_EQ(slidingWindowOutputSize(4, 1, 0, 2, 2, 1, false), 2);
  EXPECT_EQ(slidingWindowOutputSize(2, 0, 0, 3, 1, 1, true), 0);
}

TEST(MaxPoolTest, CeilModeKeepsTheOverhangingWindow) {
  // 3x3 of 1..9, window 2, stride 2: 2x2 in ceil mode, the last row and
  // column windows clipped to the input.
  Tensor x({1, 3, 3, 1}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  Tensor y = maxPool(x, ceilAttrs({2, 2}, {2, 2}, {0, 0, 0, 0}));
  EXPECT_EQ(y.shape, (Shape{1, 2, 2, 1}));
  EXPECT_EQ(y.data, (std::vector<float>{5, 6, 8, 9}));
  EXPECT_EQ(maxPool(x, makeAttrs({2, 2}, {2, 2}, {0, 0, 0, 0})).shape,
            (Shape{1, 1, 1, 1}));
}

TEST(AvgPoolTest, CeilModeDoesNotCountTheOverhang) {
  // torch.nn.functional.avg_pool2d(x, 2, 2, ceil_mode=True) of 1..9 (with
  // either count_include_pad: there is no explicit padding):
  // (1+2+4+5)/4, (3+6)/2, (7+8)/2, 9/1.
  Tensor x({1, 3, 3, 1}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  Pool2dAttrs a = ceilAttrs({2, 2}, {2, 2}, {0, 0, 0, 0});
  Tensor y = avgPool(x, a);
  EXPECT_EQ(y.data, (std::vector<float>{3, 4.5f, 7.5f, 9}));
  // Each input takes dy over its window's count.
  Tensor dx = avgPoolBackward(Tensor({1, 2, 2, 1}, {4, 2, 2, 1}), x.shape, a);
  EXPECT_EQ(dx.data, (std::vector<float>{1, 1, 1, 1, 1, 1, 1, 1, 1}));
}

TEST(MaxPoolTest, PaddingNeverWins) {
  // All inputs negative: a zero from the padding would win if padding took
  // part in the maximum.
  Tensor x({1, 2, 2, 1}, {-4, -3, -2, -1});
  Tensor y = maxPool(x, makeAttrs({3, 3}, {1, 1}, {1, 1, 1, 1}));
  EXPECT_EQ(y.shape, (Shape{1, 2, 2, 1}));
  EXPECT_EQ(y.data, (std::vector<float>{-1, -1, -1, -1}));
}

TEST(MaxPoolTest, BackwardRoutesToFirstMaximum) {
  // Window covers {5, 5, 1, 5}; the first 5 in scan order gets the gradient.
  Tensor x({1, 2, 2, 1}, {5, 5, 1, 5});
  Pool2dAttrs a = makeAttrs({2, 2}, {1, 1}, {0, 0, 0, 0});
  Tensor dx = maxPoolBackward(Tensor({1, 1, 1, 1}, {3.0f}), x, a);
  EXPECT_EQ(dx.data, (std::vector<float>{3, 0, 0, 0}));
}

TEST(MaxPoolTest, OverlappingWindowsAccumulate) {
  // 3x1 input with the maximum in the middle, window 2 stride 1: both
  // windows pick the middle element.
  Tensor x({1, 3, 1, 1}, {0, 9, 1});
  Pool2dAttrs a = makeAttrs({2, 1}, {1, 1}, {0, 0, 0, 0});
  Tensor dx = maxPoolBackward(Tensor({1, 2, 1, 1}, {1.0f, 2.0f}), x, a);
  EXPECT_EQ(dx.data, (std::vector<float>{0, 3, 0}));
}

TEST(AvgPoolTest, DivisorCountsOnlyRealElements) {
  // 2x2 input, 2x2 window, stride 1, padding 1 at the bottom and right
  // (TF 'SAME'): divisors 4, 2, 2, 1.
  Tensor x({1, 2, 2, 1}, {1, 2, 3, 4});
  Tensor y = avgPool(x, makeAttrs({2, 2}, {1, 1}, {0, 1, 0, 1}));
  EXPECT_EQ(y.data, (std::vector<float>{2.5f, 3.0f, 3.5f, 4.0f}));
}

TEST(AvgPoolTest, BackwardSpreadsOverRealElements) {
  Pool2dAttrs a = makeAttrs({2, 2}, {1, 1}, {0, 1, 0, 1});
  Tensor dx = avgPoolBackward(Tensor({1, 2, 2, 1}, {4, 2, 2, 1}), {1, 2, 2, 1}, a);
  // x(0,0) only in window (0,0): 4/4. x(0,1): (0,0) 4/4 + (0,1) 2/2 = 2.
  EXPECT_EQ(dx.data, (std::vector<float>{1, 2, 2, 1 + 1 + 1 + 1}));
}

TEST(GlobalAvgPoolTest, MeanOverSpace) {
  Tensor x({1, 2, 2, 2}, {1, 10, 2, 20, 3, 30, 4, 40});
  Tensor y = globalAvgPool(x);
  EXPECT_EQ(y.shape, (Shape{1, 2}));
  EXPECT_EQ(y.data, (std::vector<float>{2.5f, 25.0f}));
}

TEST(PoolTest, ShapeErrors) {
  Shape y;
  EXPECT_FALSE(
      inferPool2dShape({1, 4, 4, 1}, makeAttrs({2, 2}, {1, 1}, {2, 0, 0, 0}), y)
          .isOk());
  EXPECT_FALSE(
      inferPool2dShape({1, 4, 4, 1}, makeAttrs({2, 2}, {0, 1}, {0, 0, 0, 0}), y)
          .isOk());
  EXPECT_FALSE(
      inferPool2dShape({1, 1, 4, 1}, makeAttrs({2, 2}, {1, 1}, {0, 0, 0, 0}), y)
          .isOk());
  ASSERT_TRUE(inferPool2dShape({1, 112, 112, 64},
                               makeAttrs({3, 3}, {2, 2}, {0, 1, 0, 1}), y)
                  .isOk());
  EXPECT_EQ(y, (Shape{1, 56, 56, 64}));
}

/// Distinct, well separated values (spacing 0.1) in random order, so that a
/// perturbation of 1e-2 never changes which element is a window's maximum.
Tensor separatedValues(const Shape &shape, std::mt19937 &rng) {
  Tensor t(shape);
  std::vector<int> order(static_cast<size_t>(t.size()));
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  for (int64_t i = 0; i < t.size(); ++i)
    t[i] = 0.1f * static_cast<float>(order[static_cast<size_t>(i)]) - 2.0f;
  return t;
}

struct PoolCase {
  const char *name;
  Shape xShape;
  Pool2dAttrs attrs;
};

void PrintTo(const PoolCase &c, std::ostream *os) { *os << c.name; }

class PoolGradTest : public ::testing::TestWithParam<PoolCase> {};

TEST_P(PoolGradTest, MaxPoolMatchesFiniteDifferences) {
  const PoolCase &c = GetParam();
  std::mt19937 rng(11);
  Tensor x = separatedValues(c.xShape, rng);
  Tensor r = randomTensor(maxPool(x, c.attrs).shape, rng);
  auto loss = smooth([&] { return dot(r, maxPool(x, c.attrs)); });
  expectGradient("dx", x, maxPoolBackward(r, x, c.attrs), loss, 1e-2);
}

TEST_P(PoolGradTest, AvgPoolMatchesFiniteDifferences) {
  const PoolCase &c = GetParam();
  std::mt19937 rng(12);
  Tensor x = randomTensor(c.xShape, rng);
  Tensor r = randomTensor(avgPool(x, c.attrs).shape, rng);
  auto loss = smooth([&] { return dot(r, avgPool(x, c.attrs)); });
  expectGradient("dx", x, avgPoolBackward(r, c.xShape, c.attrs), loss, 0.1);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, PoolGradTest,
    ::testing::Values(
        PoolCase{"w2s2", {2, 4, 4, 2}, makeAttrs({2, 2}, {2, 2}, {0, 0, 0, 0})},
        PoolCase{"w3s2same", {1, 7, 7, 2}, makeAttrs({3, 3}, {2, 2}, {1, 1, 1, 1})},
        PoolCase{"w3s1pad", {1, 5, 4, 3}, makeAttrs({3, 3}, {1, 1}, {1, 1, 1, 1})},
        PoolCase{"asymmetric", {2, 6, 5, 1}, makeAttrs({3, 2}, {2, 1}, {0, 1, 1, 0})},
        PoolCase{"strideGtWindow", {1, 7, 7, 2}, makeAttrs({2, 2}, {3, 3}, {1, 0, 0, 1})},
        PoolCase{"ceil", {2, 8, 8, 2}, ceilAttrs({3, 3}, {2, 2}, {0, 0, 0, 0})},
        PoolCase{"ceilPadded", {1, 6, 5, 2}, ceilAttrs({2, 3}, {2, 2}, {1, 0, 1, 1})}),
    [](const ::testing::TestParamInfo<PoolCase> &info) {
      return std::string(info.param.name);
    });

TEST(GlobalAvgPoolGradTest, MatchesFiniteDifferences) {
  std::mt19937 rng(13);
  Tensor x = randomTensor({2, 3, 4, 5}, rng);
  Tensor r = randomTensor({2, 5}, rng);
  auto loss = smooth([&] { return dot(r, globalAvgPool(x)); });
  expectGradient("dx", x, globalAvgPoolBackward(r, x.shape), loss, 0.1);
}

} // namespace
} // namespace kiln::ref
