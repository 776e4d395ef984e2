//===- pool.h - Max, average and global average pooling --------*- C++ -*-===//
//
// Part of Kiln. NHWC. Window position (oh, ow) covers input rows
// oh*sh - pt + [0, kh) and columns ow*sw - pl + [0, kw);
// Hout = (H + pt + pb - kh)/sh + 1 (floor), same for W. Each padding must be
// smaller than the window along its axis, so every window holds at least one
// real element.
//
// - maxPool: padded positions never win. Backward routes dy to the first
//   maximum of the window in scan order (row-major over (kh, kw)); windows
//   that overlap accumulate.
// - avgPool: divisor = number of non-padding elements of the window (TF
//   'SAME' semantics, count_include_pad = false).
// - globalAvgPool: [N,H,W,C] -> [N,C], mean over H and W.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_REF_POOL_H
#define KILN_REF_POOL_H

#include "kiln/ref/tensor.h"

#include <array>

namespace kiln::ref {

struct Pool2dAttrs {
  /// {kh, kw}
  std::array<int64_t, 2> window{1, 1};
  /// {sh, sw}
  std::array<int64_t, 2> strides{1, 1};
  /// {top, bottom, left, right}
  std::array<int64_t, 4> padding{0, 0, 0, 0};
  /// Round the output size up (window.h); the overhang is padding.
  bool ceilMode = false;
};

/// Validates x ([N,H,W,C]) and the attributes; computes [N,Hout,Wout,C].
Status inferPool2dShape(const Shape &xShape, const Pool2dAttrs &attrs,
                        Shape &yShape);

Tensor maxPool(const Tensor &x, const Pool2dAttrs &attrs);
/// dx given dy and the forward input x (the argmax is recomputed).
Tensor maxPoolBackward(const Tensor &dy, const Tensor &x,
                       const Pool2dAttrs &attrs);

Tensor avgPool(const Tensor &x, const Pool2dAttrs &attrs);
Tensor avgPoolBackward(const Tensor &dy, const Shape &xShape,
                       const Pool2dAttrs &attrs);

Tensor globalAvgPool(const Tensor &x);
/// dx[n,h,w,c] = dy[n,c] / (H*W).
Tensor globalAvgPoolBackward(const Tensor &dy, const Shape &xShape);

} // namespace kiln::ref

#endif // KILN_REF_POOL_H
