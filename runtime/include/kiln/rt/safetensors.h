//===- safetensors.h - Reading and writing safetensors files ----*- C++ -*-===//
//
// Part of Kiln. The checkpoint format of the runtime and of kiln-run: the
// safetensors layout (https://huggingface.co/docs/safetensors):
//
//   u64 little-endian N | N bytes of JSON header | data
//
// The header maps each tensor name to {"dtype", "shape", "data_offsets":
// [begin, end]} (offsets relative to the start of the data, end exclusive)
// and may hold "__metadata__", a map of strings to strings. Element data is
// little-endian and row-major.
//
// Reading is strict: every inconsistency (truncated file, a header size
// beyond the file, malformed JSON, an unknown dtype, offsets that overlap,
// leave gaps or leave the data, a byte count that does not match dtype and
// shape) is an error whose message names the file and, where there is one,
// the tensor. Writing goes to a temporary file in the destination's folder,
// which is flushed to disk (fsync) and then renamed over the destination, so
// a reader never sees a half-written file and a failed write leaves an
// existing file untouched.
//
// Plain C++17, no dependencies: the runtime (checkpoints) and kiln-run
// (variables, inputs, results) share it.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RT_SAFETENSORS_H
#define KILN_RT_SAFETENSORS_H

#include "kiln/base/dtype.h"

#include "kiln/base/status.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::rt::safetensors {

/// Element types, named as in the header ("F32", "BF16", ...).
enum class DType {
  Bool,
  U8,
  I8,
  I16,
  U16,
  F16,
  BF16,
  I32,
  U32,
  F32,
  F64,
  I64,
  U64
};

/// "F32" for DType::F32.
const char *dtypeName(DType dtype);
/// Parses a header dtype name; false if unknown.
bool parseDType(std::string_view name, DType &dtype);
/// Bytes per element.
size_t dtypeSize(DType dtype);
/// The file's element type of Kiln's `dtype` (kiln/base/dtype.h), the one
/// its safetensors name names.
DType fromKilnDType(kiln::DType dtype);

/// One named tensor with its raw little-endian data.
struct Tensor {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;

  /// Product of the shape (1 for a scalar).
  int64_t numElements() const;
};

/// Encoders: a tensor holding `values` (whose count must match `shape`).
Tensor fromF32(std::string name, std::vector<int64_t> shape,
               const std::vector<float> &values);
Tensor fromBf16Bits(std::string name, std::vector<int64_t> shape,
                    const std::vector<uint16_t> &bits);
Tensor fromF64(std::string name, std::vector<int64_t> shape,
               const std::vector<double> &values);
Tensor fromI32(std::string name, std::vector<int64_t> shape,
               const std::vector<int32_t> &values);
Tensor fromI64(std::string name, std::vector<int64_t> shape,
               const std::vector<int64_t> &values);

/// Decoders; the tensor's dtype must be the one named (a mismatch is a
/// programming error and aborts with a message).
std::vector<float> toF32(const Tensor &tensor);
std::vector<uint16_t> toBf16Bits(const Tensor &tensor);
std::vector<double> toF64(const Tensor &tensor);
std::vector<int32_t> toI32(const Tensor &tensor);
std::vector<int64_t> toI64(const Tensor &tensor);

/// The contents of a safetensors file.
struct File {
  /// Read: in the order of their data. Written: in this order.
  std::vector<Tensor> tensors;
  /// The optional "__metadata__" map.
  std::map<std::string, std::string> metadata;

  /// The tensor called `name`, or null.
  const Tensor *find(std::string_view name) const;
};

/// Parses a whole file image; `what` names it in error messages, which read
/// "<what>: <problem>". kDataLoss if the image is not a valid safetensors
/// file.
Status parse(const uint8_t *data, size_t size, const std::string &what,
             File &file);

/// Reads and validates `path`: kNotFound or kIoError if it cannot be read,
/// else as parse().
Status read(const std::string &path, File &file);

/// The file image of `file`: header padded with spaces to a multiple of 8
/// bytes (so the data is 8-byte aligned), then the tensors' data in order.
/// Fails for duplicate or empty names, the reserved name "__metadata__", or a
/// byte count that does not match dtype and shape (kInvalidArgument).
Status serialize(const File &file, std::vector<uint8_t> &image);

/// Writes `file` to `path` atomically: a temporary file in the same folder,
/// fsync, rename over `path`, fsync of the folder. On failure the temporary
/// file is removed and an existing `path` is left as it was. Messages start
/// with `path`; kIoError when the file system refuses, kInvalidArgument for
/// what serialize() rejects.
Status write(const std::string &path, const File &file);

} // namespace kiln::rt::safetensors

#endif // KILN_RT_SAFETENSORS_H
