//===- variables.cpp - Variable initialization ----------------------------===//

#include "kiln/rt/exec/variables.h"

#include "kiln/ref/bf16.h"
#include "kiln/ref/init.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace kiln::rt::exec {

double loadElement(const uint8_t *base, DType dtype, int64_t index) {
  switch (dtype) {
  case DType::F32: {
    float v;
    std::memcpy(&v, base + 4 * index, 4);
    return v;
  }
  case DType::BF16: {
    uint16_t bits;
    std::memcpy(&bits, base + 2 * index, 2);
    return ref::bf16BitsToFloat(bits);
  }
  case DType::F64: {
    double v;
    std::memcpy(&v, base + 8 * index, 8);
    return v;
  }
  case DType::I32: {
    int32_t v;
    std::memcpy(&v, base + 4 * index, 4);
    return v;
  }
  case DType::I64: {
    int64_t v;
    std::memcpy(&v, base + 8 * index, 8);
    return static_cast<double>(v);
  }
  }
  return 0;
}

void storeElement(uint8_t *base, DType dtype, int64_t index, double value) {
  switch (dtype) {
  case DType::F32: {
    auto v = static_cast<float>(value);
    std::memcpy(base + 4 * index, &v, 4);
    return;
  }
  case DType::BF16: {
    uint16_t bits = ref::floatToBf16Bits(static_cast<float>(value));
    std::memcpy(base + 2 * index, &bits, 2);
    return;
  }
  case DType::F64:
    std::memcpy(base + 8 * index, &value, 8);
    return;
  case DType::I32: {
    auto v = static_cast<int32_t>(value);
    std::memcpy(base + 4 * index, &v, 4);
    return;
  }
  case DType::I64: {
    auto v = static_cast<int64_t>(value);
    std::memcpy(base + 8 * index, &v, 8);
    return;
  }
  }
}

static Status initializeOne(const Variable &var, uint8_t *arena,
                            uint64_t seed) {
  const TensorRef &t = var.tensor;
  uint8_t *base = arena + t.offset;
  int64_t n = t.numElements();
  bool isInt = t.dtype == DType::I32 || t.dtype == DType::I64;
  switch (var.init) {
  case InitKind::Zeros:
  case InitKind::Ones:
    for (int64_t i = 0; i < n; ++i)
      storeElement(base, t.dtype, i, var.init == InitKind::Ones ? 1.0 : 0.0);
    return Status::ok();
  case InitKind::Constant:
    // Raw values, checked against the variable's size by parseManifest.
    if (!var.data.empty()) {
      std::memcpy(base, var.data.data(), var.data.size());
      return Status::ok();
    }
    for (int64_t i = 0; i < n; ++i) {
      double v = var.value.size() == 1 ? var.value[0]
                                       : var.value[static_cast<size_t>(i)];
      if (isInt && (v != std::trunc(v) ||
                    std::fabs(v) > (t.dtype == DType::I32 ? 2147483647.0
                                                          : 9.0e15)))
        return KILN_STATUS(kInvalidArgument,
                           "variable " + var.name + ": constant " +
                               std::to_string(v) + " is not an exact " +
                               dtypeInfo(t.dtype).name);
      storeElement(base, t.dtype, i, v);
    }
    return Status::ok();
  case InitKind::Normal:
  case InitKind::HeNormal: {
    // The manifest parser admits random initializers on f32/bf16 only.
    ref::Tensor values(ref::Shape(t.shape.begin(), t.shape.end()));
    if (var.init == InitKind::HeNormal)
      ref::fillHeNormal(values, seed, var.name);
    else
      ref::fillNormal(values, var.stddev, seed, var.name);
    if (t.dtype == DType::F32) {
      std::memcpy(base, values.data.data(), values.data.size() * 4);
    } else {
      for (int64_t i = 0; i < n; ++i) {
        uint16_t bits = ref::floatToBf16Bits(values[i]);
        std::memcpy(base + 2 * i, &bits, 2);
      }
    }
    return Status::ok();
  }
  case InitKind::Copy: // filled from its source by refreshCopies
    return Status::ok();
  }
  return Status::ok();
}

Status initializeVariables(const Manifest &manifest, uint8_t *arena,
                           uint64_t seed) {
  for (const Variable &var : manifest.variables)
    KILN_RETURN_IF_ERROR(initializeOne(var, arena, seed));
  return refreshCopies(manifest, arena);
}

Status refreshCopies(const Manifest &manifest, uint8_t *arena) {
  for (const Variable &copy : manifest.variables) {
    if (!copy.isCopy())
      continue;
    // parseManifest guarantees this; a hand-built manifest may not.
    const Variable *source = manifest.findVariable(copy.source);
    if (!source || source->isCopy() ||
        source->tensor.numElements() != copy.tensor.numElements())
      return KILN_STATUS(kInvalidArgument,
                         "variable " + copy.name + ": its source \"" +
                             copy.source +
                             "\" is missing, a copy, or of another size");
    const TensorRef &from = source->tensor, &to = copy.tensor;
    if (from.dtype == to.dtype) {
      std::memcpy(arena + to.offset, arena + from.offset,
                  static_cast<size_t>(to.byteSize()));
      continue;
    }
    // f32 <-> bf16: each f32 is exact as a double, so this rounds once, in
    // storeElement (ref::floatToBf16Bits), or widens exactly.
    for (int64_t i = 0, n = to.numElements(); i < n; ++i)
      storeElement(arena + to.offset, to.dtype, i,
                   loadElement(arena + from.offset, from.dtype, i));
  }
  return Status::ok();
}

namespace {

/// The index of the first element of `count` unsigned words at `data` whose
/// exponent bits (`exponent`) are all set, or -1. Works through a small
/// aligned buffer so that the test vectorizes whatever the alignment.
template <typename Word>
int64_t firstAllOnesExponent(const uint8_t *data, int64_t count,
                             Word exponent) {
  constexpr int64_t kChunk = 1024;
  Word words[kChunk];
  for (int64_t begin = 0; begin < count; begin += kChunk) {
    int64_t n = std::min(kChunk, count - begin);
    std::memcpy(words, data + begin * int64_t(sizeof(Word)),
                size_t(n) * sizeof(Word));
    bool any = false;
    for (int64_t i = 0; i < n; ++i)
      any |= (words[i] & exponent) == exponent;
    if (!any)
      continue;
    for (int64_t i = 0; i < n; ++i)
      if ((words[i] & exponent) == exponent)
        return begin + i;
  }
  return -1;
}

} // namespace

std::optional<NonFinite> findNonFinite(const uint8_t *data, DType dtype,
                                       int64_t count) {
  int64_t index = -1;
  switch (dtype) {
  case DType::F32:
    index = firstAllOnesExponent<uint32_t>(data, count, 0x7f800000u);
    break;
  case DType::BF16:
    index = firstAllOnesExponent<uint16_t>(data, count, 0x7f80u);
    break;
  case DType::F64:
    index = firstAllOnesExponent<uint64_t>(data, count,
                                           0x7ff0000000000000ull);
    break;
  case DType::I32:
  case DType::I64:
    break;
  }
  if (index < 0)
    return std::nullopt;
  return NonFinite{index, loadElement(data, dtype, index)};
}

std::optional<NonFiniteVariable> findNonFiniteVariable(const Manifest &manifest,
                                                       const uint8_t *arena) {
  for (const Variable &var : manifest.variables) {
    if (var.isCopy())
      continue;
    if (std::optional<NonFinite> bad =
            findNonFinite(arena + var.tensor.offset, var.tensor.dtype,
                          var.tensor.numElements()))
      return NonFiniteVariable{&var, *bad};
  }
  return std::nullopt;
}

const char *nonFiniteName(double value) {
  return std::isnan(value) ? "NaN" : value > 0 ? "Inf" : "-Inf";
}

std::string describeNonFinite(const std::string &variable,
                              const NonFinite &element) {
  size_t dot = variable.rfind('.');
  std::string name =
      dot == std::string::npos || dot == 0 || dot + 1 == variable.size()
          ? variable
          : variable.substr(dot + 1) + " of " + variable.substr(0, dot);
  return name + " holds " + nonFiniteName(element.value) + " (element " +
         std::to_string(element.index) + ")";
}

uint64_t hashVariables(const Manifest &manifest, const uint8_t *arena,
                       const VariableKind *kind) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (const Variable &var : manifest.variables) {
    if (kind && var.kind != *kind)
      continue;
    const uint8_t *p = arena + var.tensor.offset;
    for (int64_t i = 0, e = var.tensor.byteSize(); i < e; ++i) {
      h ^= p[i];
      h *= 0x100000001b3ULL;
    }
  }
  return h;
}

} // namespace kiln::rt::exec
