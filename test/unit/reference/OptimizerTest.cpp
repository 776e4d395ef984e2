//===- OptimizerTest.cpp - SGD and LARS steps against hand calculations ---===//
//
// Part of Kiln. Every expected number below is worked out by hand in the
// comment next to it, independently of the code under test.
//
//===----------------------------------------------------------------------===//

#include "kiln/ref/optimizer.h"

#include "gtest/gtest.h"

namespace kiln::ref {
namespace {

void expectValues(const Tensor &t, std::vector<double> expected,
                  const char *what) {
  ASSERT_EQ(t.data.size(), expected.size()) << what;
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_NEAR(t.data[i], expected[i], 1e-6) << what << "[" << i << "]";
}

SgdParams sgd(bool nesterov) {
  SgdParams p;
  p.learningRate = 0.1;
  p.momentum = 0.9;
  p.weightDecay = 0.01;
  p.nesterov = nesterov;
  return p;
}

TEST(SgdTest, MomentumWithDecay) {
  Tensor w({2}, {1.0f, -2.0f}), g({2}, {0.5f, 0.25f}), v({2}, {0.1f, -0.2f});
  sgdMomentumUpdate(w, g, v, sgd(false), /*applyDecay=*/true);
  // g' = g + 0.01*w = {0.51, 0.23}
  // v  = 0.9*{0.1,-0.2} + g' = {0.09+0.51, -0.18+0.23} = {0.60, 0.05}
  // w  = w - 0.1*v = {1-0.06, -2-0.005} = {0.94, -2.005}
  expectValues(v, {0.60, 0.05}, "v");
  expectValues(w, {0.94, -2.005}, "w");
  // Second step, same gradient:
  // g' = {0.5+0.0094, 0.25-0.02005} = {0.5094, 0.22995}
  // v  = {0.54+0.5094, 0.045+0.22995} = {1.0494, 0.27495}
  // w  = {0.94-0.10494, -2.005-0.027495} = {0.83506, -2.032495}
  sgdMomentumUpdate(w, g, v, sgd(false), true);
  expectValues(v, {1.0494, 0.27495}, "v2");
  expectValues(w, {0.83506, -2.032495}, "w2");
}

TEST(SgdTest, NesterovWithDecay) {
  Tensor w({2}, {1.0f, -2.0f}), g({2}, {0.5f, 0.25f}), v({2}, {0.1f, -0.2f});
  sgdMomentumUpdate(w, g, v, sgd(true), true);
  // g' = {0.51, 0.23}, v = {0.60, 0.05} as above;
  // w -= 0.1*(g' + 0.9*v) = 0.1*{0.51+0.54, 0.23+0.045} = {0.105, 0.0275}
  expectValues(v, {0.60, 0.05}, "v");
  expectValues(w, {0.895, -2.0275}, "w");
}

TEST(SgdTest, UndecayedParameter) {
  Tensor b({1}, {0.5f}), g({1}, {0.2f}), v({1}, {0.0f});
  sgdMomentumUpdate(b, g, v, sgd(false), /*applyDecay=*/false);
  // v = 0 + 0.2; b = 0.5 - 0.1*0.2 = 0.48 (no decay term)
  expectValues(v, {0.2}, "v");
  expectValues(b, {0.48}, "b");
}

LarsParams lars(bool nesterov) {
  LarsParams p;
  p.learningRate = 2.0;
  p.momentum = 0.9;
  p.weightDecay = 0.01;
  p.eta = 0.001;
  p.epsilon = 0.0;
  p.nesterov = nesterov;
  return p;
}

TEST(LarsTest, TrustRatioStep) {
  Tensor w({2}, {3.0f, 4.0f}), g({2}, {0.6f, 0.8f}), v({2}, {0.1f, 0.2f});
  // |w| = 5, |g| = 1: trust = 0.001*5 / (1 + 0.01*5) = 0.005/1.05
  EXPECT_NEAR(larsTrustRatio(w, g, lars(false)), 0.0047619047619047615, 1e-9);
  larsUpdate(w, g, v, lars(false), /*skip=*/false);
  // g' = g + 0.01*w = {0.63, 0.84}; lr*trust = 2*0.005/1.05 = 0.01/1.05
  // v = 0.9*{0.1,0.2} + {0.0063/1.05, 0.0084/1.05} = {0.09+0.006, 0.18+0.008}
  //   = {0.096, 0.188};  w = {3-0.096, 4-0.188} = {2.904, 3.812}
  expectValues(v, {0.096, 0.188}, "v");
  expectValues(w, {2.904, 3.812}, "w");
}

TEST(LarsTest, Nesterov) {
  Tensor w({2}, {3.0f, 4.0f}), g({2}, {0.6f, 0.8f}), v({2}, {0.1f, 0.2f});
  larsUpdate(w, g, v, lars(true), false);
  // v as above {0.096, 0.188};
  // w -= 0.9*v + lr*trust*g' = {0.0864+0.006, 0.1692+0.008} = {0.0924, 0.1772}
  expectValues(v, {0.096, 0.188}, "v");
  expectValues(w, {2.9076, 3.8228}, "w");
}

TEST(LarsTest, Epsilon) {
  Tensor w({2}, {3.0f, 4.0f}), g({2}, {0.6f, 0.8f});
  LarsParams p = lars(false);
  p.epsilon = 1e-5;
  // 0.005 / (1 + 0.05 + 0.00001)
  EXPECT_NEAR(larsTrustRatio(w, g, p), 0.004761859410862753, 1e-9);
}

TEST(LarsTest, SkippedParameterIsPlainMomentum) {
  Tensor b({2}, {0.5f, -0.5f}), g({2}, {0.1f, 0.3f}), v({2}, {0.2f, 0.0f});
  larsUpdate(b, g, v, lars(false), /*skip=*/true);
  // No trust ratio, no decay: v = 0.9*{0.2,0} + 2*{0.1,0.3} = {0.38, 0.6}
  // b = {0.5-0.38, -0.5-0.6} = {0.12, -1.1}
  expectValues(v, {0.38, 0.6}, "v");
  expectValues(b, {0.12, -1.1}, "b");
}

TEST(LarsTest, ZeroWeightsUseTrustOne) {
  Tensor w({2}, {0.0f, 0.0f}), g({2}, {1.0f, -1.0f}), v({2}, {0.0f, 0.0f});
  LarsParams p = lars(false);
  p.learningRate = 0.5;
  EXPECT_EQ(larsTrustRatio(w, g, p), 1.0);
  larsUpdate(w, g, v, p, false);
  // trust 1, g' = g + 0.01*0 = g: v = 0.5*g = {0.5,-0.5}; w = -v
  expectValues(v, {0.5, -0.5}, "v");
  expectValues(w, {-0.5, 0.5}, "w");
  // Zero gradient: trust 1 as well.
  EXPECT_EQ(larsTrustRatio(Tensor({1}, {2.0f}), Tensor({1}, {0.0f}), p), 1.0);
}

LarsParams larsV06(bool nesterov) {
  LarsParams p = lars(nesterov);
  p.form = LarsForm::V0_6;
  return p;
}

TEST(LarsTest, V06ScalesTheStepNotTheMomentum) {
  Tensor w({2}, {3.0f, 4.0f}), g({2}, {0.6f, 0.8f}), v({2}, {0.1f, 0.2f});
  larsUpdate(w, g, v, larsV06(false), /*skipTrust=*/false, /*decay=*/true);
  // g' = g + 0.01*w = {0.63, 0.84}, |g'| = sqrt(0.3969 + 0.7056) = 1.05;
  // trust = 0.001*5 / (1.05 + 0.01*5) = 0.005/1.1; lr*trust = 0.01/1.1
  // v = 0.9*{0.1, 0.2} + g' = {0.72, 1.02}
  // w = {3 - 0.72*0.01/1.1, 4 - 1.02*0.01/1.1}
  //   = {3 - 0.0065454545, 4 - 0.0092727273}
  expectValues(v, {0.72, 1.02}, "v");
  expectValues(w, {2.9934545454545, 3.9907272727273}, "w");
}

TEST(LarsTest, V06Nesterov) {
  Tensor w({2}, {3.0f, 4.0f}), g({2}, {0.6f, 0.8f}), v({2}, {0.1f, 0.2f});
  larsUpdate(w, g, v, larsV06(true), false, true);
  // TF ApplyMomentum(use_nesterov): w -= lr*trust*(g' + m*v) with v as above:
  // 0.01/1.1 * {0.63 + 0.648, 0.84 + 0.918} = {0.0116181818, 0.0159818182}
  expectValues(v, {0.72, 1.02}, "v");
  expectValues(w, {2.9883818181818, 3.9840181818182}, "w");
}

TEST(LarsTest, V06BiasIsDecayedWithoutTrust) {
  // v0.6's classifier bias: in the L2 loss, in LARS's skip list.
  Tensor b({2}, {0.5f, -0.5f}), g({2}, {0.1f, 0.3f}), v({2}, {0.2f, 0.0f});
  larsUpdate(b, g, v, larsV06(false), /*skipTrust=*/true, /*decay=*/true);
  // g' = {0.1 + 0.005, 0.3 - 0.005} = {0.105, 0.295}
  // v = {0.18 + 0.105, 0 + 0.295} = {0.285, 0.295}
  // b = {0.5 - 2*0.285, -0.5 - 2*0.295} = {-0.07, -1.09}
  expectValues(v, {0.285, 0.295}, "v");
  expectValues(b, {-0.07, -1.09}, "b");
}

TEST(LarsTest, V06BatchNormIsPlainMomentum) {
  Tensor b({2}, {0.5f, -0.5f}), g({2}, {0.1f, 0.3f}), v({2}, {0.2f, 0.0f});
  larsUpdate(b, g, v, larsV06(false), /*skipTrust=*/true, /*decay=*/false);
  // v = {0.18 + 0.1, 0.3} = {0.28, 0.3}; b = {0.5 - 0.56, -0.5 - 0.6}
  expectValues(v, {0.28, 0.3}, "v");
  expectValues(b, {-0.06, -1.1}, "b");
}

TEST(LarsTest, V06ZeroGradientUsesTrustOne) {
  Tensor w({2}, {3.0f, 4.0f}), g({2}, {0.0f, 0.0f}), v({2}, {0.1f, 0.2f});
  LarsParams p = larsV06(false);
  p.weightDecay = 0.0;
  larsUpdate(w, g, v, p, false, true);
  // |g'| = 0: trust 1; v = {0.09, 0.18}; w = {3 - 2*0.09, 4 - 2*0.18}
  expectValues(v, {0.09, 0.18}, "v");
  expectValues(w, {2.82, 3.64}, "w");
}

TEST(LarsTest, Tf2DecayedWithoutTrust) {
  Tensor b({2}, {0.5f, -0.5f}), g({2}, {0.1f, 0.3f}), v({2}, {0.2f, 0.0f});
  larsUpdate(b, g, v, lars(false), /*skipTrust=*/true, /*decay=*/true);
  // g' = {0.105, 0.295}; v = 0.9*{0.2, 0} + 2*g' = {0.39, 0.59};
  // b = {0.5 - 0.39, -0.5 - 0.59}
  expectValues(v, {0.39, 0.59}, "v");
  expectValues(b, {0.11, -1.09}, "b");
}

TEST(OptimizerTest, ShapeMismatchIsReported) {
  Tensor w({2}), g({3}), v({2});
  EXPECT_FALSE(checkOptimizerShapes(w, g, v).isOk());
  EXPECT_TRUE(checkOptimizerShapes(w, v, v).isOk());
}

} // namespace
} // namespace kiln::ref
