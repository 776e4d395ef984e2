//===- tensor.cpp - The reference kernels' tensor type ---------------------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "kiln/ref/tensor.h"

#include "kiln/ref/check.h"

#include <algorithm>
#include <utility>

namespace kiln::ref {

int64_t numElements(const Shape &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::string shapeToString(const Shape &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += ",";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

namespace {

/// Element count of a shape, aborting on a negative dimension (which would
/// otherwise turn into a huge allocation).
size_t checkedCount(const Shape &shape) {
  for (int64_t d : shape)
    KILN_REF_CHECK(d >= 0, "negative dimension in " + shapeToString(shape));
  return static_cast<size_t>(numElements(shape));
}

} // namespace

Tensor::Tensor(Shape shape)
    : shape(std::move(shape)), data(checkedCount(this->shape), 0.0f) {}

Tensor::Tensor(Shape shape, std::vector<float> data)
    : shape(std::move(shape)), data(std::move(data)) {
  KILN_REF_CHECK(this->data.size() == checkedCount(this->shape),
                 "tensor of shape " + shapeToString(this->shape) + " given " +
                     std::to_string(this->data.size()) + " elements");
}

Tensor Tensor::filled(Shape shape, float value) {
  Tensor t(std::move(shape));
  std::fill(t.data.begin(), t.data.end(), value);
  return t;
}

Status checkShape(const Tensor &t, const Shape &expected, const char *what) {
  if (t.shape != expected)
    return invalidArgumentError(std::string(what) + " has shape " +
                                shapeToString(t.shape) + ", expected " +
                                shapeToString(expected));
  if (static_cast<int64_t>(t.data.size()) != numElements(t.shape))
    return invalidArgumentError(
        std::string(what) + " holds " + std::to_string(t.data.size()) +
        " elements for shape " + shapeToString(t.shape));
  return Status::ok();
}

} // namespace kiln::ref
