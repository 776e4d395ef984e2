//===- bf16.h - fp32 -> bfloat16 rounding ----------------------*- C++ -*-===//
//
// Part of Kiln. Bit-exact with x86 VCVTNEPS2BF16 (AVX512_BF16), which the
// generated code and the systolic simulator use:
//   - normal numbers: round to nearest, ties to even, on the fp32 bit pattern
//     (values above the largest finite bf16 round to +-Inf);
//   - zero and denormal inputs: signed zero (the instruction always treats
//     denormals as zero, whatever MXCSR says);
//   - +-Inf: preserved;
//   - NaN: stays NaN, made quiet (mantissa bit 6 of the bf16 set), sign and
//     upper payload bits kept.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_REF_BF16_H
#define KILN_REF_BF16_H

#include "kiln/ref/tensor.h"

#include <cstdint>

namespace kiln::ref {

/// The bf16 bit pattern of `x`, rounded as described above.
uint16_t floatToBf16Bits(float x);

/// Widens a bf16 bit pattern to fp32 (exact).
float bf16BitsToFloat(uint16_t bits);

/// x rounded to bf16 and widened back to fp32.
float roundToBf16(float x);

/// Element-wise roundToBf16; the shape is kept.
Tensor roundToBf16(const Tensor &x);

} // namespace kiln::ref

#endif // KILN_REF_BF16_H
