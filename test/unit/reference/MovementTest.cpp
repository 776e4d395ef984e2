//===- MovementTest.cpp - Concat, slices, channel shuffle, transpose ------===//
//
// Part of Kiln. Values against hand-written cases, and each gradient (the
// inverse movement) against finite differences, with a wrong one caught.
//
//===----------------------------------------------------------------------===//

#include "GradCheck.h"

#include "kiln/ref/movement.h"

#include "gtest/gtest-spi.h"
#include "gtest/gtest.h"

namespace kiln::ref {
namespace {

using test::dot;
using test::expectGradient;
using test::randomTensor;
using test::smooth;

TEST(ConcatTest, Values) {
  // [1, 2, 2] and [1, 2, 1] along the last axis: rows interleave.
  Tensor a({1, 2, 2}, {1, 2, 3, 4});
  Tensor b({1, 2, 1}, {5, 6});
  Tensor y = concat({a, b}, 2);
  EXPECT_EQ(y.shape, (Shape{1, 2, 3}));
  EXPECT_EQ(y.data, (std::vector<float>{1, 2, 5, 3, 4, 6}));
  // Along the first axis: one after the other.
  EXPECT_EQ(concat({a, a}, 0).data,
            (std::vector<float>{1, 2, 3, 4, 1, 2, 3, 4}));
  Shape out;
  EXPECT_FALSE(inferConcatShape({{1, 2, 2}, {1, 3, 1}}, 2, out).isOk());
  EXPECT_FALSE(inferConcatShape({{1, 2, 2}}, 3, out).isOk());
  EXPECT_FALSE(inferConcatShape({}, 0, out).isOk());
}

TEST(ConcatTest, GradientsAreSlices) {
  std::mt19937 rng(3);
  Tensor a = randomTensor({2, 3, 3, 4}, rng);
  Tensor b = randomTensor({2, 3, 3, 5}, rng);
  Tensor r = randomTensor({2, 3, 3, 9}, rng);
  auto loss = smooth([&] { return dot(r, concat({a, b}, 3)); });
  expectGradient("da", a, slice(r, 3, 0, 4), loss);
  expectGradient("db", b, slice(r, 3, 4, 5), loss);
  // Negative: the wrong offset.
  EXPECT_NONFATAL_FAILURE(expectGradient("db", b, slice(r, 3, 3, 5), loss),
                          "db");
}

TEST(SliceTest, ValuesAndBackward) {
  Tensor x({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(slice(x, 1, 1, 2).data, (std::vector<float>{2, 3, 5, 6}));
  EXPECT_EQ(slice(x, 0, 1, 1).data, (std::vector<float>{4, 5, 6}));
  Tensor dx = sliceBackward(Tensor({2, 1}, {7, 8}), 1, 2, 3);
  EXPECT_EQ(dx.data, (std::vector<float>{0, 0, 7, 0, 0, 8}));
  EXPECT_FALSE(checkSlice({2, 3}, 1, 2, 2).isOk());
  EXPECT_FALSE(checkSlice({2, 3}, 2, 0, 1).isOk());
}

TEST(SliceTest, SplitGradientsSum) {
  // A split: two slices of one value, their gradients summed.
  std::mt19937 rng(5);
  Tensor x = randomTensor({2, 2, 3, 6}, rng);
  Tensor r1 = randomTensor({2, 2, 3, 2}, rng);
  Tensor r2 = randomTensor({2, 2, 3, 4}, rng);
  auto loss = smooth([&] {
    return dot(r1, slice(x, 3, 0, 2)) + dot(r2, slice(x, 3, 2, 4));
  });
  Tensor g1 = sliceBackward(r1, 3, 0, 6), g2 = sliceBackward(r2, 3, 2, 6);
  Tensor sum(x.shape);
  for (int64_t i = 0; i < sum.size(); ++i)
    sum[i] = g1[i] + g2[i];
  expectGradient("dx", x, sum, loss);
  // Negative: one slice's gradient alone.
  EXPECT_NONFATAL_FAILURE(expectGradient("dx", x, g1, loss), "dx");
  // Along a spatial axis too.
  Tensor r3 = randomTensor({2, 1, 3, 6}, rng);
  auto rows = smooth([&] { return dot(r3, slice(x, 1, 1, 1)); });
  expectGradient("dx rows", x, sliceBackward(r3, 1, 1, 2), rows);
}

TEST(ChannelShuffleTest, Values) {
  // 6 channels in 2 groups [0 1 2 | 3 4 5] -> 0 3 1 4 2 5.
  Tensor x({1, 1, 1, 6}, {0, 1, 2, 3, 4, 5});
  EXPECT_EQ(channelShuffle(x, 2).data, (std::vector<float>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(channelShuffle(x, 3).data, (std::vector<float>{0, 2, 4, 1, 3, 5}));
  // Shuffling in 3 groups undoes the shuffle in 2.
  EXPECT_EQ(channelShuffle(channelShuffle(x, 2), 3).data, x.data);
  EXPECT_FALSE(checkChannelShuffle({1, 1, 1, 6}, 4).isOk());
}

TEST(ChannelShuffleTest, GradientIsInverseShuffle) {
  std::mt19937 rng(7);
  Tensor x = randomTensor({2, 2, 2, 12}, rng);
  Tensor r = randomTensor(x.shape, rng);
  auto loss = smooth([&] { return dot(r, channelShuffle(x, 3)); });
  expectGradient("dx", x, channelShuffle(r, 4), loss);
  // Negative: the forward permutation again is not its inverse here.
  EXPECT_NONFATAL_FAILURE(expectGradient("dx", x, channelShuffle(r, 3), loss),
                          "dx");
}

TEST(TransposeTest, ValuesAndGradient) {
  // NHWC [1, 2, 2, 3] to NCHW: channel-major.
  Tensor x({1, 2, 2, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  Tensor y = transpose(x, {0, 3, 1, 2});
  EXPECT_EQ(y.shape, (Shape{1, 3, 2, 2}));
  EXPECT_EQ(y.data,
            (std::vector<float>{0, 3, 6, 9, 1, 4, 7, 10, 2, 5, 8, 11}));
  EXPECT_EQ(transpose(y, {0, 2, 3, 1}).data, x.data);
  EXPECT_FALSE(checkTranspose({1, 2, 2, 3}, {0, 3, 1, 1}).isOk());
  EXPECT_FALSE(checkTranspose({1, 2, 2, 3}, {0, 2, 1}).isOk());

  std::mt19937 rng(11);
  Tensor a = randomTensor({2, 3, 4, 5}, rng);
  Tensor r = randomTensor({2, 5, 3, 4}, rng);
  auto loss = smooth([&] { return dot(r, transpose(a, {0, 3, 1, 2})); });
  expectGradient("da", a, transpose(r, {0, 2, 3, 1}), loss);
  // Negative: the gradient reshaped instead of transposed back.
  Tensor reshaped(a.shape, r.data);
  EXPECT_NONFATAL_FAILURE(expectGradient("da", a, reshaped, loss), "da");
}

} // namespace
} // namespace kiln::ref
