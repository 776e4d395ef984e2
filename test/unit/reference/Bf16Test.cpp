//===- Bf16Test.cpp - fp32 -> bf16 rounding edge cases ---------------------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "kiln/ref/bf16.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#if defined(__x86_64__) && (defined(__clang__) || defined(__GNUC__))
#include <immintrin.h>
#define KILN_HAVE_X86_BF16_TEST 1
#endif

namespace kiln::ref {
namespace {

float fromBits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

uint16_t bf16Of(uint32_t fp32Bits) { return floatToBf16Bits(fromBits(fp32Bits)); }

TEST(Bf16Test, ExactValuesAreKept) {
  for (float x : {0.0f, 1.0f, -2.5f, 0.15625f, 65536.0f, -0.0f}) {
    EXPECT_EQ(roundToBf16(x), x);
    EXPECT_EQ(std::signbit(roundToBf16(x)), std::signbit(x));
  }
  EXPECT_EQ(floatToBf16Bits(1.0f), 0x3f80);
  EXPECT_EQ(bf16BitsToFloat(0xc020), -2.5f);
}

TEST(Bf16Test, RoundToNearestTiesToEven) {
  // 0x3f808000 is exactly halfway between 0x3f80 and 0x3f81: to even 0x3f80.
  EXPECT_EQ(bf16Of(0x3f808000u), 0x3f80);
  // 0x3f818000 is halfway between 0x3f81 (odd) and 0x3f82: to even 0x3f82.
  EXPECT_EQ(bf16Of(0x3f818000u), 0x3f82);
  // Just above / below the tie.
  EXPECT_EQ(bf16Of(0x3f808001u), 0x3f81);
  EXPECT_EQ(bf16Of(0x3f807fffu), 0x3f80);
  // Negative numbers round the magnitude the same way.
  EXPECT_EQ(bf16Of(0xbf808000u), 0xbf80);
  EXPECT_EQ(bf16Of(0xbf818000u), 0xbf82);
  // A carry out of the mantissa moves to the next binade: 0x3fffc000 is the
  // tie between 0x3fff (odd) and 0x4000 (= 2.0).
  EXPECT_EQ(bf16Of(0x3fffc000u), 0x4000);
  EXPECT_EQ(roundToBf16(fromBits(0x3fffc000u)), 2.0f);
}

TEST(Bf16Test, OverflowToInfinity) {
  // Largest finite bf16 0x7f7f stays; the largest float rounds up to +Inf.
  EXPECT_EQ(bf16Of(0x7f7f0000u), 0x7f7f);
  EXPECT_EQ(bf16Of(0x7f7f7fffu), 0x7f7f);
  EXPECT_EQ(bf16Of(0x7f7f8000u), 0x7f80); // tie, 0x7f7f odd -> up to Inf
  EXPECT_EQ(bf16Of(0x7f7fffffu), 0x7f80);
  EXPECT_EQ(bf16Of(0xff7fffffu), 0xff80);
  EXPECT_TRUE(std::isinf(roundToBf16(std::numeric_limits<float>::max())));
}

TEST(Bf16Test, InfinityIsPreserved) {
  float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(floatToBf16Bits(inf), 0x7f80);
  EXPECT_EQ(floatToBf16Bits(-inf), 0xff80);
  EXPECT_EQ(roundToBf16(-inf), -inf);
}

TEST(Bf16Test, NanStaysQuietNan) {
  // Quiet NaN.
  EXPECT_EQ(bf16Of(0x7fc00000u), 0x7fc0);
  // Signalling NaNs whose payload lives only in the low 16 bits would
  // truncate to Inf; the quiet bit keeps them NaN.
  EXPECT_EQ(bf16Of(0x7f800001u), 0x7fc0);
  EXPECT_EQ(bf16Of(0xff800001u), 0xffc0);
  // Upper payload bits and the sign are kept; NaNs are never rounded up.
  EXPECT_EQ(bf16Of(0x7fa0ffffu), 0x7fe0);
  EXPECT_EQ(bf16Of(0xffffffffu), 0xffff);
  EXPECT_TRUE(std::isnan(roundToBf16(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(
      std::isnan(roundToBf16(std::numeric_limits<float>::signaling_NaN())));
}

TEST(Bf16Test, DenormalsFlushToSignedZero) {
  EXPECT_EQ(bf16Of(0x00000001u), 0x0000);
  EXPECT_EQ(bf16Of(0x007fffffu), 0x0000); // would round to 0x0080 otherwise
  EXPECT_EQ(bf16Of(0x807fffffu), 0x8000);
  // The smallest normal is exact.
  EXPECT_EQ(bf16Of(0x00800000u), 0x0080);
}

TEST(Bf16Test, TensorVersion) {
  Tensor x({2, 2}, {1.0f, fromBits(0x3f808001u), -3.0f,
                    std::numeric_limits<float>::infinity()});
  Tensor y = roundToBf16(x);
  EXPECT_EQ(y.shape, x.shape);
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[1], bf16BitsToFloat(0x3f81));
  EXPECT_EQ(y[2], -3.0f);
  EXPECT_TRUE(std::isinf(y[3]));
}

#ifdef KILN_HAVE_X86_BF16_TEST
__attribute__((target("avx512bf16,avx512vl,avx512f"))) void
hardwareConvert(const uint32_t *in, uint16_t *out) {
  __m128 v;
  std::memcpy(&v, in, sizeof(v));
  __m128bh r = _mm_cvtneps_pbh(v);
  std::memcpy(out, &r, 4 * sizeof(uint16_t));
}

TEST(Bf16Test, BitExactWithVcvtneps2bf16) {
  if (!__builtin_cpu_supports("avx512bf16"))
    GTEST_SKIP() << "CPU lacks AVX512_BF16";
  std::mt19937 rng(5);
  std::vector<uint32_t> patterns{0x00000000u, 0x80000000u, 0x00000001u,
                                 0x807fffffu, 0x00800000u, 0x3f808000u,
                                 0x3f818000u, 0x7f7f8000u, 0x7f7fffffu,
                                 0x7f800000u, 0xff800000u, 0x7f800001u,
                                 0xffbfffffu, 0x7fc00000u, 0x3fffc000u};
  for (int i = 0; i < 200000; ++i) {
    uint32_t bits = rng();
    patterns.push_back(bits);
    patterns.push_back((bits & 0xffff0000u) | 0x8000u); // exact ties
    patterns.push_back(bits & 0x807fffffu);             // denormals
    patterns.push_back(bits | 0x7f800000u);             // Inf / NaN
  }
  while (patterns.size() % 4)
    patterns.push_back(0);
  int mismatches = 0;
  for (size_t i = 0; i < patterns.size(); i += 4) {
    uint16_t hw[4];
    hardwareConvert(&patterns[i], hw);
    for (size_t j = 0; j < 4; ++j)
      if (hw[j] != bf16Of(patterns[i + j]) && ++mismatches <= 5)
        ADD_FAILURE() << std::hex << "fp32 0x" << patterns[i + j] << ": hw 0x"
                      << hw[j] << ", ref 0x" << bf16Of(patterns[i + j]);
  }
  EXPECT_EQ(mismatches, 0);
}
#endif

} // namespace
} // namespace kiln::ref
