//===- variables.h - Initializing and copying variables ---------*- C++ -*-===//
//
// Variables live in the arena at the offsets the manifest gives. They start
// from the reference initializers (kiln/ref/init.h), so a compiled model and
// kiln-run begin from bit-identical parameters for the same seed: f32 values
// are exactly ref::fillNormal's, bf16 values are those rounded by
// ref::roundToBf16, as kiln-run does. Copy variables (init "copy") are
// derived: always their source converted to their dtype.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RT_EXEC_VARIABLES_H
#define KILN_RT_EXEC_VARIABLES_H

#include "kiln/base/status.h"
#include "kiln/rt/exec/manifest.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kiln::rt::exec {

/// Writes every variable's initial value into `arena`: the others first,
/// then the copies from them (refreshCopies).
Status initializeVariables(const Manifest &manifest, uint8_t *arena,
                           uint64_t seed);

/// Refills every copy variable from its source, converted to the copy's
/// dtype (f32 -> bf16 rounds to nearest even, as the compiled update's
/// arith.truncf). Call it whenever the sources change outside a step:
/// initialization, a loaded checkpoint, a broadcast.
Status refreshCopies(const Manifest &manifest, uint8_t *arena);

/// Element `index` of a tensor of `dtype` at `base`, widened to double.
double loadElement(const uint8_t *base, DType dtype, int64_t index);
/// Stores `value` as element `index`: floats round to nearest (bf16 as
/// kiln::ref::floatToBf16Bits), integers must be integral (not checked here).
void storeElement(uint8_t *base, DType dtype, int64_t index, double value);

/// An element of a floating-point tensor that is NaN or +-Inf.
struct NonFinite {
  int64_t index = 0;
  double value = 0; ///< NaN, +Inf or -Inf
};

/// The first non-finite element of `count` elements of `dtype` at `data`
/// (any alignment); integer tensors have none.
std::optional<NonFinite> findNonFinite(const uint8_t *data, DType dtype,
                                       int64_t count);

/// A variable holding a non-finite element.
struct NonFiniteVariable {
  const Variable *variable = nullptr;
  NonFinite element;
};

/// The first variable that a checkpoint holds (every one but the copies)
/// with a non-finite element in `arena`. A diverged run can keep a finite
/// loss for a while after, say, a batch norm's running variance overflowed,
/// so this is what decides whether a checkpoint is good.
std::optional<NonFiniteVariable> findNonFiniteVariable(const Manifest &manifest,
                                                       const uint8_t *arena);

/// "NaN", "Inf" or "-Inf".
const char *nonFiniteName(double value);

/// "running_var of layer1.0.bn1 holds Inf (element 3)": the name's last
/// component first, as the user thinks of a layer's tensors.
std::string describeNonFinite(const std::string &variable,
                              const NonFinite &element);

/// FNV-1a over the bytes of every variable of `kind` (or all if null), for
/// comparing replicas.
uint64_t hashVariables(const Manifest &manifest, const uint8_t *arena,
                       const VariableKind *kind);

} // namespace kiln::rt::exec

#endif // KILN_RT_EXEC_VARIABLES_H
