//===- tensor.h - The reference kernels' tensor type -----------*- C++ -*-===//
//
// Part of Kiln. A deliberately simple dense fp32 tensor: a shape and a
// row-major data vector. The reference interpreter (kiln-run) keeps every SSA
// value of the `kiln` dialect in one of these.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_REF_TENSOR_H
#define KILN_REF_TENSOR_H

#include "kiln/base/status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::ref {

using Shape = std::vector<int64_t>;

/// Number of elements of a shape (1 for the rank-0 shape {}).
int64_t numElements(const Shape &shape);

/// "[2,3,4]" — for error messages.
std::string shapeToString(const Shape &shape);

/// A dense, row-major fp32 tensor. Activations are NHWC, filters HWIO, dense
/// weights [in, out].
struct Tensor {
  Shape shape;
  std::vector<float> data;

  Tensor() = default;
  /// A zero tensor of `shape`.
  explicit Tensor(Shape shape);
  /// A tensor of `shape` holding `data`; the sizes must agree.
  Tensor(Shape shape, std::vector<float> data);
  /// A tensor of `shape` with every element equal to `value`. (A named
  /// constructor, so that `Tensor({3}, {1.0f})` can only mean "these data".)
  static Tensor filled(Shape shape, float value);

  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  int64_t dim(int64_t i) const { return shape[static_cast<size_t>(i)]; }
  int64_t size() const { return static_cast<int64_t>(data.size()); }

  float &operator[](int64_t i) { return data[static_cast<size_t>(i)]; }
  float operator[](int64_t i) const { return data[static_cast<size_t>(i)]; }

  /// Element (n, h, w, c) of a rank-4 tensor.
  float &at(int64_t n, int64_t h, int64_t w, int64_t c) {
    return data[static_cast<size_t>(offset4(n, h, w, c))];
  }
  float at(int64_t n, int64_t h, int64_t w, int64_t c) const {
    return data[static_cast<size_t>(offset4(n, h, w, c))];
  }
  /// Element (i, j) of a rank-2 tensor.
  float &at(int64_t i, int64_t j) {
    return data[static_cast<size_t>(i * shape[1] + j)];
  }
  float at(int64_t i, int64_t j) const {
    return data[static_cast<size_t>(i * shape[1] + j)];
  }

private:
  int64_t offset4(int64_t n, int64_t h, int64_t w, int64_t c) const {
    return ((n * shape[1] + h) * shape[2] + w) * shape[3] + c;
  }
};

/// Checks that `t` has exactly the shape `expected`; `what` names the operand
/// in the message.
Status checkShape(const Tensor &t, const Shape &expected, const char *what);

} // namespace kiln::ref

#endif // KILN_REF_TENSOR_H
