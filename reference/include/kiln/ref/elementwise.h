//===- elementwise.h - ReLU, add, reshape ----------------------*- C++ -*-===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_REF_ELEMENTWISE_H
#define KILN_REF_ELEMENTWISE_H

#include "kiln/ref/tensor.h"

namespace kiln::ref {

/// y = max(x, 0). NaN propagates.
Tensor relu(const Tensor &x);
/// dx = dy where x > 0, else 0 (the subgradient at 0 is 0, as in TF).
Tensor reluBackward(const Tensor &dy, const Tensor &x);

/// a + b, same shape (no broadcasting). The backward of add is the identity
/// for both operands.
Tensor add(const Tensor &a, const Tensor &b);

/// Validates that `small` broadcasts to `full`: one rank, each dimension
/// equal to `full`'s or 1.
Status checkBroadcast(const Shape &small, const Shape &full);
/// a * b with b broadcast to a's shape (checkBroadcast); the result has
/// a's shape. Squeeze-and-excitation: [N,H,W,C] x [N,1,1,C].
Tensor broadcastMul(const Tensor &a, const Tensor &b);
/// The gradient of broadcastMul with respect to b (of shape `bShape`):
/// dy * a summed over the dimensions b broadcasts, in double, rounded once.
/// The gradient with respect to a is broadcastMul(dy, b).
Tensor broadcastMulBackward(const Tensor &dy, const Tensor &a,
                            const Shape &bShape);

/// x[..., c] + b[c]: a per-channel bias over the last dimension. The
/// input's gradient is dy; the bias's is biasAddBackward(dy).
Tensor biasAdd(const Tensor &x, const Tensor &b);
/// dy summed over every dimension but the last, in double, rounded once.
Tensor biasAddBackward(const Tensor &dy);

/// Validates that `newShape` holds as many elements as `shape`.
Status checkReshape(const Shape &shape, const Shape &newShape);
/// Same data under a new shape (row-major order is unchanged). The backward
/// is a reshape back.
Tensor reshape(const Tensor &x, const Shape &newShape);

} // namespace kiln::ref

#endif // KILN_REF_ELEMENTWISE_H
