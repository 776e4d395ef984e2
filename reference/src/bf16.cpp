//===- bf16.cpp - fp32 -> bfloat16 rounding --------------------------------===//
//
// Part of Kiln. Follows the VCVTNEPS2BF16 pseudo-code of the Intel SDM
// (convert_fp32_to_bfloat16); test/unit/reference checks it bit for bit
// against the instruction when the CPU has AVX512_BF16.
//
//===----------------------------------------------------------------------===//

#include "kiln/ref/bf16.h"

#include <cstring>

namespace kiln::ref {

uint16_t floatToBf16Bits(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof(bits));
  uint32_t exponent = bits & 0x7f800000u;
  uint32_t mantissa = bits & 0x007fffffu;
  if (exponent == 0) // Zero or denormal: signed zero.
    return static_cast<uint16_t>((bits >> 16) & 0x8000u);
  if (exponent == 0x7f800000u) {
    if (mantissa == 0) // +-Inf.
      return static_cast<uint16_t>(bits >> 16);
    // NaN: truncate and force the quiet bit.
    return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  }
  // Round to nearest even as an integer add on the bit pattern; a carry into
  // the exponent is the correct rounding, up to +-Inf past the largest finite.
  uint32_t lsb = (bits >> 16) & 1u;
  uint32_t rounded = bits + 0x7fffu + lsb;
  return static_cast<uint16_t>(rounded >> 16);
}

float bf16BitsToFloat(uint16_t bits) {
  uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float x;
  std::memcpy(&x, &wide, sizeof(x));
  return x;
}

float roundToBf16(float x) { return bf16BitsToFloat(floatToBf16Bits(x)); }

Tensor roundToBf16(const Tensor &x) {
  Tensor y(x.shape);
  for (int64_t i = 0; i < x.size(); ++i)
    y[i] = roundToBf16(x[i]);
  return y;
}

} // namespace kiln::ref
