//===- dense.cpp - Fully connected layer -----------------------------------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "kiln/ref/dense.h"

#include "kiln/ref/check.h"
namespace kiln::ref {

Status inferDenseShape(const Shape &xShape, const Shape &wShape,
                       const Shape *biasShape, Shape &yShape) {
  if (xShape.size() != 2 || wShape.size() != 2)
    return invalidArgumentError("dense: x and w must be rank 2, got " +
                                shapeToString(xShape) + " and " +
                                shapeToString(wShape));
  if (xShape[1] != wShape[0])
    return invalidArgumentError("dense: x " + shapeToString(xShape) +
                                " and w " + shapeToString(wShape) +
                                " disagree on the inner dimension");
  if (biasShape && *biasShape != Shape{wShape[1]})
    return invalidArgumentError("dense: bias has shape " +
                                shapeToString(*biasShape) + ", expected [" +
                                std::to_string(wShape[1]) + "]");
  yShape = {xShape[0], wShape[1]};
  return Status::ok();
}

namespace {

Tensor denseImpl(const Tensor &x, const Tensor &w, const Tensor *bias) {
  Shape yShape;
  KILN_REF_CHECK_OK(
      inferDenseShape(x.shape, w.shape, bias ? &bias->shape : nullptr, yShape));
  int64_t n = x.dim(0), k = x.dim(1), m = w.dim(1);
  Tensor y(yShape);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m; ++j) {
      double s = bias ? static_cast<double>((*bias)[j]) : 0.0;
      for (int64_t p = 0; p < k; ++p)
        s += static_cast<double>(x.at(i, p)) * w.at(p, j);
      y.at(i, j) = static_cast<float>(s);
    }
  return y;
}

} // namespace

Tensor dense(const Tensor &x, const Tensor &w) {
  return denseImpl(x, w, nullptr);
}

Tensor dense(const Tensor &x, const Tensor &w, const Tensor &bias) {
  return denseImpl(x, w, &bias);
}

DenseGrads denseBackward(const Tensor &dy, const Tensor &x, const Tensor &w,
                         bool withBias) {
  Shape yShape;
  KILN_REF_CHECK_OK(inferDenseShape(x.shape, w.shape, nullptr, yShape));
  KILN_REF_CHECK_OK(checkShape(dy, yShape, "dense backward dy"));
  int64_t n = x.dim(0), k = x.dim(1), m = w.dim(1);
  DenseGrads g{Tensor(x.shape), Tensor(w.shape),
               withBias ? Tensor(Shape{m}) : Tensor()};
  for (int64_t i = 0; i < n; ++i)
    for (int64_t p = 0; p < k; ++p) {
      double s = 0.0;
      for (int64_t j = 0; j < m; ++j)
        s += static_cast<double>(dy.at(i, j)) * w.at(p, j);
      g.dx.at(i, p) = static_cast<float>(s);
    }
  for (int64_t p = 0; p < k; ++p)
    for (int64_t j = 0; j < m; ++j) {
      double s = 0.0;
      for (int64_t i = 0; i < n; ++i)
        s += static_cast<double>(x.at(i, p)) * dy.at(i, j);
      g.dw.at(p, j) = static_cast<float>(s);
    }
  if (withBias)
    for (int64_t j = 0; j < m; ++j) {
      double s = 0.0;
      for (int64_t i = 0; i < n; ++i)
        s += dy.at(i, j);
      g.db[j] = static_cast<float>(s);
    }
  return g;
}

} // namespace kiln::ref
