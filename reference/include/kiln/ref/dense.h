//===- dense.h - Fully connected layer -------------------------*- C++ -*-===//
//
// Part of Kiln. x [N,K], w [K,M] (in x out), optional bias [M]:
//   y[n,m] = sum_k x[n,k]*w[k,m] + b[m]
// Sums accumulate in double.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_REF_DENSE_H
#define KILN_REF_DENSE_H

#include "kiln/ref/tensor.h"

namespace kiln::ref {

struct DenseGrads {
  /// dy * w^T, [N,K]
  Tensor dx;
  /// x^T * dy, [K,M]
  Tensor dw;
  /// sum over n of dy, [M]; default-constructed (no data) without bias.
  Tensor db;
};

/// Validates x [N,K], w [K,M] and (if given) bias [M]; computes [N,M].
Status inferDenseShape(const Shape &xShape, const Shape &wShape,
                       const Shape *biasShape, Shape &yShape);

/// y = x*w (no bias).
Tensor dense(const Tensor &x, const Tensor &w);
/// y = x*w + b.
Tensor dense(const Tensor &x, const Tensor &w, const Tensor &bias);

/// Gradients of dense; db is computed only if `withBias`.
DenseGrads denseBackward(const Tensor &dy, const Tensor &x, const Tensor &w,
                         bool withBias);

} // namespace kiln::ref

#endif // KILN_REF_DENSE_H
