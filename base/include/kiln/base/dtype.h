//===- dtype.h - The element types of Kiln's tensors ------------*- C++ -*-===//
//
// The element types a Kiln tensor holds, whichever part holds it: the
// compiler's interpreter (kiln-run), the manifest of a compiled model and
// the runtime's arena, checkpoints. Their names (as in MLIR types and the
// manifest), safetensors spellings and sizes come from the one table here.
// Formats with element types of their own map to these: safetensors files
// (kiln/rt/safetensors.h, which can hold more types than Kiln uses), the
// systolic program (systolic/schema/program.fbs: f32, bf16, i32) and the
// manifest's FlatBuffers schema (same order as here). Plain C++17,
// header-only.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_BASE_DTYPE_H
#define KILN_BASE_DTYPE_H

#include <cstddef>
#include <optional>
#include <string_view>

namespace kiln {

enum class DType { F32, BF16, F64, I32, I64 };

/// What the one table knows of an element type.
struct DTypeInfo {
  DType dtype;
  /// "f32": the MLIR type and the manifest's name.
  const char *name;
  /// "F32": the safetensors header's name.
  const char *safetensorsName;
  /// Bytes per element.
  size_t bytes;
};

/// Every element type, in the order of DType.
inline constexpr DTypeInfo kDTypes[] = {
    {DType::F32, "f32", "F32", 4},  {DType::BF16, "bf16", "BF16", 2},
    {DType::F64, "f64", "F64", 8},  {DType::I32, "i32", "I32", 4},
    {DType::I64, "i64", "I64", 8},
};

namespace detail {
constexpr bool dtypesInOrder() {
  for (size_t i = 0; i < sizeof(kDTypes) / sizeof(kDTypes[0]); ++i)
    if (static_cast<size_t>(kDTypes[i].dtype) != i)
      return false;
  return true;
}
} // namespace detail
static_assert(detail::dtypesInOrder(), "kDTypes is indexed by DType");

constexpr const DTypeInfo &dtypeInfo(DType dtype) {
  return kDTypes[static_cast<size_t>(dtype)];
}

/// The element type called `name` ("f32", ...); nullopt for any other name.
inline std::optional<DType> dtypeFromName(std::string_view name) {
  for (const DTypeInfo &info : kDTypes)
    if (name == info.name)
      return info.dtype;
  return std::nullopt;
}

} // namespace kiln

#endif // KILN_BASE_DTYPE_H
