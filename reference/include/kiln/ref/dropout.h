//===- dropout.h - Training dropout with a counter-based mask --*- C++ -*-===//
//
// Part of Kiln. The kernel of kiln.dropout: inverted dropout whose mask is
// the rule of kiln/ref/philox.h, so the compiled step, kiln-run and every
// rank draw the same mask for a seed, a step and a stream.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_REF_DROPOUT_H
#define KILN_REF_DROPOUT_H

#include "kiln/ref/tensor.h"

#include <cstdint>

namespace kiln::ref {

/// The attributes and counters of one dropout (kiln.dropout).
struct DropoutAttrs {
  double ratio = 0.0; ///< drop probability, in [0, 1)
  uint64_t seed = 0;
  uint64_t step = 0;   ///< the training step (enters modulo 2^32)
  uint32_t stream = 0; ///< which dropout of the model
};

/// Validates the ratio (in [0, 1)).
Status checkDropout(const DropoutAttrs &attrs);

/// y[i] = x[i] * dropoutScale(ratio) where dropoutKeeps(..., i), else 0,
/// with i the row-major index. Its gradient is the same function of dy
/// (same attributes), which regenerates the mask.
Tensor dropout(const Tensor &x, const DropoutAttrs &attrs);

} // namespace kiln::ref

#endif // KILN_REF_DROPOUT_H
