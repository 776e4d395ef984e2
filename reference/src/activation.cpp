//===- activation.cpp - Sigmoid, SiLU, ReLU6, hard sigmoid, hard swish ----===//
//
// Part of Kiln. The x86 lowering (ActivationOp::buildScalar) computes the
// same operations in the same order, so both round alike.
//
//===----------------------------------------------------------------------===//

#include "kiln/ref/activation.h"

#include "kiln/ref/check.h"

#include <algorithm>
#include <cmath>

namespace kiln::ref {
namespace {

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

/// min(max(v, 0), 6) with NaN propagating, as arith.maximumf/minimumf.
float relu6(float v) {
  if (std::isnan(v))
    return v;
  return std::min(std::max(v, 0.0f), 6.0f);
}

float forward(Activation kind, float x) {
  switch (kind) {
  case Activation::Sigmoid:
    return sigmoid(x);
  case Activation::SiLU:
    return x * sigmoid(x);
  case Activation::ReLU6:
    return relu6(x);
  case Activation::HardSigmoid:
    return relu6(x + 3.0f) / 6.0f;
  case Activation::HardSwish:
    return x * relu6(x + 3.0f) / 6.0f;
  }
  return x;
}

float backward(Activation kind, float dy, float x) {
  switch (kind) {
  case Activation::Sigmoid: {
    float s = sigmoid(x);
    return dy * (s * (1.0f - s));
  }
  case Activation::SiLU: {
    float s = sigmoid(x);
    return dy * (s * (1.0f + x * (1.0f - s)));
  }
  case Activation::ReLU6:
    return x > 0.0f && x < 6.0f ? dy : 0.0f;
  case Activation::HardSigmoid:
    return x > -3.0f && x < 3.0f ? dy * (1.0f / 6.0f) : 0.0f;
  case Activation::HardSwish:
    if (x < -3.0f)
      return 0.0f;
    return x <= 3.0f ? dy * (x / 3.0f + 0.5f) : dy;
  }
  return dy;
}

} // namespace

Tensor activation(Activation kind, const Tensor &x) {
  Tensor y(x.shape);
  for (int64_t i = 0; i < x.size(); ++i)
    y[i] = forward(kind, x[i]);
  return y;
}

Tensor activationBackward(Activation kind, const Tensor &dy, const Tensor &x) {
  KILN_REF_CHECK_OK(checkShape(dy, x.shape, "activationBackward dy"));
  Tensor dx(x.shape);
  for (int64_t i = 0; i < x.size(); ++i)
    dx[i] = backward(kind, dy[i], x[i]);
  return dx;
}

} // namespace kiln::ref
