//===- ResidualNetTest.cpp - Whole-network gradient check ------------------===//
//
// Part of Kiln. A small residual network composed from the reference kernels,
// forward and (hand-written) backward, checked against finite differences of
// the loss for every parameter and for the input:
//
//   x [2,6,6,3]
//   ├─ conv 3x3/2 (TF 'SAME': pad 0 top/left, 1 bottom/right) → BN → ReLU
//   │     → conv 3x3/1 pad 1 → BN ─┐
//   └─ conv 1x1/2 (projection) ────+─→ ReLU → global avg pool → dense+bias
//                                                → softmax CE (ls = 0.1)
//
//===----------------------------------------------------------------------===//

#include "GradCheck.h"

#include "kiln/ref/ref.h"

#include "gtest/gtest.h"

namespace kiln::ref {
namespace {

using test::expectGradient;
using test::randomTensor;

constexpr float kEps = 1e-3f;
constexpr float kMomentum = 0.9f;
constexpr float kLabelSmoothing = 0.1f;

struct Params {
  Tensor w1, gamma1, beta1, w2, gamma2, beta2, wProj, wFc, bFc;
};

struct Net {
  Conv2dAttrs conv1, conv2, proj;
  Tensor runningMean, runningVar;
  std::vector<int32_t> labels{1, 4};

  Net() : runningMean({4}), runningVar(Tensor::filled({4}, 1.0f)) {
    conv1.strides = {2, 2};
    conv1.padding = {0, 1, 0, 1};
    conv2.padding = {1, 1, 1, 1};
    proj.strides = {2, 2};
  }

  /// Every intermediate value of one forward pass.
  struct Forward {
    Tensor c1, h1, c2, s, a, h2, p, logits;
    BatchNormTrainResult bn1, bn2;
    double loss = 0.0;
  };

  Forward forward(const Tensor &x, const Params &q) const {
    Forward f;
    f.c1 = conv2d(x, q.w1, conv1);
    f.bn1 = batchNormTrain(f.c1, q.gamma1, q.beta1, runningMean, runningVar,
                           kEps, kMomentum);
    f.h1 = relu(f.bn1.y);
    f.c2 = conv2d(f.h1, q.w2, conv2);
    f.bn2 = batchNormTrain(f.c2, q.gamma2, q.beta2, runningMean, runningVar,
                           kEps, kMomentum);
    f.s = conv2d(x, q.wProj, proj);
    f.a = add(f.bn2.y, f.s);
    f.h2 = relu(f.a);
    f.p = globalAvgPool(f.h2);
    f.logits = dense(f.p, q.wFc, q.bFc);
    EXPECT_TRUE(
        softmaxCrossEntropy(f.logits, labels, kLabelSmoothing, f.loss).isOk());
    return f;
  }

  struct Grads {
    Tensor x, w1, gamma1, beta1, w2, gamma2, beta2, wProj, wFc, bFc;
  };

  Grads backward(const Tensor &x, const Params &q, const Forward &f) const {
    Grads g;
    Tensor dLogits;
    EXPECT_TRUE(softmaxCrossEntropyBackward(f.logits, labels, kLabelSmoothing,
                                            1.0f, dLogits)
                    .isOk());
    DenseGrads fc = denseBackward(dLogits, f.p, q.wFc, /*withBias=*/true);
    g.wFc = fc.dw;
    g.bFc = fc.db;
    Tensor dA = reluBackward(globalAvgPoolBackward(fc.dx, f.h2.shape), f.a);
    // add: dA flows unchanged into both branches.
    g.wProj = conv2dBackwardFilter(x, dA, q.wProj.shape, proj);
    BatchNormGrads bn2 = batchNormBackward(dA, f.c2, q.gamma2, f.bn2.batchMean,
                                           f.bn2.batchVar, kEps);
    g.gamma2 = bn2.dgamma;
    g.beta2 = bn2.dbeta;
    g.w2 = conv2dBackwardFilter(f.h1, bn2.dx, q.w2.shape, conv2);
    Tensor dH1 = conv2dBackwardData(bn2.dx, q.w2, f.h1.shape, conv2);
    BatchNormGrads bn1 =
        batchNormBackward(reluBackward(dH1, f.bn1.y), f.c1, q.gamma1,
                          f.bn1.batchMean, f.bn1.batchVar, kEps);
    g.gamma1 = bn1.dgamma;
    g.beta1 = bn1.dbeta;
    g.w1 = conv2dBackwardFilter(x, bn1.dx, q.w1.shape, conv1);
    g.x = add(conv2dBackwardData(bn1.dx, q.w1, x.shape, conv1),
              conv2dBackwardData(dA, q.wProj, x.shape, proj));
    return g;
  }
};

std::vector<bool> positive(const Tensor &t) {
  std::vector<bool> mask(t.data.size());
  for (size_t i = 0; i < mask.size(); ++i)
    mask[i] = t.data[i] > 0.0f;
  return mask;
}

TEST(ResidualNetTest, GradientsMatchFiniteDifferences) {
  std::mt19937 rng(2024);
  Tensor x = randomTensor({2, 6, 6, 3}, rng);
  Params q{randomTensor({3, 3, 3, 4}, rng, -0.5f, 0.5f),
           randomTensor({4}, rng, 0.5f, 1.5f),
           randomTensor({4}, rng, -0.2f, 0.2f),
           randomTensor({3, 3, 4, 4}, rng, -0.5f, 0.5f),
           randomTensor({4}, rng, 0.5f, 1.5f),
           randomTensor({4}, rng, -0.2f, 0.2f),
           randomTensor({1, 1, 3, 4}, rng, -0.5f, 0.5f),
           randomTensor({4, 5}, rng, -1.0f, 1.0f),
           randomTensor({5}, rng, -0.1f, 0.1f)};
  Net net;
  Net::Forward base = net.forward(x, q);
  ASSERT_EQ(base.logits.shape, (Shape{2, 5}));
  Net::Grads g = net.backward(x, q, base);

  // The loss is piecewise smooth: a finite difference is only meaningful if
  // no ReLU input changes sign; otherwise the check retries a smaller step.
  std::vector<bool> mask1 = positive(base.bn1.y), mask2 = positive(base.a);
  test::Objective loss = [&]() -> std::optional<double> {
    Net::Forward f = net.forward(x, q);
    if (positive(f.bn1.y) != mask1 || positive(f.a) != mask2)
      return std::nullopt;
    return f.loss;
  };
  expectGradient("x", x, g.x, loss);
  expectGradient("w1", q.w1, g.w1, loss);
  expectGradient("gamma1", q.gamma1, g.gamma1, loss);
  expectGradient("beta1", q.beta1, g.beta1, loss);
  expectGradient("w2", q.w2, g.w2, loss);
  expectGradient("gamma2", q.gamma2, g.gamma2, loss);
  expectGradient("beta2", q.beta2, g.beta2, loss);
  expectGradient("wProj", q.wProj, g.wProj, loss);
  expectGradient("wFc", q.wFc, g.wFc, loss);
  expectGradient("bFc", q.bFc, g.bFc, loss);
}

} // namespace
} // namespace kiln::ref
