//===- ElementwiseTest.cpp - ReLU, add and reshape -------------------------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "GradCheck.h"

#include "kiln/ref/elementwise.h"

#include "gtest/gtest-spi.h"
#include "gtest/gtest.h"

#include <cmath>
#include <limits>

namespace kiln::ref {
namespace {

using test::dot;
using test::expectGradient;
using test::randomTensor;
using test::smooth;

TEST(ReluTest, ForwardAndBackward) {
  Tensor x({5}, {-2.0f, -0.0f, 0.0f, 0.5f, 3.0f});
  EXPECT_EQ(relu(x).data, (std::vector<float>{0, 0, 0, 0.5f, 3}));
  Tensor dx = reluBackward(Tensor::filled({5}, 7.0f), x);
  EXPECT_EQ(dx.data, (std::vector<float>{0, 0, 0, 7, 7}));
}

TEST(ReluTest, NanPropagates) {
  Tensor y = relu(Tensor({1}, {std::numeric_limits<float>::quiet_NaN()}));
  EXPECT_TRUE(std::isnan(y[0]));
}

/// Values with |x| >= 0.2, away from the kink at 0.
Tensor awayFromZero(const Shape &shape, std::mt19937 &rng) {
  Tensor t = randomTensor(shape, rng, 0.2f, 2.0f);
  std::bernoulli_distribution sign(0.5);
  for (float &v : t.data)
    if (sign(rng))
      v = -v;
  return t;
}

TEST(ReluGradTest, MatchesFiniteDifferences) {
  std::mt19937 rng(21);
  Tensor x = awayFromZero({2, 3, 3, 4}, rng);
  Tensor r = randomTensor(x.shape, rng);
  auto loss = smooth([&] { return dot(r, relu(x)); });
  expectGradient("dx", x, reluBackward(r, x), loss, 1e-2);
}

TEST(AddTest, ForwardAndGradients) {
  std::mt19937 rng(22);
  Tensor a = randomTensor({2, 3, 3, 2}, rng);
  Tensor b = randomTensor({2, 3, 3, 2}, rng);
  Tensor y = add(a, b);
  for (int64_t i = 0; i < y.size(); ++i)
    EXPECT_EQ(y[i], a[i] + b[i]);
  Tensor r = randomTensor(a.shape, rng);
  auto loss = smooth([&] { return dot(r, add(a, b)); });
  // The backward of add passes dy to both operands.
  expectGradient("da", a, r, loss, 0.1);
  expectGradient("db", b, r, loss, 0.1);
}

TEST(GradCheckTest, DetectsAWrongGradient) {
  // The harness itself: a gradient off by 1% in one element must fail.
  std::mt19937 rng(23);
  Tensor a = randomTensor({3, 4}, rng);
  Tensor b = randomTensor({3, 4}, rng);
  Tensor r = randomTensor(a.shape, rng, 0.5f, 1.0f);
  Tensor wrong = r;
  wrong[5] *= 1.01f;
  auto loss = smooth([&] { return dot(r, add(a, b)); });
  EXPECT_NONFATAL_FAILURE(expectGradient("da", a, wrong, loss),
                          "relative error");
}

TEST(ReshapeTest, KeepsData) {
  Tensor x({2, 1, 1, 3}, {1, 2, 3, 4, 5, 6});
  Tensor y = reshape(x, {2, 3});
  EXPECT_EQ(y.shape, (Shape{2, 3}));
  EXPECT_EQ(y.data, x.data);
  EXPECT_FALSE(checkReshape({2, 3}, {4, 2}).isOk());
  EXPECT_TRUE(checkReshape({2, 3}, {6}).isOk());
}

TEST(BroadcastMulTest, SqueezeExcitationShapes) {
  // [1, 2, 1, 2] x [1, 1, 1, 2]: each channel scaled by its factor.
  Tensor x({1, 2, 1, 2}, {1, 2, 3, 4});
  Tensor s({1, 1, 1, 2}, {10, -1});
  EXPECT_EQ(broadcastMul(x, s).data, (std::vector<float>{10, -2, 30, -4}));
  // The rhs gradient sums dy * x over the broadcast (spatial) dimensions.
  Tensor dy({1, 2, 1, 2}, {1, 1, 2, 0.5f});
  EXPECT_EQ(broadcastMulBackward(dy, x, s.shape).data,
            (std::vector<float>{1 + 6, 2 + 2}));
  // Equal shapes: the elementwise product.
  EXPECT_EQ(broadcastMul(x, x).data, (std::vector<float>{1, 4, 9, 16}));
}

TEST(BroadcastMulTest, ShapeErrors) {
  EXPECT_FALSE(checkBroadcast({1, 1, 2}, {1, 2, 1, 2}).isOk());
  EXPECT_FALSE(checkBroadcast({1, 1, 1, 3}, {1, 2, 1, 2}).isOk());
  EXPECT_TRUE(checkBroadcast({1, 1, 1, 2}, {3, 2, 1, 2}).isOk());
}

TEST(BroadcastMulGradTest, MatchesFiniteDifferences) {
  std::mt19937 rng(23);
  Tensor x = randomTensor({2, 3, 3, 4}, rng);
  Tensor s = randomTensor({2, 1, 1, 4}, rng);
  Tensor r = randomTensor(x.shape, rng);
  auto loss = smooth([&] { return dot(r, broadcastMul(x, s)); });
  expectGradient("dx", x, broadcastMul(r, s), loss);
  expectGradient("ds", s, broadcastMulBackward(r, x, s.shape), loss);
  // A factor per channel shared by the batch, and one per image.
  Tensor c = randomTensor({1, 1, 1, 4}, rng);
  auto perChannel = smooth([&] { return dot(r, broadcastMul(x, c)); });
  expectGradient("dc", c, broadcastMulBackward(r, x, c.shape), perChannel);
  Tensor n = randomTensor({2, 1, 1, 1}, rng);
  auto perImage = smooth([&] { return dot(r, broadcastMul(x, n)); });
  expectGradient("dn", n, broadcastMulBackward(r, x, n.shape), perImage);
}

/// The check fails for the rhs gradient taken as dy * x without the sum
/// (its first image row only): the reduction is what makes it right.
TEST(BroadcastMulGradTest, MissingReductionIsCaught) {
  std::mt19937 rng(24);
  Tensor x = randomTensor({1, 2, 2, 3}, rng);
  Tensor s = randomTensor({1, 1, 1, 3}, rng);
  Tensor r = randomTensor(x.shape, rng);
  auto loss = smooth([&] { return dot(r, broadcastMul(x, s)); });
  Tensor wrong(s.shape);
  for (int64_t c = 0; c < 3; ++c)
    wrong[c] = r[c] * x[c];
  EXPECT_NONFATAL_FAILURE(expectGradient("ds", s, wrong, loss), "ds");
}

TEST(BiasAddTest, ForwardAndGradients) {
  Tensor x({2, 1, 1, 2}, {1, 2, 3, 4});
  Tensor b({2}, {10, -1});
  EXPECT_EQ(biasAdd(x, b).data, (std::vector<float>{11, 1, 13, 3}));
  EXPECT_EQ(biasAddBackward(Tensor({2, 1, 1, 2}, {1, 2, 3, 4})).data,
            (std::vector<float>{4, 6}));
  std::mt19937 rng(25);
  Tensor y = randomTensor({2, 3, 3, 4}, rng);
  Tensor c = randomTensor({4}, rng);
  Tensor r = randomTensor(y.shape, rng);
  auto loss = smooth([&] { return dot(r, biasAdd(y, c)); });
  expectGradient("dx", y, r, loss);
  expectGradient("db", c, biasAddBackward(r), loss);
  // Negative: one image's sum is not the gradient of a bias the batch shares.
  Tensor half = biasAddBackward(Tensor(
      {1, 3, 3, 4}, std::vector<float>(r.data.begin(), r.data.begin() + 36)));
  EXPECT_NONFATAL_FAILURE(expectGradient("db", c, half, loss), "db");
}

} // namespace
} // namespace kiln::ref
