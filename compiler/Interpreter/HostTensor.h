//===- HostTensor.h - The interpreter's runtime values ----------*- C++ -*-===//
//
// Part of Kiln. What one SSA value of a kiln program holds while kiln-run
// executes it: an element type, a concrete shape and the data. f32 and bf16
// tensors are kept as float (bf16 values are floats already rounded to bf16,
// so the reference kernels run on them unchanged); f64 as double; i32 and i64
// as int64_t. No MLIR here, so the runtime's tests can use it too.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_INTERPRETER_HOSTTENSOR_H
#define KILN_COMPILER_INTERPRETER_HOSTTENSOR_H

#include "kiln/base/dtype.h"
#include "kiln/base/status.h"
#include "kiln/ref/tensor.h"
#include "kiln/rt/safetensors.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kiln::interp {

/// True for the types stored as float (f32, bf16).
inline bool isFloat(DType type) {
  return type == DType::F32 || type == DType::BF16;
}
/// True for the types stored as int64_t (i32, i64).
inline bool isInteger(DType type) {
  return type == DType::I32 || type == DType::I64;
}

struct HostTensor {
  DType type = DType::F32;
  ref::Shape shape;
  /// F32 and BF16 elements.
  std::vector<float> floats;
  /// F64 elements.
  std::vector<double> doubles;
  /// I32 and I64 elements.
  std::vector<int64_t> ints;
  /// For a scalar that a kernel computes in double before rounding it to f32
  /// (the loss of softmax_cross_entropy): that double. Gradient checks
  /// difference it, since the rounded loss has too few digits.
  std::optional<double> wide;

  /// A zero tensor of `type` and `shape`.
  static HostTensor zeros(DType type, ref::Shape shape);
  /// Takes over a reference-kernel result (f32 or bf16 values).
  static HostTensor fromRef(ref::Tensor tensor,
                            DType type = DType::F32);

  int64_t numElements() const { return ref::numElements(shape); }
  /// A copy of the float data as a reference-kernel tensor (F32/BF16 only).
  ref::Tensor toRef() const;
};

/// "2x3xf32", as the body of an MLIR tensor type.
std::string typeString(const HostTensor &tensor);

/// Up to `limit` elements, comma separated, floats with 9 significant digits
/// (enough to round-trip an f32), followed by ", ... (N more)" if truncated.
std::string formatValues(const HostTensor &tensor, size_t limit);

/// The tensor as a safetensors entry: F32, BF16 (the rounded floats' upper
/// halves, exact), F64, I32 or I64.
rt::safetensors::Tensor toSafetensors(const HostTensor &tensor,
                                      std::string name);

/// Converts a safetensors entry of the matching dtype; kInvalidArgument for
/// a dtype that is not one of the five.
Status fromSafetensors(const rt::safetensors::Tensor &entry,
                       HostTensor &tensor);

} // namespace kiln::interp

#endif // KILN_COMPILER_INTERPRETER_HOSTTENSOR_H
