//===- window.h - The output size of a sliding window -----------*- C++ -*-===//
//
// Part of Kiln. The one rule for how many positions a window (a convolution's
// filter, a pool's window) takes along one axis of a zero-padded input:
//
//   out = (in + padBefore + padAfter - dilation * (window - 1) - 1) / stride + 1
//
// and, for pooling's ceil mode, the same quotient rounded up, less a last
// window that would start in the after-padding (PyTorch's rule).
//
// Plain C++17 with no dependencies, so the dialect's shape inference, the
// reference kernels and the runtime's manifest checks share it.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_REF_WINDOW_H
#define KILN_REF_WINDOW_H

#include <cstdint>

namespace kiln::ref {

/// The extent a dilated window covers: dilation * (window - 1) + 1.
constexpr int64_t dilatedWindowSize(int64_t window, int64_t dilation) {
  return dilation * (window - 1) + 1;
}

/// Output positions of a window sliding over `in` elements padded with
/// `padBefore` and `padAfter` zeros, or 0 when the dilated window does not
/// fit the padded input. Strides and dilations are positive.
///
/// With `ceilMode` (pooling's ceil_mode in PyTorch and ONNX) the division
/// rounds up, so a last window may overhang the after-padding; it is kept
/// only when it starts inside the input or the before-padding, as in
/// PyTorch's pooling_output_shape (a window over padding alone would pool
/// nothing). Pools treat the overhang as padding: it never wins a maximum
/// and is not counted in an average.
constexpr int64_t slidingWindowOutputSize(int64_t in, int64_t padBefore,
                                          int64_t padAfter, int64_t window,
                                          int64_t stride, int64_t dilation,
                                          bool ceilMode = false) {
  int64_t padded = in + padBefore + padAfter;
  int64_t effective = dilatedWindowSize(window, dilation);
  if (padded < effective)
    return 0;
  if (!ceilMode)
    return (padded - effective) / stride + 1;
  int64_t out = (padded - effective + stride - 1) / stride + 1;
  if ((out - 1) * stride >= in + padBefore)
    --out;
  return out;
}

} // namespace kiln::ref

#endif // KILN_REF_WINDOW_H
