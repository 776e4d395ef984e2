//===- elementwise.cpp - ReLU, add, reshape --------------------------------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "kiln/ref/elementwise.h"

#include <cmath>

namespace kiln::ref {

Tensor relu(const Tensor &x) {
  Tensor y(x.shape);
  for (int64_t i = 0; i < x.size(); ++i)
    y[i] = std::isnan(x[i]) ? x[i] : (x[i] > 0.0f ? x[i] : 0.0f);
  return y;
}

Tensor reluBackward(const Tensor &dy, const Tensor &x) {
  KILN_REF_CHECK_OK(checkShape(dy, x.shape, "reluBackward dy"));
  Tensor dx(x.shape);
  for (int64_t i = 0; i < x.size(); ++i)
    dx[i] = x[i] > 0.0f ? dy[i] : 0.0f;
  return dx;
}

Tensor add(const Tensor &a, const Tensor &b) {
  KILN_REF_CHECK_OK(checkShape(b, a.shape, "add rhs"));
  Tensor y(a.shape);
  for (int64_t i = 0; i < a.size(); ++i)
    y[i] = a[i] + b[i];
  return y;
}

Status checkReshape(const Shape &shape, const Shape &newShape) {
  for (int64_t d : newShape)
    if (d < 0)
      return Status::error("reshape: negative dimension in " +
                           shapeToString(newShape));
  if (numElements(shape) != numElements(newShape))
    return Status::error("reshape: " + shapeToString(shape) + " and " +
                         shapeToString(newShape) +
                         " hold different numbers of elements");
  return Status::success();
}

Tensor reshape(const Tensor &x, const Shape &newShape) {
  KILN_REF_CHECK_OK(checkReshape(x.shape, newShape));
  return Tensor(newShape, x.data);
}

} // namespace kiln::ref
