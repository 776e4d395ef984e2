//===- BatchNormTest.cpp - Batch normalisation values and gradients -------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "GradCheck.h"

#include "kiln/ref/batchnorm.h"

#include "gtest/gtest.h"

namespace kiln::ref {
namespace {

using test::dot;
using test::expectGradient;
using test::randomTensor;
using test::smooth;

TEST(BatchNormTest, TrainForwardAndRunningStats) {
  // One channel, x = {1, 2, 3, 6}: mean 3, biased var (4+1+0+9)/4 = 3.5,
  // unbiased 14/3.
  Tensor x({4, 1}, {1, 2, 3, 6});
  Tensor gamma({1}, {2.0f}), beta({1}, {0.5f});
  Tensor rm({1}, {1.0f}), rv({1}, {2.0f});
  float eps = 0.5f, momentum = 0.9f;
  BatchNormTrainResult r = batchNormTrain(x, gamma, beta, rm, rv, eps, momentum);
  EXPECT_FLOAT_EQ(r.batchMean[0], 3.0f);
  EXPECT_FLOAT_EQ(r.batchVar[0], 3.5f);
  // y = 2*(x-3)/sqrt(3.5+0.5) + 0.5 = (x-3) + 0.5
  EXPECT_FLOAT_EQ(r.y[0], -1.5f);
  EXPECT_FLOAT_EQ(r.y[1], -0.5f);
  EXPECT_FLOAT_EQ(r.y[2], 0.5f);
  EXPECT_FLOAT_EQ(r.y[3], 3.5f);
  // 0.9*1 + 0.1*3 = 1.2;  0.9*2 + 0.1*14/3 = 1.8 + 0.4666...
  EXPECT_NEAR(r.newRunningMean[0], 1.2, 1e-6);
  EXPECT_NEAR(r.newRunningVar[0], 1.8 + 1.4 / 3.0, 1e-6);
}

TEST(BatchNormTest, FourDimensionalStatisticsPerChannel) {
  std::mt19937 rng(7);
  Tensor x = randomTensor({2, 3, 4, 5}, rng, -2.0f, 3.0f);
  Tensor ones = Tensor::filled({5}, 1.0f), zeros({5});
  BatchNormTrainResult r = batchNormTrain(x, ones, zeros, zeros, ones, 0.0f, 0.9f);
  for (int64_t c = 0; c < 5; ++c) {
    double sum = 0.0, sq = 0.0;
    for (int64_t i = c; i < r.y.size(); i += 5) {
      sum += r.y[i];
      sq += static_cast<double>(r.y[i]) * r.y[i];
    }
    EXPECT_NEAR(sum / 24.0, 0.0, 1e-6);
    EXPECT_NEAR(sq / 24.0, 1.0, 1e-5);
  }
}

TEST(BatchNormTest, InferenceUsesRunningStats) {
  Tensor x({1, 1, 1, 2}, {3.0f, -1.0f});
  Tensor gamma({2}, {2.0f, 1.0f}), beta({2}, {1.0f, 0.0f});
  Tensor rm({2}, {1.0f, 1.0f}), rv({2}, {3.0f, 0.0f});
  Tensor y = batchNormInference(x, gamma, beta, rm, rv, 1.0f);
  // 2*(3-1)/sqrt(4) + 1 = 3;  1*(-1-1)/sqrt(1) + 0 = -2.
  EXPECT_FLOAT_EQ(y[0], 3.0f);
  EXPECT_FLOAT_EQ(y[1], -2.0f);
}

TEST(BatchNormTest, ShapeErrors) {
  Tensor c3({3}), c4({4});
  EXPECT_TRUE(checkBatchNormShapes({2, 4, 4, 3}, {&c3}).isOk());
  EXPECT_FALSE(checkBatchNormShapes({2, 4, 4, 3}, {&c4}).isOk());
  EXPECT_FALSE(checkBatchNormShapes({2, 4, 3}, {&c3}).isOk());
}

void checkBatchNormGradients(const Shape &xShape, uint32_t seed) {
  std::mt19937 rng(seed);
  int64_t c = xShape.back();
  Tensor x = randomTensor(xShape, rng, -2.0f, 2.0f);
  Tensor gamma = randomTensor({c}, rng, 0.5f, 1.5f);
  Tensor beta = randomTensor({c}, rng);
  Tensor rm({c}), rv = Tensor::filled({c}, 1.0f);
  const float eps = 1e-3f;
  BatchNormTrainResult fwd = batchNormTrain(x, gamma, beta, rm, rv, eps, 0.9f);
  Tensor r = randomTensor(xShape, rng);
  BatchNormGrads g =
      batchNormBackward(r, x, gamma, fwd.batchMean, fwd.batchVar, eps);
  auto loss = smooth(
      [&] { return dot(r, batchNormTrain(x, gamma, beta, rm, rv, eps, 0.9f).y); });
  expectGradient("dx", x, g.dx, loss);
  expectGradient("dgamma", gamma, g.dgamma, loss);
  expectGradient("dbeta", beta, g.dbeta, loss);
}

TEST(BatchNormGradTest, FourDimensional) { checkBatchNormGradients({2, 3, 3, 4}, 1); }
TEST(BatchNormGradTest, TwoDimensional) { checkBatchNormGradients({6, 3}, 2); }
TEST(BatchNormGradTest, SmallBatch) { checkBatchNormGradients({3, 1, 1, 2}, 3); }

} // namespace
} // namespace kiln::ref
