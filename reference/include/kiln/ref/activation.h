//===- activation.h - Sigmoid, SiLU, ReLU6, hard sigmoid/swish -*- C++ -*-===//
//
// Part of Kiln. The functions of kiln.activation, with PyTorch's definitions
// and PyTorch's derivatives at the kinks.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_REF_ACTIVATION_H
#define KILN_REF_ACTIVATION_H

#include "kiln/ref/tensor.h"

namespace kiln::ref {

/// The kinds of kiln.activation (ActivationKind in the dialect).
enum class Activation { Sigmoid, SiLU, ReLU6, HardSigmoid, HardSwish };

/// y = f(x) elementwise:
///   sigmoid       1 / (1 + exp(-x))
///   silu          x * sigmoid(x)
///   relu6         min(max(x, 0), 6)
///   hard_sigmoid  relu6(x + 3) / 6
///   hard_swish    x * relu6(x + 3) / 6
/// NaN propagates.
Tensor activation(Activation kind, const Tensor &x);

/// dx = dy * f'(x), with f' at the kinks as PyTorch's backward kernels:
/// relu6 1 on the open interval (0, 6); hard_sigmoid 1/6 on (-3, 3);
/// hard_swish 0 below -3, x/3 + 1/2 on [-3, 3], 1 above.
Tensor activationBackward(Activation kind, const Tensor &dy, const Tensor &x);

} // namespace kiln::ref

#endif // KILN_REF_ACTIVATION_H
