//===- movement.cpp - Concat, slices, channel shuffle, transpose ----------===//
//
// Part of Kiln. A row-major tensor seen along one axis is [outer, extent,
// inner]: concat and slices copy runs of `inner` elements.
//
//===----------------------------------------------------------------------===//

#include "kiln/ref/movement.h"

#include "kiln/ref/check.h"

#include <algorithm>

namespace kiln::ref {

namespace {
/// The product of the dimensions before and after `axis`.
struct AxisView {
  int64_t outer = 1, inner = 1;
  AxisView(const Shape &shape, int64_t axis) {
    for (int64_t d = 0; d < int64_t(shape.size()); ++d) {
      if (d < axis)
        outer *= shape[size_t(d)];
      else if (d > axis)
        inner *= shape[size_t(d)];
    }
  }
};
} // namespace

Status inferConcatShape(const std::vector<Shape> &shapes, int64_t axis,
                        Shape &out) {
  if (shapes.empty())
    return invalidArgumentError("concat: no inputs");
  const Shape &first = shapes.front();
  if (axis < 0 || axis >= int64_t(first.size()))
    return invalidArgumentError("concat: axis " + std::to_string(axis) +
                                " of " + shapeToString(first));
  out = first;
  out[size_t(axis)] = 0;
  for (const Shape &shape : shapes) {
    bool fits = shape.size() == first.size();
    for (size_t d = 0; fits && d < shape.size(); ++d)
      fits = int64_t(d) == axis || shape[d] == first[d];
    if (!fits)
      return invalidArgumentError("concat: " + shapeToString(shape) + " and " +
                                  shapeToString(first) +
                                  " differ outside axis " +
                                  std::to_string(axis));
    out[size_t(axis)] += shape[size_t(axis)];
  }
  return Status::ok();
}

Tensor concat(const std::vector<Tensor> &inputs, int64_t axis) {
  std::vector<Shape> shapes;
  for (const Tensor &t : inputs)
    shapes.push_back(t.shape);
  Shape shape;
  KILN_REF_CHECK_OK(inferConcatShape(shapes, axis, shape));
  Tensor y(shape);
  AxisView view(shape, axis);
  int64_t rowOut = shape[size_t(axis)] * view.inner, offset = 0;
  for (const Tensor &x : inputs) {
    int64_t row = x.dim(axis) * view.inner;
    for (int64_t o = 0; o < view.outer; ++o)
      std::copy_n(x.data.begin() + o * row, row,
                  y.data.begin() + o * rowOut + offset);
    offset += row;
  }
  return y;
}

Status checkSlice(const Shape &shape, int64_t axis, int64_t start,
                  int64_t size) {
  if (axis < 0 || axis >= int64_t(shape.size()))
    return invalidArgumentError("slice: axis " + std::to_string(axis) +
                                " of " + shapeToString(shape));
  if (start < 0 || size <= 0 || start + size > shape[size_t(axis)])
    return invalidArgumentError(
        "slice: [" + std::to_string(start) + ", " +
        std::to_string(start + size) + ") of axis " + std::to_string(axis) +
        " of " + shapeToString(shape));
  return Status::ok();
}

Tensor slice(const Tensor &x, int64_t axis, int64_t start, int64_t size) {
  KILN_REF_CHECK_OK(checkSlice(x.shape, axis, start, size));
  Shape shape = x.shape;
  shape[size_t(axis)] = size;
  Tensor y(shape);
  AxisView view(x.shape, axis);
  int64_t rowIn = x.dim(axis) * view.inner, row = size * view.inner;
  for (int64_t o = 0; o < view.outer; ++o)
    std::copy_n(x.data.begin() + o * rowIn + start * view.inner, row,
                y.data.begin() + o * row);
  return y;
}

Tensor sliceBackward(const Tensor &dy, int64_t axis, int64_t start,
                     int64_t inputSize) {
  KILN_REF_CHECK(axis >= 0 && axis < dy.rank(),
                 "sliceBackward: axis out of range");
  Shape shape = dy.shape;
  shape[size_t(axis)] = inputSize;
  KILN_REF_CHECK_OK(checkSlice(shape, axis, start, dy.dim(axis)));
  Tensor dx(shape);
  AxisView view(shape, axis);
  int64_t rowIn = inputSize * view.inner, row = dy.dim(axis) * view.inner;
  for (int64_t o = 0; o < view.outer; ++o)
    std::copy_n(dy.data.begin() + o * row, row,
                dx.data.begin() + o * rowIn + start * view.inner);
  return dx;
}

Status checkChannelShuffle(const Shape &shape, int64_t groups) {
  if (shape.size() != 4 || groups <= 0 || shape[3] % groups != 0)
    return invalidArgumentError("channelShuffle: " + shapeToString(shape) +
                                " in " + std::to_string(groups) +
                                " groups (rank 4, channels a multiple of the "
                                "groups)");
  return Status::ok();
}

Tensor channelShuffle(const Tensor &x, int64_t groups) {
  KILN_REF_CHECK_OK(checkChannelShuffle(x.shape, groups));
  int64_t channels = x.dim(3), perGroup = channels / groups;
  Tensor y(x.shape);
  for (int64_t p = 0; p < x.size() / channels; ++p)
    for (int64_t g = 0; g < groups; ++g)
      for (int64_t k = 0; k < perGroup; ++k)
        y[p * channels + k * groups + g] = x[p * channels + g * perGroup + k];
  return y;
}

Status checkTranspose(const Shape &shape,
                      const std::vector<int64_t> &permutation) {
  std::vector<bool> seen(shape.size(), false);
  bool valid = permutation.size() == shape.size();
  for (size_t i = 0; valid && i < permutation.size(); ++i) {
    int64_t p = permutation[i];
    valid = p >= 0 && p < int64_t(shape.size()) && !seen[size_t(p)];
    if (valid)
      seen[size_t(p)] = true;
  }
  if (!valid)
    return invalidArgumentError("transpose: " + shapeToString(permutation) +
                                " does not permute the dimensions of " +
                                shapeToString(shape));
  return Status::ok();
}

Tensor transpose(const Tensor &x, const std::vector<int64_t> &permutation) {
  KILN_REF_CHECK_OK(checkTranspose(x.shape, permutation));
  size_t rank = permutation.size();
  Shape shape(rank);
  for (size_t i = 0; i < rank; ++i)
    shape[i] = x.shape[size_t(permutation[i])];
  // The input's row-major strides, taken in the output's dimension order.
  std::vector<int64_t> inStride(rank, 1), stride(rank);
  for (size_t d = rank; d-- > 1;)
    inStride[d - 1] = inStride[d] * x.shape[d];
  for (size_t i = 0; i < rank; ++i)
    stride[i] = inStride[size_t(permutation[i])];
  Tensor y(shape);
  std::vector<int64_t> index(rank, 0);
  for (int64_t out = 0; out < y.size(); ++out) {
    int64_t in = 0;
    for (size_t i = 0; i < rank; ++i)
      in += index[i] * stride[i];
    y[out] = x[in];
    for (size_t i = rank; i-- > 0;) {
      if (++index[i] < shape[i])
        break;
      index[i] = 0;
    }
  }
  return y;
}

} // namespace kiln::ref
