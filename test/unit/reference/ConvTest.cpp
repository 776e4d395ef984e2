//===- ConvTest.cpp - conv2d forward values and gradients -----------------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "GradCheck.h"

#include "kiln/ref/conv.h"

#include "gtest/gtest.h"

namespace kiln::ref {
namespace {

using test::dot;
using test::expectGradient;
using test::randomTensor;
using test::smooth;

Tensor iota(const Shape &shape, float start = 1.0f) {
  Tensor t(shape);
  for (int64_t i = 0; i < t.size(); ++i)
    t[i] = start + static_cast<float>(i);
  return t;
}

TEST(Conv2dTest, ValidWindowSums) {
  // x = [[1,2,3],[4,5,6],[7,8,9]], 2x2 filter of ones, stride 1, no padding.
  Tensor y = conv2d(iota({1, 3, 3, 1}), Tensor::filled({2, 2, 1, 1}, 1.0f), {});
  EXPECT_EQ(y.shape, (Shape{1, 2, 2, 1}));
  EXPECT_EQ(y.data, (std::vector<float>{12, 16, 24, 28}));
}

TEST(Conv2dTest, PaddingAndStride) {
  // Padding 1 on every side, stride 2: Hout = (3+1+1-2)/2+1 = 2. The window
  // at (0,0) sees only x(0,0); at (1,1) it sees x rows 1..2, cols 1..2.
  Conv2dAttrs attrs;
  attrs.strides = {2, 2};
  attrs.padding = {1, 1, 1, 1};
  Tensor y = conv2d(iota({1, 3, 3, 1}), Tensor::filled({2, 2, 1, 1}, 1.0f), attrs);
  EXPECT_EQ(y.shape, (Shape{1, 2, 2, 1}));
  EXPECT_EQ(y.data, (std::vector<float>{1, 2 + 3, 4 + 7, 5 + 6 + 8 + 9}));
}

TEST(Conv2dTest, AsymmetricPadding) {
  // Padding only at the bottom and the right (TF 'SAME' for an even kernel).
  Conv2dAttrs attrs;
  attrs.padding = {0, 1, 0, 1};
  Tensor y = conv2d(iota({1, 2, 2, 1}), Tensor::filled({2, 2, 1, 1}, 1.0f), attrs);
  EXPECT_EQ(y.shape, (Shape{1, 2, 2, 1}));
  EXPECT_EQ(y.data, (std::vector<float>{1 + 2 + 3 + 4, 2 + 4, 3 + 4, 4}));
}

TEST(Conv2dTest, Dilation) {
  // x(r,c) = 5r+c on a 5x5 grid; 2x2 ones dilated by 2 -> effective 3x3.
  Conv2dAttrs attrs;
  attrs.dilations = {2, 2};
  Tensor y = conv2d(iota({1, 5, 5, 1}, 0.0f), Tensor::filled({2, 2, 1, 1}, 1.0f), attrs);
  EXPECT_EQ(y.shape, (Shape{1, 3, 3, 1}));
  EXPECT_EQ(y.at(0, 0, 0, 0), 0 + 2 + 10 + 12);
  EXPECT_EQ(y.at(0, 2, 1, 0), 11 + 13 + 21 + 23);
}

TEST(Conv2dTest, HwioChannelLayout) {
  // y[co] = sum_ci x[ci] * w[0,0,ci,co] with w = [[1,2],[3,4]] (ci rows).
  Tensor y = conv2d(Tensor({1, 1, 1, 2}, {1, 2}),
                    Tensor({1, 1, 2, 2}, {1, 2, 3, 4}), {});
  EXPECT_EQ(y.data, (std::vector<float>{1 * 1 + 2 * 3, 1 * 2 + 2 * 4}));
}

TEST(Conv2dTest, OutputShapeFormula) {
  // ResNet stem: 224x224, 7x7/2, TF 'SAME' padding (2 top/left, 3 bottom/right).
  Conv2dAttrs attrs;
  attrs.strides = {2, 2};
  attrs.padding = {2, 3, 2, 3};
  Shape y;
  ASSERT_TRUE(
      inferConv2dShape({8, 224, 224, 3}, {7, 7, 3, 64}, attrs, y).isOk());
  EXPECT_EQ(y, (Shape{8, 112, 112, 64}));
  // Floor division: (10 + 0 + 0 - 2*(3-1) - 1)/3 + 1 = 5/3 + 1 = 2.
  attrs = {};
  attrs.strides = {3, 3};
  attrs.dilations = {2, 2};
  ASSERT_TRUE(inferConv2dShape({1, 10, 10, 1}, {3, 3, 1, 1}, attrs, y).isOk());
  EXPECT_EQ(y, (Shape{1, 2, 2, 1}));
}

TEST(Conv2dTest, ShapeErrors) {
  Shape y;
  Conv2dAttrs attrs;
  EXPECT_FALSE(inferConv2dShape({1, 4, 4, 3}, {3, 3, 2, 1}, attrs, y).isOk());
  EXPECT_FALSE(inferConv2dShape({1, 4, 4}, {3, 3, 4, 1}, attrs, y).isOk());
  EXPECT_FALSE(inferConv2dShape({1, 2, 2, 1}, {3, 3, 1, 1}, attrs, y).isOk());
  attrs.strides = {0, 1};
  Status s = inferConv2dShape({1, 4, 4, 1}, {3, 3, 1, 1}, attrs, y);
  EXPECT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("strides"), std::string::npos);
}

TEST(Conv2dTest, GroupedSumsItsOwnGroup) {
  // 4 input channels in 2 groups, 4 outputs (2 per group), 1x1 filter
  // [I=2, O=4] = [[1,2,3,4],[5,6,7,8]]: outputs 0,1 read inputs 0,1 and
  // outputs 2,3 read inputs 2,3.
  Conv2dAttrs attrs;
  attrs.groups = 2;
  Tensor y = conv2d(Tensor({1, 1, 1, 4}, {1, 10, 100, 1000}),
                    Tensor({1, 1, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}), attrs);
  EXPECT_EQ(y.shape, (Shape{1, 1, 1, 4}));
  EXPECT_EQ(y.data, (std::vector<float>{1 * 1 + 10 * 5, 1 * 2 + 10 * 6,
                                        100 * 3 + 1000 * 7,
                                        100 * 4 + 1000 * 8}));
}

TEST(Conv2dTest, DepthwiseWithMultiplierAndBias) {
  // groups = C = 2, multiplier 2: outputs 0,1 filter channel 0, outputs 2,3
  // channel 1; a 2x1 window down the column, padding 1 at the bottom.
  Conv2dAttrs attrs;
  attrs.groups = 2;
  attrs.padding = {0, 1, 0, 0};
  // x[r, 0, c] = {1, 2} then {3, 4}; w[kh, 0, 0, o].
  Tensor x({1, 2, 1, 2}, {1, 2, 3, 4});
  Tensor w({2, 1, 1, 4}, {1, 2, 3, 4, 10, 20, 30, 40});
  Tensor bias({4}, {0.5f, 0.25f, -1, 2});
  Tensor y = conv2d(x, w, attrs, &bias);
  EXPECT_EQ(y.shape, (Shape{1, 2, 1, 4}));
  EXPECT_EQ(y.data,
            (std::vector<float>{1 * 1 + 3 * 10 + 0.5f, 1 * 2 + 3 * 20 + 0.25f,
                                2 * 3 + 4 * 30 - 1, 2 * 4 + 4 * 40 + 2,
                                3 * 1 + 0.5f, 3 * 2 + 0.25f, 4 * 3 - 1,
                                4 * 4 + 2}));
}

TEST(Conv2dTest, GroupErrors) {
  Shape y;
  Conv2dAttrs attrs;
  attrs.groups = 2;
  // 6 channels are 3 groups of 2, not 2.
  Status s = inferConv2dShape({1, 4, 4, 6}, {1, 1, 2, 4}, attrs, y);
  EXPECT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("2 groups of 2"), std::string::npos);
  // 3 outputs do not split into 2 groups.
  s = inferConv2dShape({1, 4, 4, 4}, {1, 1, 2, 3}, attrs, y);
  EXPECT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("not a multiple of 2 groups"), std::string::npos);
  attrs.groups = 0;
  EXPECT_FALSE(inferConv2dShape({1, 4, 4, 4}, {1, 1, 4, 4}, attrs, y).isOk());
}

struct ConvCase {
  const char *name;
  Shape xShape, wShape;
  Conv2dAttrs attrs;
};

void PrintTo(const ConvCase &c, std::ostream *os) { *os << c.name; }

class Conv2dGradTest : public ::testing::TestWithParam<ConvCase> {};

TEST_P(Conv2dGradTest, MatchesFiniteDifferences) {
  const ConvCase &c = GetParam();
  std::mt19937 rng(42);
  Tensor x = randomTensor(c.xShape, rng);
  Tensor w = randomTensor(c.wShape, rng);
  Tensor y = conv2d(x, w, c.attrs);
  Tensor r = randomTensor(y.shape, rng);
  auto loss = smooth([&] { return dot(r, conv2d(x, w, c.attrs)); });
  // conv2d is linear in each operand, so a large step only reduces noise.
  expectGradient("dx", x, conv2dBackwardData(r, w, c.xShape, c.attrs), loss,
                 0.1);
  expectGradient("dw", w, conv2dBackwardFilter(x, r, c.wShape, c.attrs), loss,
                 0.1);
}

Conv2dAttrs makeAttrs(std::array<int64_t, 2> s, std::array<int64_t, 4> p,
                      std::array<int64_t, 2> d, int64_t groups = 1) {
  Conv2dAttrs a;
  a.strides = s;
  a.padding = p;
  a.dilations = d;
  a.groups = groups;
  return a;
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, Conv2dGradTest,
    ::testing::Values(
        ConvCase{"same3x3", {1, 5, 5, 2}, {3, 3, 2, 3},
                 makeAttrs({1, 1}, {1, 1, 1, 1}, {1, 1})},
        ConvCase{"stride2", {2, 7, 6, 3}, {3, 3, 3, 2},
                 makeAttrs({2, 2}, {1, 1, 1, 1}, {1, 1})},
        ConvCase{"asymmetricPad", {1, 6, 7, 2}, {2, 3, 2, 2},
                 makeAttrs({2, 1}, {0, 1, 1, 0}, {1, 1})},
        ConvCase{"dilation2", {1, 7, 7, 2}, {3, 3, 2, 2},
                 makeAttrs({1, 1}, {2, 2, 2, 2}, {2, 2})},
        ConvCase{"projection1x1", {2, 8, 8, 3}, {1, 1, 3, 4},
                 makeAttrs({2, 2}, {0, 0, 0, 0}, {1, 1})},
        ConvCase{"mixed", {1, 5, 6, 2}, {3, 2, 2, 2},
                 makeAttrs({1, 2}, {1, 2, 0, 1}, {2, 1})},
        ConvCase{"stem7x7s2", {1, 9, 9, 1}, {7, 7, 1, 2},
                 makeAttrs({2, 2}, {3, 3, 3, 3}, {1, 1})},
        ConvCase{"strideSkipsRows", {1, 8, 8, 1}, {2, 2, 1, 2},
                 makeAttrs({3, 3}, {0, 0, 0, 0}, {1, 1})},
        ConvCase{"grouped2", {2, 5, 5, 4}, {3, 3, 2, 6},
                 makeAttrs({1, 1}, {1, 1, 1, 1}, {1, 1}, 2)},
        ConvCase{"depthwise", {1, 6, 6, 3}, {3, 3, 1, 3},
                 makeAttrs({2, 2}, {1, 1, 1, 1}, {1, 1}, 3)},
        ConvCase{"depthwiseMultiplier2", {1, 5, 5, 2}, {3, 3, 1, 4},
                 makeAttrs({1, 1}, {1, 1, 1, 1}, {1, 1}, 2)}),
    [](const ::testing::TestParamInfo<ConvCase> &info) {
      return std::string(info.param.name);
    });

} // namespace
} // namespace kiln::ref
