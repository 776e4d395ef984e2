//===- init.cpp - Deterministic variable initializers ---------------------===//

#include "kiln/ref/init.h"

#include "kiln/ref/check.h"

#include <cmath>

namespace kiln::ref {

uint64_t fnv1a64(std::string_view bytes) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : bytes) {
    h ^= static_cast<uint8_t>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

RandomStream::RandomStream(uint64_t seed, std::string_view name) {
  uint64_t k = splitmix64(fnv1a64(name) ^ splitmix64(seed));
  key = {static_cast<uint32_t>(k), static_cast<uint32_t>(k >> 32)};
}

std::array<uint32_t, 4> RandomStream::bits(uint64_t index) const {
  return philox4x32_10(
      {static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32), 0, 0},
      key);
}

double RandomStream::normal(uint64_t index) const {
  std::array<uint32_t, 4> x = bits(index);
  constexpr double kTwoPow53 = 9007199254740992.0;
  uint64_t a = ((static_cast<uint64_t>(x[0]) << 32) | x[1]) >> 11;
  uint64_t b = ((static_cast<uint64_t>(x[2]) << 32) | x[3]) >> 11;
  // u1 in (0, 1] keeps the logarithm finite.
  double u1 = (static_cast<double>(a) + 1.0) / kTwoPow53;
  double u2 = static_cast<double>(b) / kTwoPow53;
  constexpr double kTwoPi = 6.283185307179586476925286766559;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(kTwoPi * u2);
}

uint64_t RandomStream::uniformInt(uint64_t index, uint64_t n) const {
  KILN_REF_CHECK(n > 0 && n <= 0xffffffffULL, "uniformInt needs 0 < n < 2^32");
  std::array<uint32_t, 4> x = bits(index);
  uint64_t r = (static_cast<uint64_t>(x[0]) << 32) | x[1];
  // floor(r * n / 2^64) without 128-bit arithmetic: split r into halves.
  uint64_t hi = (r >> 32) * n;
  uint64_t lo = (r & 0xffffffffULL) * n;
  return (hi + (lo >> 32)) >> 32;
}

double heNormalStd(const Shape &shape) {
  KILN_REF_CHECK(shape.size() >= 2, "he_normal needs a rank >= 2 shape, got " +
                                        shapeToString(shape));
  int64_t fanIn = 1;
  for (size_t i = 0; i + 1 < shape.size(); ++i)
    fanIn *= shape[i];
  KILN_REF_CHECK(fanIn > 0, "he_normal of an empty shape");
  return std::sqrt(2.0 / static_cast<double>(fanIn));
}

void fillNormal(Tensor &t, double stddev, uint64_t seed,
                std::string_view name) {
  RandomStream stream(seed, name);
  for (size_t i = 0; i < t.data.size(); ++i)
    t.data[i] = static_cast<float>(stddev * stream.normal(i));
}

void fillHeNormal(Tensor &t, uint64_t seed, std::string_view name) {
  fillNormal(t, heNormalStd(t.shape), seed, name);
}

} // namespace kiln::ref
