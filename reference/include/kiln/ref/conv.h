//===- conv.h - 2-D convolution, forward and backward ----------*- C++ -*-===//
//
// Part of Kiln. Activations NHWC [N,H,W,C], filters HWIO [KH,KW,Cin,Cout]
// (TensorFlow). Zero padding given explicitly per side, so TF 'SAME' and
// asymmetric paddings are both expressible.
//
//   Hout = (H + pt + pb - dh*(KH-1) - 1) / sh + 1   (floor), same for W.
//   y[n,oh,ow,co] = sum_{kh,kw,ci} x[n, oh*sh - pt + kh*dh,
//                                     ow*sw - pl + kw*dw, ci] * w[kh,kw,ci,co]
//
// (out-of-range x reads as 0). Sums are accumulated in double.
//
// Grouped (G = groups): the filter is [KH,KW,Cin/G,Cout], output channel co
// belongs to group g = co / (Cout/G) and sums only that group's inputs:
//   y[n,oh,ow,co] = sum_{kh,kw,ci < Cin/G} x[..., g*(Cin/G) + ci] * w[kh,kw,ci,co]
// G = Cin is a depthwise convolution (Cout = Cin * multiplier).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_REF_CONV_H
#define KILN_REF_CONV_H

#include "kiln/ref/tensor.h"

#include <array>

namespace kiln::ref {

struct Conv2dAttrs {
  /// {sh, sw}
  std::array<int64_t, 2> strides{1, 1};
  /// {top, bottom, left, right}
  std::array<int64_t, 4> padding{0, 0, 0, 0};
  /// {dh, dw}
  std::array<int64_t, 2> dilations{1, 1};
  /// Cin and Cout are multiples of it; the filter has Cin / groups inputs.
  int64_t groups = 1;
};

/// Validates the operand shapes and attributes of a convolution and computes
/// the output shape [N, Hout, Wout, Cout].
Status inferConv2dShape(const Shape &xShape, const Shape &wShape,
                        const Conv2dAttrs &attrs, Shape &yShape);

/// y = conv2d(x, w) (+ bias[Cout], added to the double sum before rounding).
Tensor conv2d(const Tensor &x, const Tensor &w, const Conv2dAttrs &attrs,
              const Tensor *bias = nullptr);

/// dx = dL/dx given dy = dL/dy, the filter and the input shape.
Tensor conv2dBackwardData(const Tensor &dy, const Tensor &w,
                          const Shape &xShape, const Conv2dAttrs &attrs);

/// dw = dL/dw given the input x, dy = dL/dy and the filter shape.
Tensor conv2dBackwardFilter(const Tensor &x, const Tensor &dy,
                            const Shape &wShape, const Conv2dAttrs &attrs);

} // namespace kiln::ref

#endif // KILN_REF_CONV_H
