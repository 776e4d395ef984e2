//===- philox.h - Philox4x32-10 and the dropout mask rule -------*- C++ -*-===//
//
// Part of Kiln. The counter-based generator of every random value Kiln draws
// (Salmon, Moraes, Dror and Shaw, "Parallel random numbers: as easy as 1, 2,
// 3", SC'11; Random123's philox4x32_10, the generator of TensorFlow, JAX and
// cuRAND). A pure function of a 128-bit counter and a 64-bit key: no state,
// so any element's value is computed alone, in any order, on any thread or
// rank. Header only and dependency free: the reference kernels and the
// initializers call it, and the x86 lowering of kiln.dropout
// (passes/Conversion/KilnToLinalg/LowerDropout.cpp) emits the same rounds
// with the constants below.
//
// The dropout mask rule (kiln.dropout): element i (logical row-major index)
// of the dropout `stream` at training step `step`, for a seed, is kept iff
//
//   key     = {lo32(seed), hi32(seed)}
//   counter = {lo32(i), hi32(i), lo32(step), stream}
//   philox4x32_10(counter, key)[0] >= dropoutThreshold(ratio)
//
// and a kept element is multiplied by dropoutScale(ratio). The step enters
// modulo 2^32 (masks repeat after four billion steps); nothing depends on the
// rank, the thread count or the physical layout.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_REF_PHILOX_H
#define KILN_REF_PHILOX_H

#include <array>
#include <cmath>
#include <cstdint>

namespace kiln::ref {

/// Philox4x32's round multipliers and Weyl key increments (Random123's
/// PHILOX_M4x32_0/1 and PHILOX_W32_0/1).
inline constexpr uint32_t kPhiloxM0 = 0xD2511F53, kPhiloxM1 = 0xCD9E8D57;
inline constexpr uint32_t kPhiloxW0 = 0x9E3779B9, kPhiloxW1 = 0xBB67AE85;
inline constexpr int kPhiloxRounds = 10;

/// Philox4x32 with 10 rounds: the key is bumped by the Weyl constants before
/// every round but the first.
constexpr std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> ctr,
                                                std::array<uint32_t, 2> key) {
  for (int round = 0; round < kPhiloxRounds; ++round) {
    if (round > 0) {
      key[0] += kPhiloxW0;
      key[1] += kPhiloxW1;
    }
    uint64_t p0 = uint64_t(kPhiloxM0) * ctr[0];
    uint64_t p1 = uint64_t(kPhiloxM1) * ctr[2];
    auto hi0 = static_cast<uint32_t>(p0 >> 32);
    auto lo0 = static_cast<uint32_t>(p0);
    auto hi1 = static_cast<uint32_t>(p1 >> 32);
    auto lo1 = static_cast<uint32_t>(p1);
    ctr = {hi1 ^ ctr[1] ^ key[0], lo1, hi0 ^ ctr[3] ^ key[1], lo0};
  }
  return ctr;
}

/// The Philox key of the dropout streams of `seed`.
constexpr std::array<uint32_t, 2> dropoutKey(uint64_t seed) {
  return {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
}

/// The Philox counter of element `index` of dropout `stream` at `step`.
constexpr std::array<uint32_t, 4> dropoutCounter(uint64_t index, uint64_t step,
                                                 uint32_t stream) {
  return {static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32),
          static_cast<uint32_t>(step), stream};
}

/// The 32-bit threshold below which a draw drops its element: ratio * 2^32
/// rounded to nearest (so the drop probability is ratio to within 2^-33),
/// at most 2^32 - 1 for a ratio just below 1.
inline uint32_t dropoutThreshold(double ratio) {
  double t = std::nearbyint(ratio * 4294967296.0);
  if (t <= 0.0)
    return 0;
  if (t >= 4294967295.0)
    return 0xffffffffu;
  return static_cast<uint32_t>(t);
}

/// The factor of a kept element, 1 / (1 - ratio) rounded once to f32.
inline float dropoutScale(double ratio) {
  return static_cast<float>(1.0 / (1.0 - ratio));
}

/// Whether the mask rule above keeps element `index`.
constexpr bool dropoutKeeps(uint64_t seed, uint64_t step, uint32_t stream,
                            uint64_t index, uint32_t threshold) {
  return philox4x32_10(dropoutCounter(index, step, stream),
                       dropoutKey(seed))[0] >= threshold;
}

} // namespace kiln::ref

#endif // KILN_REF_PHILOX_H
