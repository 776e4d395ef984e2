//===- random.h - A small deterministic random generator --------*- C++ -*-===//
//
// SplitMix64 with our own uniform mappings: std:: distributions differ between
// standard libraries, and the pipeline promises the same batches for the same
// seed everywhere.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RT_RANDOM_H
#define KILN_RT_RANDOM_H

#include <cstdint>

namespace kiln::rt {

/// Mixes values into a well-distributed 64-bit key (seed derivation).
inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
inline uint64_t hashCombine(uint64_t a, uint64_t b) {
  return mix64(a ^ (mix64(b) + 0x9e3779b97f4a7c15ull + (a << 6) + (a >> 2)));
}

class Rng {
public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    state_ += 0x9e3779b97f4a7c15ull;
    return mix64(state_);
  }
  /// Uniform in [0, 1).
  double uniform() { return double(next() >> 11) * 0x1.0p-53; }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  /// Uniform integer in [0, n); n > 0. Multiply-high keeps bias below 2^-64·n.
  uint64_t below(uint64_t n) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(next()) * n) >>
                                 64);
  }
  bool coin() { return next() >> 63; }

private:
  uint64_t state_;
};

} // namespace kiln::rt

#endif // KILN_RT_RANDOM_H
