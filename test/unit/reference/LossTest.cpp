//===- LossTest.cpp - Softmax cross-entropy values and gradients ----------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "GradCheck.h"

#include "kiln/ref/loss.h"

#include "gtest/gtest.h"

#include <cmath>

namespace kiln::ref {
namespace {

using test::expectGradient;
using test::randomTensor;
using test::smooth;

TEST(SoftmaxCrossEntropyTest, UniformLogits) {
  // Equal logits: softmax = 1/K, loss = log K whatever the smoothing.
  Tensor logits = Tensor::filled({2, 4}, 3.0f);
  for (float ls : {0.0f, 0.1f}) {
    Tensor loss;
    ASSERT_TRUE(softmaxCrossEntropy(logits, {0, 3}, ls, loss).isOk());
    EXPECT_EQ(loss.shape, Shape{});
    EXPECT_NEAR(loss[0], std::log(4.0), 1e-6);
  }
}

TEST(SoftmaxCrossEntropyTest, HandComputedWithSmoothing) {
  // One example, logits {0, log 3}: softmax {1/4, 3/4}, label 1, ls = 0.2,
  // K = 2: q = {0.1, 0.9}.
  // loss = -(0.1*log(1/4) + 0.9*log(3/4));  dlogits = softmax - q.
  Tensor logits({1, 2}, {0.0f, static_cast<float>(std::log(3.0))});
  double loss = 0.0;
  ASSERT_TRUE(softmaxCrossEntropy(logits, {1}, 0.2f, loss).isOk());
  EXPECT_NEAR(loss, -(0.1 * std::log(0.25) + 0.9 * std::log(0.75)), 1e-6);
  Tensor d;
  ASSERT_TRUE(softmaxCrossEntropyBackward(logits, {1}, 0.2f, 2.0f, d).isOk());
  EXPECT_NEAR(d[0], 2.0 * (0.25 - 0.1), 1e-6);
  EXPECT_NEAR(d[1], 2.0 * (0.75 - 0.9), 1e-6);
}

TEST(SoftmaxCrossEntropyTest, LargeLogitsAreStable) {
  Tensor logits({1, 3}, {1000.0f, 0.0f, -1000.0f});
  double loss = -1.0;
  ASSERT_TRUE(softmaxCrossEntropy(logits, {0}, 0.0f, loss).isOk());
  EXPECT_NEAR(loss, 0.0, 1e-12);
  ASSERT_TRUE(softmaxCrossEntropy(logits, {2}, 0.0f, loss).isOk());
  EXPECT_NEAR(loss, 2000.0, 1e-9);
  Tensor d;
  ASSERT_TRUE(softmaxCrossEntropyBackward(logits, {2}, 0.0f, 1.0f, d).isOk());
  EXPECT_TRUE(std::isfinite(d[0]) && std::isfinite(d[2]));
}

TEST(SoftmaxCrossEntropyTest, BadLabelIsAnError) {
  Tensor logits({2, 3});
  Tensor loss;
  Status s = softmaxCrossEntropy(logits, {0, 3}, 0.0f, loss);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("label 3 of example 1"), std::string::npos)
      << s.message();
  EXPECT_FALSE(softmaxCrossEntropy(logits, {-1, 0}, 0.0f, loss).isOk());
  Tensor d;
  EXPECT_FALSE(
      softmaxCrossEntropyBackward(logits, {0, 7}, 0.0f, 1.0f, d).isOk());
  EXPECT_FALSE(softmaxCrossEntropy(logits, {0}, 0.0f, loss).isOk());
  EXPECT_FALSE(softmaxCrossEntropy(logits, {0, 1}, 1.5f, loss).isOk());
}

void checkCrossEntropyGradient(float labelSmoothing, uint32_t seed) {
  std::mt19937 rng(seed);
  Tensor logits = randomTensor({4, 6}, rng, -3.0f, 3.0f);
  std::vector<int32_t> labels{0, 5, 2, 2};
  const float dloss = 1.7f;
  Tensor d;
  ASSERT_TRUE(
      softmaxCrossEntropyBackward(logits, labels, labelSmoothing, dloss, d)
          .isOk());
  auto loss = smooth([&] {
    double l = 0.0;
    EXPECT_TRUE(softmaxCrossEntropy(logits, labels, labelSmoothing, l).isOk());
    return dloss * l;
  });
  expectGradient("dlogits", logits, d, loss);
}

TEST(SoftmaxCrossEntropyGradTest, NoSmoothing) { checkCrossEntropyGradient(0.0f, 41); }
TEST(SoftmaxCrossEntropyGradTest, LabelSmoothing) { checkCrossEntropyGradient(0.1f, 42); }

} // namespace
} // namespace kiln::ref
