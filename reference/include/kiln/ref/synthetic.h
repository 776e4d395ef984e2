//===- synthetic.h - Synthetic inputs, the same everywhere -----*- C++ -*-===//
//
// Deterministic random arguments for a model's step function, the ones the
// interpreter feeds (kiln-run --synthetic-inputs), the compiled executables
// train on (--synthetic, x86 and systolic host) and kiln-sim's functional
// mode runs: floating-point arguments (images) standard normal, labels
// uniform classes. Each argument draws from its own RandomStream, so adding
// an argument does not change the others. Every one of them feeds batch 0
// first, so any two can be compared step for step; the executables' further
// batches (--synthetic-batches) have streams of their own.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_REF_SYNTHETIC_H
#define KILN_REF_SYNTHETIC_H

#include "kiln/ref/init.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace kiln::ref {

/// One argument of one synthetic batch.
class SyntheticArgument {
public:
  /// Argument `argument` (argumentName: "arg0" is the function's first) of
  /// synthetic batch `batch`.
  SyntheticArgument(uint64_t seed, std::string_view argument,
                    int64_t batch = 0)
      : stream(seed, streamName(argument, batch)) {}

  /// The name of the function's argument `index`.
  static std::string argumentName(unsigned index) {
    return "arg" + std::to_string(index);
  }

  /// Element `index` of a floating-point argument: a standard normal draw.
  float value(uint64_t index) const {
    return static_cast<float>(stream.normal(index));
  }
  /// Element `index` of a label argument: a class in [0, classes).
  uint64_t label(uint64_t index, uint64_t classes) const {
    return stream.uniformInt(index, classes);
  }

private:
  static std::string streamName(std::string_view argument, int64_t batch) {
    std::string prefix =
        batch == 0 ? std::string("kiln-run.input.")
                   : "kiln.synthetic.batch" + std::to_string(batch) + ".";
    return prefix + std::string(argument);
  }

  RandomStream stream;
};

} // namespace kiln::ref

#endif // KILN_REF_SYNTHETIC_H
