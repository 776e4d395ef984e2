//===- movement.h - Concat, slices, channel shuffle, transpose -*- C++ -*-===//
//
// Part of Kiln. Kernels that only move elements (kiln.concat, kiln.slice and
// its backward, kiln.channel_shuffle, kiln.transpose): each output element
// is one input element or zero, so they are exact in any precision.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_REF_MOVEMENT_H
#define KILN_REF_MOVEMENT_H

#include "kiln/ref/tensor.h"

namespace kiln::ref {

/// Validates a concatenation of `shapes` along `axis`: at least one, one
/// rank, equal in every other dimension; sets `out` to the result's shape.
Status inferConcatShape(const std::vector<Shape> &shapes, int64_t axis,
                        Shape &out);
/// The inputs one after the other along `axis`. Each input's gradient is
/// the slice of dy at its offset.
Tensor concat(const std::vector<Tensor> &inputs, int64_t axis);

/// Validates that [start, start + size) lies within `axis` of `shape`.
Status checkSlice(const Shape &shape, int64_t axis, int64_t start,
                  int64_t size);
/// Elements [start, start + size) of `axis`, the other dimensions whole.
Tensor slice(const Tensor &x, int64_t axis, int64_t start, int64_t size);
/// The gradient of slice: dy placed at [start, start + dy.dim(axis)) of
/// zeros whose `axis` has `inputSize` elements.
Tensor sliceBackward(const Tensor &dy, int64_t axis, int64_t start,
                     int64_t inputSize);

/// Validates a channel shuffle: rank 4, channels a multiple of `groups`.
Status checkChannelShuffle(const Shape &shape, int64_t groups);
/// y[n, h, w, k * groups + g] = x[n, h, w, g * K + k], K = C / groups. The
/// gradient is the shuffle with K groups (the inverse permutation).
Tensor channelShuffle(const Tensor &x, int64_t groups);

/// Validates that `permutation` permutes the dimensions of `shape`.
Status checkTranspose(const Shape &shape, const std::vector<int64_t> &permutation);
/// y's dimension i is x's dimension permutation[i] (numpy's transpose). The
/// gradient is the transpose by the inverse permutation.
Tensor transpose(const Tensor &x, const std::vector<int64_t> &permutation);

} // namespace kiln::ref

#endif // KILN_REF_MOVEMENT_H
