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
/// The shape `a` and `b` broadcast to (numpy's rule without rank
/// extension): one rank, along each dimension equal sizes or one of them 1.
Status inferBroadcast(const Shape &a, const Shape &b, Shape &out);

/// The arithmetic of kiln.broadcast_binary.
enum class BinaryKind { Add, Sub, Mul, Div };
/// a <kind> b, each broadcast to inferBroadcast(a, b), computed in f32.
/// Squeeze-and-excitation: [N,H,W,C] * [N,1,1,C].
Tensor broadcastBinary(BinaryKind kind, const Tensor &a, const Tensor &b);
/// The gradient of broadcastBinary with respect to a (`wrtRhs` false) or b:
/// dy times the partial derivative (add: 1; sub: 1, -1; mul: b, a; div:
/// 1/b, -a/b^2), summed over the dimensions the operand broadcasts, in
/// double, rounded once, giving `gradShape` (the operand's shape). `a` and
/// `b` are the forward operands the formula reads and may be null
/// otherwise; dy has the broadcast shape.
Tensor broadcastBinaryBackward(BinaryKind kind, bool wrtRhs, const Tensor &dy,
                               const Tensor *a, const Tensor *b,
                               const Shape &gradShape);

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
