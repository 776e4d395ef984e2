//===- manifest.h - The compiled model's manifest, parsed -------*- C++ -*-===//
//
// The manifest (docs/model-abi.md) is the FlatBuffers buffer of
// kiln/rt/manifest.fbs a compiled model returns from kiln_model_manifest():
// arena size, variables, the step functions' input and output slots, the
// library calls and the allreduce buckets. parseManifest() verifies it with
// the schema's generated verifier, reads it into these structs and checks
// everything else the runtime relies on before it touches the arena: every
// tensor lies inside the arena, variables lie in the persistent region, a
// copy variable mirrors another variable of its shape, shapes of library
// calls agree (the output of a convolution is what its input, filter,
// strides and padding give), dtypes and layouts are ones the runtime knows.
// Errors name the member's path as the manifest's JSON form spells it
// ("calls[3].operands.filter.shape: ...").
//
// A call's attributes that its kind does not take (a matmul's strides) are
// errors, where a misplaced attribute would silently change the numbers.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RT_EXEC_MANIFEST_H
#define KILN_RT_EXEC_MANIFEST_H

#include "kiln/base/dtype.h"
#include "kiln/base/status.h"

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::json {
struct Value; // kiln/base/json.h
} // namespace kiln::json

namespace kiln::rt::fb {
struct Manifest; // kiln/rt/manifest_generated.h
} // namespace kiln::rt::fb

namespace kiln::rt::exec {

/// Physical layout of a 4-D activation whose logical shape is NHWC. None
/// (no "layout" member) means row-major: NHWC for an activation, HWIO for a
/// filter.
enum class Layout { None, Nhwc, Nchw, NChw16c };
const char *layoutName(Layout layout);

/// A tensor slot in the arena ("T" in model-abi.md).
struct TensorRef {
  int64_t offset = 0;
  std::vector<int64_t> shape;
  DType dtype = DType::F32;
  Layout layout = Layout::None;

  int64_t numElements() const;
  /// Bytes the tensor occupies (nChw16c pads channels to 16).
  int64_t byteSize() const;
  /// Whether the tensor is stored row-major, NHWC for an activation.
  bool isRowMajor() const {
    return layout == Layout::None || layout == Layout::Nhwc;
  }
};

enum class VariableKind { Parameter, State };
enum class InitKind { Zeros, Ones, Constant, Normal, HeNormal, Copy };
const char *initKindName(InitKind kind);

struct Variable {
  std::string name;
  VariableKind kind = VariableKind::Parameter;
  TensorRef tensor;
  InitKind init = InitKind::Zeros;
  /// normal: the standard deviation, as the f32 attribute kiln-run reads.
  double stddev = 0;
  /// constant: one value per element, or a single value for all.
  std::vector<double> value;
  /// constant, instead of `value`: the values as the little-endian bytes of
  /// the dtype (tensor.byteSize() of them). A view into the buffer given to
  /// parseManifest (the executable's read-only data), so a large model's
  /// initial values are copied once, into the arena, and that buffer must
  /// outlive the Manifest.
  std::string_view data;
  /// copy: the variable this one mirrors, converted to its dtype (a bf16
  /// copy of an f32 master weight). Derived state: refilled from the source
  /// after initialization, loading and broadcast, left out of checkpoints.
  std::string source;

  bool isCopy() const { return init == InitKind::Copy; }
};

struct Schedule {
  std::string kind;
  /// Name of the f64 variable holding the parameters.
  std::string variable;
  std::vector<std::string> slots;
  /// Step slots the compiler left for the runtime to fill in (ABI 5), which
  /// hold -1 until it does: those given in epochs, with their epochs
  /// (resolved with the run's steps per epoch), ...
  std::map<std::string, double> epochs;
  /// ... and the horizon slot that takes the run's length (empty: none).
  std::string runLength;
};

/// Whether schedule slot `slot` counts steps ("*_steps", "boundary*"): its
/// values must be non-negative integers, and it may be given in epochs.
bool isScheduleStepSlot(std::string_view slot);

struct Function {
  std::string symbol;
  std::map<std::string, TensorRef> inputs;
  std::map<std::string, TensorRef> outputs;
  /// [begin, end) of the region the function may overwrite.
  std::array<int64_t, 2> scratch{0, 0};

  const TensorRef *input(std::string_view name) const;
  const TensorRef *output(std::string_view name) const;
};

enum class CallKind {
  Conv2dForward,
  Conv2dBackwardData,
  Conv2dBackwardFilter,
  Matmul,
  Dense,
  /// The same activation into another layout (input -> output).
  Reorder,
  /// A dense layer's weight and bias gradients from its input and output
  /// gradient: weight_grad = input^T output_grad, bias_grad = column sums.
  DenseBackwardWeights,
};
const char *callKindName(CallKind kind);

struct Call {
  CallKind kind = CallKind::Matmul;
  /// "train" or "eval" (informational; kernels serve any caller).
  std::string function;
  std::map<std::string, TensorRef> operands;
  // Convolutions: {sh, sw}, {top, bottom, left, right}, {dh, dw}.
  std::array<int64_t, 2> strides{1, 1};
  std::array<int64_t, 4> padding{0, 0, 0, 0};
  std::array<int64_t, 2> dilations{1, 1};
  // Convolutions: channel groups; the filter is [KH, KW, Cin/groups, Cout]
  // and output channel o reads group o / (Cout/groups) of the input.
  int64_t groups = 1;
  // Conv2dForward with the optional operands "bias" (f32 [Cout]) and
  // "residual" (shaped like "output"; it may be the output's own storage):
  // output = [relu](conv + bias [+ residual]); and "statistics" (f32
  // [2, Cout]), written with each output channel's mean and biased variance
  // over the batch and pixels of the output as stored.
  bool relu = false;
  // Matmul: operands stored transposed (the last two dims swapped).
  bool transposeLhs = false;
  bool transposeRhs = false;

  const TensorRef &operand(std::string_view name) const;
  bool hasOperand(std::string_view name) const;
  /// "call 3 (conv2d_forward, function train)" for messages.
  std::string describe(size_t index) const;
};

struct Bucket {
  int32_t id = 0;
  std::vector<TensorRef> tensors;
};

struct Manifest {
  int64_t abi = 0;
  std::string model;
  int64_t batch = 0;
  int64_t arenaBytes = 0;
  /// End of the variables' region (the manifest's "persistent_bytes" if
  /// given, otherwise the end of the last variable).
  int64_t persistentBytes = 0;
  std::vector<Variable> variables;
  std::optional<Schedule> schedule;
  std::map<std::string, Function> functions;
  std::vector<Call> calls;
  std::vector<Bucket> buckets;

  const Variable *findVariable(std::string_view name) const;
  const Function *findFunction(std::string_view name) const;
};

/// The bytes kiln_model_manifest() returns.
inline std::string_view manifestBytes(const uint8_t *data, size_t size) {
  return {reinterpret_cast<const char *>(data), size};
}

/// The root of `bytes` if FlatBuffers' verifier of the schema accepts them,
/// else null. Only structure: parseManifest also checks the meaning.
const fb::Manifest *verifyManifest(std::string_view bytes);

/// Verifies, parses and validates the manifest buffer `bytes`.
StatusOr<Manifest> parseManifest(std::string_view bytes);

/// Parses and validates a manifest's `schedule` entry (also the systolic
/// program info's), all but its variable; messages start with `path`.
Status parseScheduleEntry(const json::Value &entry, const std::string &path,
                          Schedule &out);

/// Output shape of a convolution (NHWC input, HWIO filter), or an error.
Status inferConvOutputShape(const std::vector<int64_t> &input,
                            const std::vector<int64_t> &filter,
                            const Call &call, std::vector<int64_t> &output);

} // namespace kiln::rt::exec

#endif // KILN_RT_EXEC_MANIFEST_H
