//===- Functional.h - The functional executor ------------------*- C++ -*-===//
//
// Part of Kiln. Executes a program's instructions one after another with
// real values. Program order is a valid sequential order of the machine's
// parallel units (the compiler emits instructions in a dependency-respecting
// order and only adds synchronization that relaxes it), so the values are
// those of the timed machine too.
//
// Numerics, as the hardware does them: matrix-unit operands are rounded to
// bf16 (kiln::ref::roundToBf16, bit-exact with VCVTNEPS2BF16), products are
// exact and accumulate in fp32; the vector unit computes in fp32 with
// reductions accumulated in double and rounded once; every write to a bf16
// buffer rounds to nearest even. Every buffer is held as fp32 values (i32
// labels and step counters are exact below 2^24).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_SIM_FUNCTIONAL_H
#define KILN_SIM_FUNCTIONAL_H

#include "kiln/sim/Program.h"

#include <functional>
#include <vector>

namespace kiln::sim {

/// Averages buffers across ranks in place (the host's collective); the
/// default, for one rank, leaves them unchanged.
using AllReduceFn = std::function<Status(std::vector<std::vector<float> *>)>;

class FunctionalMachine {
public:
  /// `program` must have been verified and must outlive the machine.
  explicit FunctionalMachine(const Program &program);

  /// Zero-fills every buffer and loads constants (not variables: the host
  /// initializes those).
  void reset();

  std::vector<float> &buffer(uint32_t id) { return memory[id]; }
  const std::vector<float> &buffer(uint32_t id) const { return memory[id]; }

  void setAllReduce(AllReduceFn fn) { allReduce = std::move(fn); }

  /// Runs every instruction in order.
  Status run();
  /// Runs instruction `index` alone.
  Status execute(size_t index);

private:
  const Program &program;
  std::vector<std::vector<float>> memory;
  AllReduceFn allReduce;
};

/// Executes one vector instruction on `memory` (exposed for unit tests).
Status executeVector(const Program &program, const fb::VectorT &vec,
                     std::vector<std::vector<float>> &memory);

} // namespace kiln::sim

#endif // KILN_SIM_FUNCTIONAL_H
