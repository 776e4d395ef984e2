//===- broadcast.h - The broadcasting rule of two shapes --------*- C++ -*-===//
//
// Part of Kiln. The one rule for the shape two operands broadcast to
// (numpy's, without rank extension): one rank, and along each dimension
// equal sizes or one of them 1, the result taking the other.
//
// Plain C++17 with no dependencies, so the dialect's shape rules
// (kiln.broadcast_binary and its gradient), the reference kernels and,
// through the dialect, the ONNX importer share it. A dynamic size (any value
// standing for one) pairs with itself or 1.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_REF_BROADCAST_H
#define KILN_REF_BROADCAST_H

#include <cstddef>
#include <cstdint>

namespace kiln::ref {

/// Whether sizes `a` and `b` broadcast; if so `out` is the result's size.
constexpr bool broadcastDimension(int64_t a, int64_t b, int64_t &out) {
  if (a != b && a != 1 && b != 1)
    return false;
  out = a == 1 ? b : a;
  return true;
}

/// Whether shapes `a` and `b` (of `aRank` and `bRank` dimensions) broadcast;
/// if so `out` (room for `aRank` sizes) holds the result's shape.
constexpr bool broadcastShapes(const int64_t *a, size_t aRank, const int64_t *b,
                               size_t bRank, int64_t *out) {
  if (aRank != bRank)
    return false;
  for (size_t i = 0; i < aRank; ++i)
    if (!broadcastDimension(a[i], b[i], out[i]))
      return false;
  return true;
}

} // namespace kiln::ref

#endif // KILN_REF_BROADCAST_H
