//===- conv.cpp - 2-D convolution, forward and backward --------------------===//
//
// Part of Kiln. Straightforward loops: every kernel is the definition of the
// sum it computes, with the index map of conv.h. All three kernels walk the
// same (n, oh, ow, kh, kw) positions; the backward ones scatter/gather along
// the identical map, so they are the exact adjoints of the forward.
//
//===----------------------------------------------------------------------===//

#include "kiln/ref/conv.h"

#include "kiln/ref/check.h"
#include "kiln/ref/window.h"

#include <algorithm>
#include <vector>

namespace kiln::ref {

Status inferConv2dShape(const Shape &xShape, const Shape &wShape,
                        const Conv2dAttrs &attrs, Shape &yShape) {
  if (xShape.size() != 4)
    return invalidArgumentError("conv2d: input must be NHWC (rank 4), got " +
                                shapeToString(xShape));
  if (wShape.size() != 4)
    return invalidArgumentError("conv2d: filter must be HWIO (rank 4), got " +
                                shapeToString(wShape));
  if (attrs.groups <= 0)
    return invalidArgumentError("conv2d: groups must be positive, got " +
                                std::to_string(attrs.groups));
  if (attrs.groups == 1 && xShape[3] != wShape[2])
    return invalidArgumentError(
        "conv2d: input channels " + std::to_string(xShape[3]) +
        " do not match filter input channels " + std::to_string(wShape[2]));
  if (xShape[3] != wShape[2] * attrs.groups)
    return invalidArgumentError(
        "conv2d: input channels " + std::to_string(xShape[3]) +
        " do not match " + std::to_string(attrs.groups) + " groups of " +
        std::to_string(wShape[2]) + " filter input channels");
  if (wShape[3] % attrs.groups != 0)
    return invalidArgumentError(
        "conv2d: filter output channels " + std::to_string(wShape[3]) +
        " are not a multiple of " + std::to_string(attrs.groups) + " groups");
  for (int64_t d : xShape)
    if (d < 0)
      return invalidArgumentError("conv2d: negative input dimension");
  for (int64_t d : wShape)
    if (d <= 0)
      return invalidArgumentError(
          "conv2d: filter dimensions must be positive, got " +
          shapeToString(wShape));
  for (int64_t s : attrs.strides)
    if (s <= 0)
      return invalidArgumentError("conv2d: strides must be positive");
  for (int64_t d : attrs.dilations)
    if (d <= 0)
      return invalidArgumentError("conv2d: dilations must be positive");
  for (int64_t p : attrs.padding)
    if (p < 0)
      return invalidArgumentError("conv2d: padding must be non-negative");
  int64_t effH = dilatedWindowSize(wShape[0], attrs.dilations[0]);
  int64_t effW = dilatedWindowSize(wShape[1], attrs.dilations[1]);
  int64_t padH = xShape[1] + attrs.padding[0] + attrs.padding[1];
  int64_t padW = xShape[2] + attrs.padding[2] + attrs.padding[3];
  if (padH < effH || padW < effW)
    return invalidArgumentError(
        "conv2d: dilated filter " + std::to_string(effH) + "x" +
        std::to_string(effW) + " larger than padded input " +
        std::to_string(padH) + "x" + std::to_string(padW));
  yShape = {xShape[0],
            slidingWindowOutputSize(xShape[1], attrs.padding[0],
                                    attrs.padding[1], wShape[0],
                                    attrs.strides[0], attrs.dilations[0]),
            slidingWindowOutputSize(xShape[2], attrs.padding[2],
                                    attrs.padding[3], wShape[1],
                                    attrs.strides[1], attrs.dilations[1]),
            wShape[3]};
  return Status::ok();
}

namespace {

/// The geometry shared by the three kernels. `ci` is the input channels
/// of the input tensor; `cig` and `cog` are the input and output channels
/// of one group (the filter's I and O / groups).
struct ConvGeometry {
  int64_t n, h, w, ci, kh, kw, co, oh, ow;
  int64_t sh, sw, pt, pl, dh, dw;
  int64_t groups, cig, cog;

  ConvGeometry(const Shape &xShape, const Shape &wShape,
               const Conv2dAttrs &attrs) {
    Shape yShape;
    KILN_REF_CHECK_OK(inferConv2dShape(xShape, wShape, attrs, yShape));
    n = xShape[0], h = xShape[1], w = xShape[2], ci = xShape[3];
    kh = wShape[0], kw = wShape[1], co = wShape[3];
    oh = yShape[1], ow = yShape[2];
    sh = attrs.strides[0], sw = attrs.strides[1];
    pt = attrs.padding[0], pl = attrs.padding[2];
    dh = attrs.dilations[0], dw = attrs.dilations[1];
    groups = attrs.groups, cig = wShape[2], cog = co / groups;
  }
  Shape yShape() const { return {n, oh, ow, co}; }
  /// Input row read by output row y and filter row k (may be out of range).
  int64_t inRow(int64_t y, int64_t k) const { return y * sh - pt + k * dh; }
  int64_t inCol(int64_t x, int64_t k) const { return x * sw - pl + k * dw; }
  bool inside(int64_t r, int64_t c) const {
    return r >= 0 && r < h && c >= 0 && c < w;
  }
};

} // namespace

Tensor conv2d(const Tensor &x, const Tensor &w, const Conv2dAttrs &attrs,
              const Tensor *bias) {
  ConvGeometry g(x.shape, w.shape, attrs);
  if (bias)
    KILN_REF_CHECK_OK(checkShape(*bias, {g.co}, "conv2d bias"));
  Tensor y(g.yShape());
  std::vector<double> acc(static_cast<size_t>(g.co));
  for (int64_t b = 0; b < g.n; ++b)
    for (int64_t oy = 0; oy < g.oh; ++oy)
      for (int64_t ox = 0; ox < g.ow; ++ox) {
        for (int64_t o = 0; o < g.co; ++o)
          acc[static_cast<size_t>(o)] = bias ? bias->data[size_t(o)] : 0.0;
        for (int64_t ky = 0; ky < g.kh; ++ky)
          for (int64_t kx = 0; kx < g.kw; ++kx) {
            int64_t r = g.inRow(oy, ky), c = g.inCol(ox, kx);
            if (!g.inside(r, c))
              continue;
            for (int64_t gi = 0; gi < g.groups; ++gi)
              for (int64_t i = 0; i < g.cig; ++i) {
                double xv = x.at(b, r, c, gi * g.cig + i);
                for (int64_t o = gi * g.cog; o < (gi + 1) * g.cog; ++o)
                  acc[static_cast<size_t>(o)] += xv * w.at(ky, kx, i, o);
              }
          }
        for (int64_t o = 0; o < g.co; ++o)
          y.at(b, oy, ox, o) = static_cast<float>(acc[static_cast<size_t>(o)]);
      }
  return y;
}

Tensor conv2dBackwardData(const Tensor &dy, const Tensor &w,
                          const Shape &xShape, const Conv2dAttrs &attrs) {
  ConvGeometry g(xShape, w.shape, attrs);
  KILN_REF_CHECK_OK(checkShape(dy, g.yShape(), "conv2d backward-data dy"));
  // dx[r,c,i] = sum over (oy,ox,ky,kx) mapping to (r,c) of dy[oy,ox,o]*w[...]
  std::vector<double> dx(static_cast<size_t>(numElements(xShape)), 0.0);
  for (int64_t b = 0; b < g.n; ++b)
    for (int64_t oy = 0; oy < g.oh; ++oy)
      for (int64_t ox = 0; ox < g.ow; ++ox)
        for (int64_t ky = 0; ky < g.kh; ++ky)
          for (int64_t kx = 0; kx < g.kw; ++kx) {
            int64_t r = g.inRow(oy, ky), c = g.inCol(ox, kx);
            if (!g.inside(r, c))
              continue;
            size_t base = static_cast<size_t>(((b * g.h + r) * g.w + c) * g.ci);
            for (int64_t gi = 0; gi < g.groups; ++gi)
              for (int64_t i = 0; i < g.cig; ++i) {
                double s = 0.0;
                for (int64_t o = gi * g.cog; o < (gi + 1) * g.cog; ++o)
                  s += static_cast<double>(dy.at(b, oy, ox, o)) *
                       w.at(ky, kx, i, o);
                dx[base + static_cast<size_t>(gi * g.cig + i)] += s;
              }
          }
  Tensor out(xShape);
  for (size_t i = 0; i < dx.size(); ++i)
    out.data[i] = static_cast<float>(dx[i]);
  return out;
}

Tensor conv2dBackwardFilter(const Tensor &x, const Tensor &dy,
                            const Shape &wShape, const Conv2dAttrs &attrs) {
  ConvGeometry g(x.shape, wShape, attrs);
  KILN_REF_CHECK_OK(checkShape(dy, g.yShape(), "conv2d backward-filter dy"));
  // dw[ky,kx,i,o] = sum over (b,oy,ox) of x[b, r, c, i] * dy[b,oy,ox,o]
  std::vector<double> dw(static_cast<size_t>(numElements(wShape)), 0.0);
  for (int64_t b = 0; b < g.n; ++b)
    for (int64_t oy = 0; oy < g.oh; ++oy)
      for (int64_t ox = 0; ox < g.ow; ++ox)
        for (int64_t ky = 0; ky < g.kh; ++ky)
          for (int64_t kx = 0; kx < g.kw; ++kx) {
            int64_t r = g.inRow(oy, ky), c = g.inCol(ox, kx);
            if (!g.inside(r, c))
              continue;
            for (int64_t gi = 0; gi < g.groups; ++gi)
              for (int64_t i = 0; i < g.cig; ++i) {
                double xv = x.at(b, r, c, gi * g.cig + i);
                size_t base =
                    static_cast<size_t>(((ky * g.kw + kx) * g.cig + i) * g.co);
                for (int64_t o = gi * g.cog; o < (gi + 1) * g.cog; ++o)
                  dw[base + static_cast<size_t>(o)] += xv * dy.at(b, oy, ox, o);
              }
          }
  Tensor out(wShape);
  for (size_t i = 0; i < dw.size(); ++i)
    out.data[i] = static_cast<float>(dw[i]);
  return out;
}

} // namespace kiln::ref
