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

TEST(BroadcastBinaryTest, SqueezeExcitationShapes) {
  // [1, 2, 1, 2] x [1, 1, 1, 2]: each channel scaled by its factor.
  Tensor x({1, 2, 1, 2}, {1, 2, 3, 4});
  Tensor s({1, 1, 1, 2}, {10, -1});
  EXPECT_EQ(broadcastBinary(BinaryKind::Mul, x, s).data,
            (std::vector<float>{10, -2, 30, -4}));
  // The rhs gradient sums dy * x over the broadcast (spatial) dimensions.
  Tensor dy({1, 2, 1, 2}, {1, 1, 2, 0.5f});
  EXPECT_EQ(broadcastBinaryBackward(BinaryKind::Mul, /*wrtRhs=*/true, dy, &x,
                                    nullptr, s.shape)
                .data,
            (std::vector<float>{1 + 6, 2 + 2}));
  // Equal shapes: the elementwise product.
  EXPECT_EQ(broadcastBinary(BinaryKind::Mul, x, x).data,
            (std::vector<float>{1, 4, 9, 16}));
}

TEST(BroadcastBinaryTest, KindsAndBothOperandsBroadcast) {
  // [2, 1] <op> [1, 3] gives [2, 3]: rows of a against columns of b.
  Tensor a({2, 1}, {6, -2});
  Tensor b({1, 3}, {1, 2, -4});
  EXPECT_EQ(broadcastBinary(BinaryKind::Add, a, b).data,
            (std::vector<float>{7, 8, 2, -1, 0, -6}));
  EXPECT_EQ(broadcastBinary(BinaryKind::Sub, a, b).data,
            (std::vector<float>{5, 4, 10, -3, -4, 2}));
  EXPECT_EQ(broadcastBinary(BinaryKind::Div, a, b).data,
            (std::vector<float>{6, 3, -1.5f, -2, -1, 0.5f}));
  Tensor dy({2, 3}, {1, 2, 3, 4, 5, 6});
  // sub wrt b: -dy summed over the rows.
  EXPECT_EQ(broadcastBinaryBackward(BinaryKind::Sub, true, dy, nullptr,
                                    nullptr, b.shape)
                .data,
            (std::vector<float>{-5, -7, -9}));
  // div wrt a: dy / b summed over the columns: 1 + 1 - 0.75, 4 + 2.5 - 1.5.
  EXPECT_EQ(broadcastBinaryBackward(BinaryKind::Div, false, dy, nullptr, &b,
                                    a.shape)
                .data,
            (std::vector<float>{1.25f, 5}));
  // div wrt b: -dy * a / b^2 summed over the rows.
  EXPECT_EQ(broadcastBinaryBackward(BinaryKind::Div, true, dy, &a, &b,
                                    b.shape)
                .data,
            (std::vector<float>{-6 + 8, -12 / 4.0f + 10 / 4.0f,
                                -18 / 16.0f + 12 / 16.0f}));
}

TEST(BroadcastBinaryTest, ShapeErrors) {
  EXPECT_FALSE(checkBroadcast({1, 1, 2}, {1, 2, 1, 2}).isOk());
  EXPECT_FALSE(checkBroadcast({1, 1, 1, 3}, {1, 2, 1, 2}).isOk());
  EXPECT_TRUE(checkBroadcast({1, 1, 1, 2}, {3, 2, 1, 2}).isOk());
  Shape out;
  EXPECT_TRUE(inferBroadcast({2, 1, 3}, {1, 4, 3}, out).isOk());
  EXPECT_EQ(out, (Shape{2, 4, 3}));
  EXPECT_FALSE(inferBroadcast({2, 3}, {3, 3}, out).isOk());
  EXPECT_FALSE(inferBroadcast({2, 3}, {1, 2, 3}, out).isOk());
}

TEST(BroadcastBinaryGradTest, MatchesFiniteDifferences) {
  std::mt19937 rng(23);
  Tensor x = randomTensor({2, 3, 3, 4}, rng);
  // Squeeze-and-excitation, a factor per channel shared by the batch, one
  // per image, and a [1, H, W, 1] map broadcast against [N, 1, 1, C] (both
  // operands broadcast).
  Tensor se = randomTensor({2, 1, 1, 4}, rng);
  Tensor channel = randomTensor({1, 1, 1, 4}, rng);
  Tensor image = randomTensor({2, 1, 1, 1}, rng);
  Tensor map = randomTensor({1, 3, 3, 1}, rng);
  // Divisors away from zero, so that the finite differences are smooth.
  for (Tensor *t : {&x, &se, &channel, &image, &map})
    for (float &v : t->data)
      v = v < 0 ? v - 0.5f : v + 0.5f;
  struct Case {
    const char *name;
    Tensor *a, *b;
  };
  for (BinaryKind kind : {BinaryKind::Add, BinaryKind::Sub, BinaryKind::Mul,
                          BinaryKind::Div}) {
    for (Case c : {Case{"x, se", &x, &se}, Case{"x, channel", &x, &channel},
                   Case{"x, image", &x, &image}, Case{"se, x", &se, &x},
                   Case{"map, se", &map, &se}}) {
      SCOPED_TRACE(std::string(c.name) + ", kind " +
                   std::to_string(static_cast<int>(kind)));
      Tensor &a = *c.a, &b = *c.b;
      Shape shape;
      ASSERT_TRUE(inferBroadcast(a.shape, b.shape, shape).isOk());
      Tensor weights = randomTensor(shape, rng);
      auto loss = smooth(
          [&] { return dot(weights, broadcastBinary(kind, a, b)); });
      expectGradient("da", a,
                     broadcastBinaryBackward(kind, false, weights, &a, &b,
                                             a.shape),
                     loss);
      expectGradient("db", b,
                     broadcastBinaryBackward(kind, true, weights, &a, &b,
                                             b.shape),
                     loss);
    }
  }
}

/// The check fails for the rhs gradient taken as dy * x without the sum
/// (its first image row only): the reduction is what makes it right.
TEST(BroadcastBinaryGradTest, MissingReductionIsCaught) {
  std::mt19937 rng(24);
  Tensor x = randomTensor({1, 2, 2, 3}, rng);
  Tensor s = randomTensor({1, 1, 1, 3}, rng);
  Tensor r = randomTensor(x.shape, rng);
  auto loss =
      smooth([&] { return dot(r, broadcastBinary(BinaryKind::Mul, x, s)); });
  Tensor wrong(s.shape);
  for (int64_t c = 0; c < 3; ++c)
    wrong[c] = r[c] * x[c];
  EXPECT_NONFATAL_FAILURE(expectGradient("ds", s, wrong, loss), "ds");
}

/// Division's rhs gradient without the square (-dy * a / b) is caught.
TEST(BroadcastBinaryGradTest, WrongDivisionGradientIsCaught) {
  std::mt19937 rng(25);
  Tensor x = randomTensor({1, 2, 2, 3}, rng);
  Tensor s({1, 1, 1, 3}, {2.0f, -3.0f, 4.0f});
  Tensor r = randomTensor(x.shape, rng);
  auto loss =
      smooth([&] { return dot(r, broadcastBinary(BinaryKind::Div, x, s)); });
  Tensor wrong = broadcastBinaryBackward(BinaryKind::Mul, true, r, &x, nullptr,
                                         s.shape);
  for (int64_t c = 0; c < 3; ++c)
    wrong[c] = -wrong[c] / s[c];
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
