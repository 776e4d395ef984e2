//===- elementwise.cpp - ReLU, add, broadcast multiply, reshape -----------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "kiln/ref/elementwise.h"

#include "kiln/ref/broadcast.h"
#include "kiln/ref/check.h"

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

Status checkBroadcast(const Shape &small, const Shape &full) {
  // `small` broadcasts to `full` when broadcasting both gives `full`.
  bool ok = small.size() == full.size();
  for (size_t i = 0; ok && i < full.size(); ++i) {
    int64_t out = 0;
    ok = broadcastDimension(small[i], full[i], out) && out == full[i];
  }
  if (!ok)
    return invalidArgumentError("broadcast: " + shapeToString(small) +
                                " does not broadcast to " +
                                shapeToString(full));
  return Status::ok();
}

namespace {
/// For each element of `full` (row-major), the index of the element of
/// `small` (which broadcasts to it) that it pairs with.
std::vector<int64_t> broadcastIndices(const Shape &small, const Shape &full) {
  KILN_REF_CHECK_OK(checkBroadcast(small, full));
  std::vector<int64_t> out(static_cast<size_t>(numElements(full)));
  size_t rank = full.size();
  std::vector<int64_t> index(rank, 0);
  for (size_t flat = 0; flat < out.size(); ++flat) {
    int64_t at = 0;
    for (size_t d = 0; d < rank; ++d)
      at = at * small[d] + (small[d] == 1 ? 0 : index[d]);
    out[flat] = at;
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < full[d])
        break;
      index[d] = 0;
    }
  }
  return out;
}
} // namespace

Status inferBroadcast(const Shape &a, const Shape &b, Shape &out) {
  out.assign(a.size(), 0);
  if (!broadcastShapes(a.data(), a.size(), b.data(), b.size(), out.data()))
    return invalidArgumentError("broadcast: " + shapeToString(a) + " and " +
                                shapeToString(b) + " do not broadcast");
  return Status::ok();
}

namespace {
float binary(BinaryKind kind, float a, float b) {
  switch (kind) {
  case BinaryKind::Add:
    return a + b;
  case BinaryKind::Sub:
    return a - b;
  case BinaryKind::Mul:
    return a * b;
  case BinaryKind::Div:
    return a / b;
  }
  return 0.0f;
}
} // namespace

Tensor broadcastBinary(BinaryKind kind, const Tensor &a, const Tensor &b) {
  Shape shape;
  KILN_REF_CHECK_OK(inferBroadcast(a.shape, b.shape, shape));
  std::vector<int64_t> atA = broadcastIndices(a.shape, shape);
  std::vector<int64_t> atB = broadcastIndices(b.shape, shape);
  Tensor y(shape);
  for (size_t i = 0; i < y.data.size(); ++i)
    y.data[i] = binary(kind, a.data[static_cast<size_t>(atA[i])],
                       b.data[static_cast<size_t>(atB[i])]);
  return y;
}

Tensor broadcastBinaryBackward(BinaryKind kind, bool wrtRhs, const Tensor &dy,
                               const Tensor *a, const Tensor *b,
                               const Shape &gradShape) {
  bool needA = (kind == BinaryKind::Mul || kind == BinaryKind::Div) && wrtRhs;
  bool needB = (kind == BinaryKind::Mul && !wrtRhs) || kind == BinaryKind::Div;
  KILN_REF_CHECK((!needA || a) && (!needB || b),
                 "broadcastBinaryBackward: a forward operand is missing");
  std::vector<int64_t> atGrad = broadcastIndices(gradShape, dy.shape);
  std::vector<int64_t> atA, atB;
  if (needA)
    atA = broadcastIndices(a->shape, dy.shape);
  if (needB)
    atB = broadcastIndices(b->shape, dy.shape);
  std::vector<double> sum(static_cast<size_t>(numElements(gradShape)), 0.0);
  for (size_t i = 0; i < dy.data.size(); ++i) {
    double g = dy.data[i];
    double x = needA ? a->data[static_cast<size_t>(atA[i])] : 0.0;
    double y = needB ? b->data[static_cast<size_t>(atB[i])] : 0.0;
    double term = g;
    switch (kind) {
    case BinaryKind::Add:
      break;
    case BinaryKind::Sub:
      term = wrtRhs ? -g : g;
      break;
    case BinaryKind::Mul:
      term = g * (wrtRhs ? x : y);
      break;
    case BinaryKind::Div:
      term = wrtRhs ? -g * x / (y * y) : g / y;
      break;
    }
    sum[static_cast<size_t>(atGrad[i])] += term;
  }
  Tensor grad(gradShape);
  for (size_t i = 0; i < sum.size(); ++i)
    grad.data[i] = static_cast<float>(sum[i]);
  return grad;
}

Tensor biasAdd(const Tensor &x, const Tensor &b) {
  KILN_REF_CHECK_OK(
      checkShape(b, {x.shape.empty() ? 0 : x.shape.back()}, "biasAdd bias"));
  int64_t channels = b.size();
  Tensor y(x.shape);
  for (int64_t i = 0; i < x.size(); ++i)
    y[i] = x[i] + b[i % channels];
  return y;
}

Tensor biasAddBackward(const Tensor &dy) {
  int64_t channels = dy.shape.empty() ? 0 : dy.shape.back();
  std::vector<double> sum(static_cast<size_t>(channels), 0.0);
  for (int64_t i = 0; i < dy.size(); ++i)
    sum[static_cast<size_t>(i % channels)] += dy[i];
  Tensor db({channels});
  for (size_t c = 0; c < sum.size(); ++c)
    db.data[c] = static_cast<float>(sum[c]);
  return db;
}

Status checkReshape(const Shape &shape, const Shape &newShape) {
  for (int64_t d : newShape)
    if (d < 0)
      return invalidArgumentError("reshape: negative dimension in " +
                                  shapeToString(newShape));
  if (numElements(shape) != numElements(newShape))
    return invalidArgumentError("reshape: " + shapeToString(shape) + " and " +
                                shapeToString(newShape) +
                                " hold different numbers of elements");
  return Status::ok();
}

Tensor reshape(const Tensor &x, const Shape &newShape) {
  KILN_REF_CHECK_OK(checkReshape(x.shape, newShape));
  return Tensor(newShape, x.data);
}

} // namespace kiln::ref
