//===- ActivationTest.cpp - The activations of kiln.activation ----------===//
//
// Part of Kiln. Values against PyTorch's formulas, PyTorch's derivatives at
// the kinks, and finite-difference gradients away from them.
//
//===----------------------------------------------------------------------===//

#include "GradCheck.h"

#include "kiln/ref/activation.h"

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

const Activation kAll[] = {Activation::Sigmoid, Activation::SiLU,
                           Activation::ReLU6, Activation::HardSigmoid,
                           Activation::HardSwish};

TEST(ActivationTest, Values) {
  Tensor x({6}, {-4.0f, -3.0f, -1.0f, 0.0f, 2.0f, 7.0f});
  std::vector<float> sigmoid, silu;
  for (float v : x.data) {
    sigmoid.push_back(1.0f / (1.0f + std::exp(-v)));
    silu.push_back(v * sigmoid.back());
  }
  EXPECT_EQ(activation(Activation::Sigmoid, x).data, sigmoid);
  EXPECT_EQ(activation(Activation::SiLU, x).data, silu);
  EXPECT_EQ(activation(Activation::ReLU6, x).data,
            (std::vector<float>{0, 0, 0, 0, 2, 6}));
  EXPECT_EQ(activation(Activation::HardSigmoid, x).data,
            (std::vector<float>{0, 0, 2.0f / 6, 0.5f, 5.0f / 6, 1}));
  EXPECT_EQ(activation(Activation::HardSwish, x).data,
            (std::vector<float>{0, 0, -2.0f / 6, 0, 10.0f / 6, 7}));
}

TEST(ActivationTest, DerivativesAtTheKinksArePyTorchs) {
  Tensor x({5}, {-3.0f, 0.0f, 3.0f, 6.0f, 6.5f});
  Tensor dy = Tensor::filled({5}, 6.0f);
  EXPECT_EQ(activationBackward(Activation::ReLU6, dy, x).data,
            (std::vector<float>{0, 0, 6, 0, 0}));
  EXPECT_EQ(activationBackward(Activation::HardSigmoid, dy, x).data,
            (std::vector<float>{0, 1, 0, 0, 0}));
  // hard_swish: x/3 + 1/2 on the closed interval [-3, 3].
  EXPECT_EQ(activationBackward(Activation::HardSwish, dy, x).data,
            (std::vector<float>{-3, 3, 9, 6, 6}));
}

TEST(ActivationTest, NanPropagates) {
  Tensor x({1}, {std::numeric_limits<float>::quiet_NaN()});
  for (Activation kind : kAll)
    EXPECT_TRUE(std::isnan(activation(kind, x)[0])) << static_cast<int>(kind);
}

/// Values in [-8, 8] at least 0.2 away from every kink (-3, 0, 3, 6).
Tensor awayFromKinks(const Shape &shape, std::mt19937 &rng) {
  Tensor t = randomTensor(shape, rng, -8.0f, 8.0f);
  for (float &v : t.data)
    for (float kink : {-3.0f, 0.0f, 3.0f, 6.0f})
      if (std::fabs(v - kink) < 0.2f)
        v = kink + (v < kink ? -0.2f : 0.2f);
  return t;
}

TEST(ActivationGradTest, MatchesFiniteDifferences) {
  std::mt19937 rng(41);
  for (Activation kind : kAll) {
    SCOPED_TRACE(static_cast<int>(kind));
    Tensor x = awayFromKinks({2, 3, 3, 4}, rng);
    Tensor r = randomTensor(x.shape, rng);
    auto loss = smooth([&] { return dot(r, activation(kind, x)); });
    expectGradient("dx", x, activationBackward(kind, r, x), loss, 1e-2);
  }
}

/// The check fails for a wrong derivative: SiLU's gradient taken as
/// sigmoid's (a common slip: forgetting the product rule).
TEST(ActivationGradTest, WrongDerivativeIsCaught) {
  std::mt19937 rng(42);
  Tensor x = awayFromKinks({2, 2, 2, 3}, rng);
  Tensor r = randomTensor(x.shape, rng);
  auto loss = smooth([&] { return dot(r, activation(Activation::SiLU, x)); });
  EXPECT_NONFATAL_FAILURE(
      expectGradient("dx", x, activationBackward(Activation::Sigmoid, r, x),
                     loss, 1e-2),
      "dx");
}

} // namespace
} // namespace kiln::ref
