//===- pool.cpp - Max, average and global average pooling ------------------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "kiln/ref/pool.h"

#include "kiln/ref/check.h"
#include "kiln/ref/window.h"

#include <algorithm>
#include <vector>

namespace kiln::ref {

Status inferPool2dShape(const Shape &xShape, const Pool2dAttrs &attrs,
                        Shape &yShape) {
  if (xShape.size() != 4)
    return invalidArgumentError("pool: input must be NHWC (rank 4), got " +
                                shapeToString(xShape));
  for (int64_t d : xShape)
    if (d < 0)
      return invalidArgumentError("pool: negative input dimension");
  for (int64_t k : attrs.window)
    if (k <= 0)
      return invalidArgumentError("pool: window must be positive");
  for (int64_t s : attrs.strides)
    if (s <= 0)
      return invalidArgumentError("pool: strides must be positive");
  for (int i = 0; i < 4; ++i) {
    int64_t p = attrs.padding[static_cast<size_t>(i)];
    if (p < 0 || p >= attrs.window[static_cast<size_t>(i / 2)])
      return invalidArgumentError(
          "pool: each padding must be in [0, window) along its axis");
  }
  int64_t padH = xShape[1] + attrs.padding[0] + attrs.padding[1];
  int64_t padW = xShape[2] + attrs.padding[2] + attrs.padding[3];
  if (padH < attrs.window[0] || padW < attrs.window[1])
    return invalidArgumentError("pool: window larger than padded input");
  // In ceil mode a last window may overhang the padding; windowAt clips it
  // to the input like the padding itself.
  yShape = {xShape[0],
            slidingWindowOutputSize(xShape[1], attrs.padding[0],
                                    attrs.padding[1], attrs.window[0],
                                    attrs.strides[0], /*dilation=*/1,
                                    attrs.ceilMode),
            slidingWindowOutputSize(xShape[2], attrs.padding[2],
                                    attrs.padding[3], attrs.window[1],
                                    attrs.strides[1], /*dilation=*/1,
                                    attrs.ceilMode),
            xShape[3]};
  return Status::ok();
}

namespace {

/// The rows [r0, r1) and columns [c0, c1) of the input that window (oy, ox)
/// covers, clipped to the input (padding excluded).
struct Window {
  int64_t r0, r1, c0, c1;
  int64_t count() const { return (r1 - r0) * (c1 - c0); }
};

Window windowAt(const Shape &xShape, const Pool2dAttrs &a, int64_t oy,
                int64_t ox) {
  int64_t r = oy * a.strides[0] - a.padding[0];
  int64_t c = ox * a.strides[1] - a.padding[2];
  return {std::max<int64_t>(r, 0), std::min(r + a.window[0], xShape[1]),
          std::max<int64_t>(c, 0), std::min(c + a.window[1], xShape[2])};
}

Shape poolShape(const Shape &xShape, const Pool2dAttrs &attrs) {
  Shape yShape;
  KILN_REF_CHECK_OK(inferPool2dShape(xShape, attrs, yShape));
  return yShape;
}

} // namespace

Tensor maxPool(const Tensor &x, const Pool2dAttrs &attrs) {
  Tensor y(poolShape(x.shape, attrs));
  for (int64_t n = 0; n < y.dim(0); ++n)
    for (int64_t oy = 0; oy < y.dim(1); ++oy)
      for (int64_t ox = 0; ox < y.dim(2); ++ox) {
        Window win = windowAt(x.shape, attrs, oy, ox);
        for (int64_t c = 0; c < y.dim(3); ++c) {
          float best = x.at(n, win.r0, win.c0, c);
          for (int64_t r = win.r0; r < win.r1; ++r)
            for (int64_t q = win.c0; q < win.c1; ++q)
              best = std::max(best, x.at(n, r, q, c));
          y.at(n, oy, ox, c) = best;
        }
      }
  return y;
}

Tensor maxPoolBackward(const Tensor &dy, const Tensor &x,
                       const Pool2dAttrs &attrs) {
  KILN_REF_CHECK_OK(checkShape(dy, poolShape(x.shape, attrs), "maxPool dy"));
  std::vector<double> dx(x.data.size(), 0.0);
  for (int64_t n = 0; n < dy.dim(0); ++n)
    for (int64_t oy = 0; oy < dy.dim(1); ++oy)
      for (int64_t ox = 0; ox < dy.dim(2); ++ox) {
        Window win = windowAt(x.shape, attrs, oy, ox);
        for (int64_t c = 0; c < dy.dim(3); ++c) {
          // First maximum in scan order: replace only on a strictly larger
          // value.
          int64_t bestR = win.r0, bestC = win.c0;
          float best = x.at(n, bestR, bestC, c);
          for (int64_t r = win.r0; r < win.r1; ++r)
            for (int64_t q = win.c0; q < win.c1; ++q)
              if (x.at(n, r, q, c) > best) {
                best = x.at(n, r, q, c);
                bestR = r;
                bestC = q;
              }
          size_t i = static_cast<size_t>(
              ((n * x.dim(1) + bestR) * x.dim(2) + bestC) * x.dim(3) + c);
          dx[i] += dy.at(n, oy, ox, c);
        }
      }
  Tensor out(x.shape);
  for (size_t i = 0; i < dx.size(); ++i)
    out.data[i] = static_cast<float>(dx[i]);
  return out;
}

Tensor avgPool(const Tensor &x, const Pool2dAttrs &attrs) {
  Tensor y(poolShape(x.shape, attrs));
  for (int64_t n = 0; n < y.dim(0); ++n)
    for (int64_t oy = 0; oy < y.dim(1); ++oy)
      for (int64_t ox = 0; ox < y.dim(2); ++ox) {
        Window win = windowAt(x.shape, attrs, oy, ox);
        for (int64_t c = 0; c < y.dim(3); ++c) {
          double sum = 0.0;
          for (int64_t r = win.r0; r < win.r1; ++r)
            for (int64_t q = win.c0; q < win.c1; ++q)
              sum += x.at(n, r, q, c);
          y.at(n, oy, ox, c) =
              static_cast<float>(sum / static_cast<double>(win.count()));
        }
      }
  return y;
}

Tensor avgPoolBackward(const Tensor &dy, const Shape &xShape,
                       const Pool2dAttrs &attrs) {
  KILN_REF_CHECK_OK(checkShape(dy, poolShape(xShape, attrs), "avgPool dy"));
  std::vector<double> dx(static_cast<size_t>(numElements(xShape)), 0.0);
  for (int64_t n = 0; n < dy.dim(0); ++n)
    for (int64_t oy = 0; oy < dy.dim(1); ++oy)
      for (int64_t ox = 0; ox < dy.dim(2); ++ox) {
        Window win = windowAt(xShape, attrs, oy, ox);
        for (int64_t c = 0; c < dy.dim(3); ++c) {
          double g = dy.at(n, oy, ox, c) / static_cast<double>(win.count());
          for (int64_t r = win.r0; r < win.r1; ++r)
            for (int64_t q = win.c0; q < win.c1; ++q)
              dx[static_cast<size_t>(((n * xShape[1] + r) * xShape[2] + q) *
                                         xShape[3] +
                                     c)] += g;
        }
      }
  Tensor out(xShape);
  for (size_t i = 0; i < dx.size(); ++i)
    out.data[i] = static_cast<float>(dx[i]);
  return out;
}

Tensor globalAvgPool(const Tensor &x) {
  KILN_REF_CHECK(x.rank() == 4 && x.dim(1) * x.dim(2) > 0,
                 "globalAvgPool: input must be non-empty NHWC, got " +
                     shapeToString(x.shape));
  Tensor y(Shape{x.dim(0), x.dim(3)});
  double count = static_cast<double>(x.dim(1) * x.dim(2));
  for (int64_t n = 0; n < x.dim(0); ++n)
    for (int64_t c = 0; c < x.dim(3); ++c) {
      double sum = 0.0;
      for (int64_t r = 0; r < x.dim(1); ++r)
        for (int64_t q = 0; q < x.dim(2); ++q)
          sum += x.at(n, r, q, c);
      y.at(n, c) = static_cast<float>(sum / count);
    }
  return y;
}

Tensor globalAvgPoolBackward(const Tensor &dy, const Shape &xShape) {
  KILN_REF_CHECK(xShape.size() == 4 && xShape[1] * xShape[2] > 0,
                 "globalAvgPoolBackward: input shape must be non-empty NHWC, "
                 "got " + shapeToString(xShape));
  KILN_REF_CHECK_OK(
      checkShape(dy, Shape{xShape[0], xShape[3]}, "globalAvgPool dy"));
  Tensor dx(xShape);
  double count = static_cast<double>(xShape[1] * xShape[2]);
  for (int64_t n = 0; n < xShape[0]; ++n)
    for (int64_t r = 0; r < xShape[1]; ++r)
      for (int64_t q = 0; q < xShape[2]; ++q)
        for (int64_t c = 0; c < xShape[3]; ++c)
          dx.at(n, r, q, c) = static_cast<float>(dy.at(n, c) / count);
  return dx;
}

} // namespace kiln::ref
