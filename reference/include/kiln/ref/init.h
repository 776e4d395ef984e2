//===- init.h - Deterministic variable initializers ------------*- C++ -*-===//
//
// Part of Kiln. The initial values of model variables, shared by kiln-run and
// the compiled runtime so that both start from bit-identical parameters for a
// seed. Every random value is a pure function of
//
//   (seed, FNV-1a-64 hash of the variable's name, element index)
//
// through a counter-based generator (Philox4x32-10, Salmon et al., SC'11), so
// a variable's values depend neither on the order variables are declared in
// nor on how many threads fill them. For element i of variable `name`:
//
//   key     = splitmix64(fnv1a64(name) ^ splitmix64(seed))   (two 32-bit words,
//                                                             low word first)
//   counter = {lo32(i), hi32(i), 0, 0}
//   x[0..3] = philox4x32_10(counter, key)
//   u1      = ((x0 << 32 | x1) >> 11 + 1) * 2^-53      in (0, 1]
//   u2      = ((x2 << 32 | x3) >> 11) * 2^-53          in [0, 1)
//   normal  = sqrt(-2 ln u1) * cos(2 pi u2)             (Box-Muller, in double)
//
// and the fp32 value is the double rounded to nearest. std::normal_distribution
// is deliberately not used: its algorithm differs between standard libraries.
// The double arithmetic uses only sqrt (exact), log and cos; rounding the
// result to fp32 hides the last-bit differences libm versions could have.
//
// Initializers (the `kiln.variable ... init` kinds):
//   zeros, ones, constant: as named;
//   normal(std):  std * normal;
//   he_normal:    sqrt(2 / fan_in) * normal, fan_in = product of all dims
//                 but the last (HWIO filters: KH*KW*Cin; [K,M] dense: K).
//                 PyTorch's kaiming_normal_(mode='fan_in') on the same
//                 logical filter gives the same distribution.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_REF_INIT_H
#define KILN_REF_INIT_H

#include "kiln/ref/philox.h"
#include "kiln/ref/tensor.h"

#include <array>
#include <cstdint>
#include <string_view>

namespace kiln::ref {

/// FNV-1a, 64-bit (offset basis 0xcbf29ce484222325, prime 0x100000001b3).
uint64_t fnv1a64(std::string_view bytes);

/// The splitmix64 finalizer (Steele et al.): a bijective 64-bit mixer.
uint64_t splitmix64(uint64_t x);

/// A counter-based random stream: the values of one variable (or one
/// synthetic input) for one seed.
class RandomStream {
public:
  RandomStream(uint64_t seed, std::string_view name);

  /// The four raw 32-bit words of element `index`.
  std::array<uint32_t, 4> bits(uint64_t index) const;
  /// A standard normal sample for element `index` (Box-Muller, in double).
  double normal(uint64_t index) const;
  /// A uniform integer in [0, n) for element `index` (0 < n < 2^32), by the
  /// multiply-shift reduction of 64 random bits (bias below 2^-32 for the
  /// class counts used here).
  uint64_t uniformInt(uint64_t index, uint64_t n) const;

private:
  std::array<uint32_t, 2> key;
};

/// The he_normal standard deviation sqrt(2 / fan_in) of a variable of this
/// shape (rank >= 2).
double heNormalStd(const Shape &shape);

/// Fills `t` with std * normal draws of the stream (seed, name).
void fillNormal(Tensor &t, double stddev, uint64_t seed, std::string_view name);

/// Fills `t` (rank >= 2) with he_normal values for (seed, name).
void fillHeNormal(Tensor &t, uint64_t seed, std::string_view name);

} // namespace kiln::ref

#endif // KILN_REF_INIT_H
