//===- manifest.cpp - Verifying and validating the model manifest ---------===//
//
// The manifest is a FlatBuffers buffer of kiln/rt/manifest.fbs: the
// generated verifier checks its structure (offsets, sizes, required
// members), the generated accessors read it, and the checks below are what
// a schema cannot say.

#include "kiln/rt/exec/manifest.h"
#include "kiln/rt/exec/variables.h"
#include "kiln/rt/manifest_generated.h"
#include "kiln/rt/model.h"

#include "kiln/base/json.h"
#include "kiln/ref/window.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <set>

namespace kiln::rt::exec {

const char *layoutName(Layout layout) {
  switch (layout) {
  case Layout::None: return "none";
  case Layout::Nhwc: return "nhwc";
  case Layout::Nchw: return "nchw";
  case Layout::NChw16c: return "nChw16c";
  }
  return "?";
}

const char *initKindName(InitKind kind) {
  switch (kind) {
  case InitKind::Zeros: return "zeros";
  case InitKind::Ones: return "ones";
  case InitKind::Constant: return "constant";
  case InitKind::Normal: return "normal";
  case InitKind::HeNormal: return "he_normal";
  case InitKind::Copy:
    return "copy";
  }
  return "?";
}

const char *callKindName(CallKind kind) {
  switch (kind) {
  case CallKind::Conv2dForward: return "conv2d_forward";
  case CallKind::Conv2dBackwardData: return "conv2d_backward_data";
  case CallKind::Conv2dBackwardFilter: return "conv2d_backward_filter";
  case CallKind::Matmul: return "matmul";
  case CallKind::Dense: return "dense";
  case CallKind::Reorder: return "reorder";
  case CallKind::DenseBackwardWeights: return "dense_backward_weights";
  }
  return "?";
}

int64_t TensorRef::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

int64_t TensorRef::byteSize() const {
  int64_t n = numElements();
  if (layout == Layout::NChw16c && shape.size() == 4 && shape[3] > 0)
    n = n / shape[3] * ((shape[3] + 15) / 16 * 16);
  return n * static_cast<int64_t>(dtypeInfo(dtype).bytes);
}

const TensorRef *Function::input(std::string_view name) const {
  auto it = inputs.find(std::string(name));
  return it == inputs.end() ? nullptr : &it->second;
}

const TensorRef *Function::output(std::string_view name) const {
  auto it = outputs.find(std::string(name));
  return it == outputs.end() ? nullptr : &it->second;
}

const TensorRef &Call::operand(std::string_view name) const {
  return operands.at(std::string(name));
}

bool Call::hasOperand(std::string_view name) const {
  return operands.count(std::string(name)) != 0;
}

std::string Call::describe(size_t index) const {
  std::string s = "call " + std::to_string(index) + " (" + callKindName(kind);
  if (!function.empty())
    s += ", function " + function;
  return s + ")";
}

const Variable *Manifest::findVariable(std::string_view name) const {
  for (const Variable &v : variables)
    if (v.name == name)
      return &v;
  return nullptr;
}

const Function *Manifest::findFunction(std::string_view name) const {
  auto it = functions.find(std::string(name));
  return it == functions.end() ? nullptr : &it->second;
}

static std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

Status inferConvOutputShape(const std::vector<int64_t> &input,
                            const std::vector<int64_t> &filter,
                            const Call &call, std::vector<int64_t> &output) {
  if (input.size() != 4 || filter.size() != 4)
    return KILN_STATUS(kInvalidArgument,
                       "a convolution needs a 4-D NHWC input and a 4-D HWIO "
                       "filter, got " + shapeString(input) + " and " +
                           shapeString(filter));
  if (input[3] != filter[2] * call.groups)
    return KILN_STATUS(kInvalidArgument,
                       "input channels " + std::to_string(input[3]) +
                           " differ from the filter's " +
                           std::to_string(filter[2]) +
                           (call.groups == 1
                                ? std::string()
                                : " times " + std::to_string(call.groups) +
                                      " groups") +
                           " (input " + shapeString(input) + ", filter " +
                           shapeString(filter) + ")");
  if (filter[3] % call.groups != 0)
    return KILN_STATUS(kInvalidArgument,
                       "the filter's " + std::to_string(filter[3]) +
                           " output channels are not a multiple of " +
                           std::to_string(call.groups) + " groups");
  output = {input[0], 0, 0, filter[3]};
  for (int i = 0; i < 2; ++i) {
    output[1 + i] = ref::slidingWindowOutputSize(
        input[1 + i], call.padding[2 * i], call.padding[2 * i + 1], filter[i],
        call.strides[i], call.dilations[i]);
    if (output[1 + i] == 0)
      return KILN_STATUS(kInvalidArgument,
                         "the dilated filter " + shapeString(filter) +
                             " does not fit the padded input " +
                             shapeString(input));
  }
  return Status::ok();
}

namespace {

namespace fbs = ::kiln::rt::fb;

/// A schedule entry as read from a manifest or a systolic program's info,
/// before the checks both share (checkScheduleEntry).
struct ScheduleEntry {
  std::string kind, variable;
  std::vector<std::string> slots;
  std::vector<std::pair<std::string, double>> epochs;
  std::optional<std::string> runLength;
};

Status error(const std::string &path, const std::string &what) {
  return KILN_STATUS(kInvalidArgument,
                     "manifest: " + (path.empty() ? "" : path + ": ") + what);
}

std::string join(const std::string &path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}

std::string index(const std::string &path, size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

std::string str(const flatbuffers::String *s) {
  return s ? s->str() : std::string();
}

/// The checks of a schedule entry; fills `s` but for its variable's check.
Status checkScheduleEntry(ScheduleEntry entry, const std::string &path,
                          Schedule &s) {
  s.kind = std::move(entry.kind);
  s.variable = std::move(entry.variable);
  std::set<std::string> seen;
  for (size_t i = 0; i < entry.slots.size(); ++i) {
    if (!seen.insert(entry.slots[i]).second)
      return error(index(join(path, "slots"), i),
                   "duplicate slot \"" + entry.slots[i] + "\"");
    s.slots.push_back(entry.slots[i]);
  }

  // The slots the runtime fills in. A runtime that ignored them would train
  // on their -1 placeholders, hence ABI 5 and strict checks.
  auto fillable = [&](const std::string &slot,
                      const std::string &where) -> Status {
    if (!seen.count(slot)) {
      std::string names;
      for (const std::string &n : s.slots)
        names += (names.empty() ? "" : ", ") + n;
      return error(where, "\"" + slot + "\" is not a slot of the schedule (its "
                          "slots: " + names + ")");
    }
    if (!isScheduleStepSlot(slot))
      return error(where, "\"" + slot + "\" is not a step count (*_steps, "
                          "boundary*); only those are filled in at run time");
    return Status::ok();
  };
  std::string epath = join(path, "epochs");
  for (const auto &[slot, e] : entry.epochs) {
    std::string spath = join(epath, slot);
    KILN_RETURN_IF_ERROR(fillable(slot, spath));
    if (!std::isfinite(e))
      return error(spath, fmt::format("number {} is not a finite double", e));
    if (e < 0)
      return error(spath, fmt::format("epochs must not be negative, got {}", e));
    if (!s.epochs.emplace(slot, e).second)
      return error(spath, "duplicate slot \"" + slot + "\"");
  }
  if (entry.runLength) {
    std::string rpath = join(path, "run_length");
    s.runLength = *entry.runLength;
    KILN_RETURN_IF_ERROR(fillable(s.runLength, rpath));
    if (s.epochs.count(s.runLength))
      return error(rpath, "\"" + s.runLength +
                              "\" is given in epochs too (schedule.epochs)");
  }
  return Status::ok();
}

/// Reads the verified buffer into a Manifest and checks what the schema
/// cannot say; every message names the member's path as the JSON form of
/// the manifest spells it ("calls[3].operands.filter.shape: ...").
class Parser {
public:
  explicit Parser(Manifest &m) : m(m) {}

  Status parse(const fbs::Manifest &root);

private:
  Manifest &m;

  static DType dtypeOf(fbs::DType d) {
    switch (d) {
    case fbs::DType::f32: return DType::F32;
    case fbs::DType::bf16: return DType::BF16;
    case fbs::DType::f64: return DType::F64;
    case fbs::DType::i32: return DType::I32;
    case fbs::DType::i64: return DType::I64;
    }
    return DType::F32;
  }

  /// A tensor slot "T"; checks that it lies inside the arena.
  Status parseTensor(const fbs::Tensor &t, const std::string &path,
                     TensorRef &out) {
    if (!fbs::EnumNameDType(t.dtype())[0])
      return error(join(path, "dtype"),
                   "unknown dtype (expected f32, bf16, f64, i32 or i64)");
    out.offset = t.offset();
    out.shape.assign(t.shape()->begin(), t.shape()->end());
    for (int64_t d : out.shape)
      if (d < 0)
        return error(join(path, "shape"), "negative dimension in " +
                                              shapeString(out.shape));
    out.dtype = dtypeOf(t.dtype());
    switch (t.layout()) {
    case fbs::Layout::none: out.layout = Layout::None; break;
    case fbs::Layout::nhwc: out.layout = Layout::Nhwc; break;
    case fbs::Layout::nchw: out.layout = Layout::Nchw; break;
    case fbs::Layout::nChw16c: out.layout = Layout::NChw16c; break;
    default:
      return error(join(path, "layout"),
                   "unknown layout (expected nhwc, nchw or nChw16c)");
    }
    if (out.layout != Layout::None && out.shape.size() != 4)
      return error(join(path, "layout"),
                   "a layout is only meaningful for a 4-D tensor, not " +
                       shapeString(out.shape));
    if (out.offset < 0 ||
        out.offset % static_cast<int64_t>(dtypeInfo(out.dtype).bytes) != 0)
      return error(join(path, "offset"),
                   "offset " + std::to_string(out.offset) +
                       " is negative or not a multiple of the " +
                       dtypeInfo(out.dtype).name + " element size");
    int64_t bytes = out.byteSize();
    if (out.offset > m.arenaBytes || bytes > m.arenaBytes - out.offset)
      return error(path, "bytes [" + std::to_string(out.offset) + ", " +
                             std::to_string(out.offset + bytes) +
                             ") lie outside the arena of " +
                             std::to_string(m.arenaBytes) + " bytes");
    return Status::ok();
  }

  Status parseTensorMap(
      const flatbuffers::Vector<flatbuffers::Offset<fbs::NamedTensor>> &v,
      const std::string &path, std::map<std::string, TensorRef> &out) {
    for (const fbs::NamedTensor *named : v) {
      std::string name = named->name()->str();
      if (out.count(name))
        return error(path, "duplicate member \"" + name + "\"");
      KILN_RETURN_IF_ERROR(
          parseTensor(*named->tensor(), join(path, name), out[name]));
    }
    return Status::ok();
  }

  Status parseVariable(const fbs::Variable &v, const std::string &path,
                       Variable &out);
  Status parseFunction(const fbs::Function &v, const std::string &path,
                       const std::string &name, Function &out);
  Status parseCall(const fbs::Call &v, const std::string &path, Call &out);
  Status checkCallShapes(const Call &call, const std::string &path);
  /// The optional post-op operands of a forward convolution.
  Status checkPostOps(const Call &call, const std::string &path);
  Status parseSchedule(const fbs::Schedule &v, const std::string &path);
  /// Every copy's source: another variable, not a copy, of the same shape,
  /// f32 or bf16.
  Status checkCopies();
};

Status Parser::parseVariable(const fbs::Variable &v, const std::string &path,
                             Variable &out) {
  out.name = v.name()->str();
  if (out.name.empty())
    return error(join(path, "name"), "empty variable name");
  std::string where = path + " (" + out.name + ")";

  switch (v.kind()) {
  case fbs::VariableKind::parameter: out.kind = VariableKind::Parameter; break;
  case fbs::VariableKind::state: out.kind = VariableKind::State; break;
  default:
    return error(join(where, "kind"),
                 "unknown variable kind (expected parameter or state)");
  }

  KILN_RETURN_IF_ERROR(parseTensor(*v.tensor(), where, out.tensor));
  // Checkpoints store a variable as its logical, row-major tensor.
  if (out.tensor.layout != Layout::None)
    return error(join(where, "layout"),
                 "variables are stored row-major (HWIO filters); a layout "
                 "does not apply");

  switch (v.init()) {
  case fbs::InitKind::zeros: out.init = InitKind::Zeros; break;
  case fbs::InitKind::ones: out.init = InitKind::Ones; break;
  case fbs::InitKind::constant: out.init = InitKind::Constant; break;
  case fbs::InitKind::normal: out.init = InitKind::Normal; break;
  case fbs::InitKind::he_normal: out.init = InitKind::HeNormal; break;
  case fbs::InitKind::copy: out.init = InitKind::Copy; break;
  default:
    return error(join(where, "init"),
                 "unknown initializer (expected zeros, ones, constant, "
                 "normal, he_normal or copy)");
  }
  bool isFloat =
      out.tensor.dtype == DType::F32 || out.tensor.dtype == DType::BF16;
  // A copy's source is checked once every variable is known (checkCopies):
  // it may be declared after the copy.
  if (v.of()) {
    if (!out.isCopy())
      return error(join(where, "of"),
                   std::string("only init \"copy\" takes a source, not \"") +
                       initKindName(out.init) + "\"");
    out.source = v.of()->str();
  } else if (out.isCopy()) {
    return error(where, "missing member \"of\" (the variable it copies)");
  }
  if (out.isCopy()) {
    // Not trained itself (its source's update rewrites it), so not a
    // parameter: replica checks and parameter counts leave it out.
    if (out.kind != VariableKind::State)
      return error(join(where, "kind"), "a copy must be a state variable");
    if (!isFloat)
      return error(join(where, "dtype"),
                   std::string("a copy must be f32 or bf16, not ") +
                       dtypeInfo(out.tensor.dtype).name);
  }
  if ((out.init == InitKind::Normal || out.init == InitKind::HeNormal) &&
      !isFloat)
    return error(join(where, "init"),
                 std::string(initKindName(out.init)) +
                     " needs an f32 or bf16 variable, not " +
                     dtypeInfo(out.tensor.dtype).name);
  if (out.init == InitKind::HeNormal && out.tensor.shape.size() < 2)
    return error(join(where, "init"),
                 "he_normal needs a rank >= 2 shape, not " +
                     shapeString(out.tensor.shape));
  if (out.init == InitKind::Normal) {
    out.stddev = v.std();
    if (!std::isfinite(out.stddev))
      return error(join(where, "std"),
                   fmt::format("number {} is not a finite double", out.stddev));
    if (!(out.stddev > 0))
      return error(join(where, "std"), "the standard deviation must be > 0");
    // kiln-run reads the initializer's f32 attribute; round the same way so
    // both start from identical values whatever digits the compiler wrote.
    out.stddev = static_cast<double>(static_cast<float>(out.stddev));
  }
  if (out.init != InitKind::Constant && v.data())
    return error(join(where, "data"),
                 std::string("only init \"constant\" takes data, not \"") +
                     initKindName(out.init) + "\"");
  if (out.init == InitKind::Constant && v.data()) {
    std::string dpath = join(where, "data");
    if (v.value())
      return error(where, "both \"value\" and \"data\": give one");
    // The verifier has checked that the block lies inside the buffer; its
    // length must be the variable's, or the values would be shifted or cut.
    auto bytes = static_cast<int64_t>(v.data()->size());
    if (bytes != out.tensor.byteSize())
      return error(dpath,
                   fmt::format("{} bytes for a variable of {}{} ({} bytes): "
                               "the initial values are truncated or "
                               "corrupted",
                               bytes, dtypeInfo(out.tensor.dtype).name,
                               shapeString(out.tensor.shape),
                               out.tensor.byteSize()));
    out.data = std::string_view(reinterpret_cast<const char *>(v.data()->data()),
                                v.data()->size());
    // As for "value" and checkpoints: a non-finite start is refused.
    if (std::optional<NonFinite> bad =
            findNonFinite(v.data()->data(), out.tensor.dtype,
                          out.tensor.numElements()))
      return error(index(dpath, static_cast<size_t>(bad->index)),
                   fmt::format("{} is not a finite initial value",
                               nonFiniteName(bad->value)));
  } else if (out.init == InitKind::Constant) {
    std::string vpath = join(where, "value");
    if (!v.value())
      return error(where, "missing member \"value\" (or \"data\")");
    for (size_t i = 0; i < v.value()->size(); ++i) {
      double x = v.value()->Get(static_cast<flatbuffers::uoffset_t>(i));
      if (!std::isfinite(x))
        return error(v.value()->size() == 1 ? vpath : index(vpath, i),
                     fmt::format("number {} is not a finite double", x));
      out.value.push_back(x);
    }
    auto n = static_cast<size_t>(out.tensor.numElements());
    if (out.value.size() != n && out.value.size() != 1)
      return error(vpath, std::to_string(out.value.size()) +
                              " values for a variable of " +
                              std::to_string(n) + " elements");
  }
  return Status::ok();
}

Status Parser::parseFunction(const fbs::Function &v, const std::string &path,
                             const std::string &name, Function &out) {
  out.symbol = v.symbol()->str();
  KILN_RETURN_IF_ERROR(
      parseTensorMap(*v.inputs(), join(path, "inputs"), out.inputs));
  KILN_RETURN_IF_ERROR(
      parseTensorMap(*v.outputs(), join(path, "outputs"), out.outputs));
  out.scratch = {v.scratch()->begin(), v.scratch()->end()};
  for (int64_t bound : out.scratch)
    if (bound < 0)
      return error(join(path, "scratch"), "value " + std::to_string(bound) +
                                              " is below 0");
  if (out.scratch[0] > out.scratch[1] || out.scratch[1] > m.arenaBytes)
    return error(join(path, "scratch"),
                 "[" + std::to_string(out.scratch[0]) + ", " +
                     std::to_string(out.scratch[1]) +
                     ") is not a range inside the arena");
  // What the runtime writes and reads around a call (model-abi.md).
  bool train = name == "train";
  std::vector<std::string_view> inputs = {"images", "labels"};
  std::vector<std::string_view> outputs = {"loss", "logits"};
  if (train) {
    inputs.push_back("step");
    outputs.push_back("learning_rate");
  }
  for (std::string_view in : inputs)
    if (!out.input(in))
      return error(join(path, "inputs"),
                   "missing input \"" + std::string(in) + "\"");
  for (std::string_view o : outputs)
    if (!out.output(o))
      return error(join(path, "outputs"),
                   "missing output \"" + std::string(o) + "\"");
  const TensorRef &images = *out.input("images");
  const TensorRef &labels = *out.input("labels");
  const TensorRef &loss = *out.output("loss");
  const TensorRef &logits = *out.output("logits");
  auto isFloat = [](DType d) { return d == DType::F32 || d == DType::BF16; };
  auto isScalar = [](const TensorRef &t) { return t.numElements() == 1; };
  if (images.shape.size() != 4 || !isFloat(images.dtype))
    return error(join(path, "inputs.images"),
                 "expected a 4-D f32 or bf16 image batch, got " +
                     std::string(dtypeInfo(images.dtype).name) +
                     shapeString(images.shape));
  if (labels.shape != std::vector<int64_t>{images.shape[0]} ||
      labels.dtype != DType::I32)
    return error(join(path, "inputs.labels"),
                 "expected i32[" + std::to_string(images.shape[0]) +
                     "], got " + dtypeInfo(labels.dtype).name +
                     shapeString(labels.shape));
  if (!isScalar(loss) || !isFloat(loss.dtype))
    return error(join(path, "outputs.loss"),
                 "expected one f32 or bf16 value, got " +
                     std::string(dtypeInfo(loss.dtype).name) +
                     shapeString(loss.shape));
  if (logits.shape.size() != 2 || logits.shape[0] != images.shape[0] ||
      !isFloat(logits.dtype))
    return error(join(path, "outputs.logits"),
                 "expected f32 or bf16 [" + std::to_string(images.shape[0]) +
                     ", classes], got " + dtypeInfo(logits.dtype).name +
                     shapeString(logits.shape));
  if (train) {
    const TensorRef &step = *out.input("step");
    if (!isScalar(step) || step.dtype != DType::I64)
      return error(join(path, "inputs.step"),
                   "expected one i64, got " +
                       std::string(dtypeInfo(step.dtype).name) +
                       shapeString(step.shape));
    const TensorRef &lr = *out.output("learning_rate");
    if (!isScalar(lr) || !isFloat(lr.dtype))
      return error(join(path, "outputs.learning_rate"),
                   "expected one f32 value, got " +
                       std::string(dtypeInfo(lr.dtype).name) +
                       shapeString(lr.shape));
  }
  return Status::ok();
}

Status Parser::parseCall(const fbs::Call &v, const std::string &path,
                         Call &out) {
  std::vector<std::string_view> operands;
  std::vector<std::string_view> optionalOperands;
  bool isConv = true;
  switch (v.kind()) {
  case fbs::CallKind::conv2d_forward:
    out.kind = CallKind::Conv2dForward;
    operands = {"input", "filter", "output"};
    optionalOperands = {"bias", "residual", "statistics"};
    break;
  case fbs::CallKind::conv2d_backward_data:
    out.kind = CallKind::Conv2dBackwardData;
    operands = {"output_grad", "filter", "input_grad"};
    break;
  case fbs::CallKind::conv2d_backward_filter:
    out.kind = CallKind::Conv2dBackwardFilter;
    operands = {"input", "output_grad", "filter_grad"};
    break;
  case fbs::CallKind::matmul:
    out.kind = CallKind::Matmul;
    operands = {"lhs", "rhs", "output"};
    isConv = false;
    break;
  case fbs::CallKind::dense:
    out.kind = CallKind::Dense;
    operands = {"input", "weight", "output"};
    optionalOperands = {"bias"};
    isConv = false;
    break;
  case fbs::CallKind::reorder:
    out.kind = CallKind::Reorder;
    operands = {"input", "output"};
    isConv = false;
    break;
  case fbs::CallKind::dense_backward_weights:
    out.kind = CallKind::DenseBackwardWeights;
    operands = {"input", "output_grad", "weight_grad", "bias_grad"};
    isConv = false;
    break;
  default:
    return error(join(path, "kind"),
                 "unknown call kind (expected conv2d_forward, "
                 "conv2d_backward_data, conv2d_backward_filter, matmul, "
                 "dense, dense_backward_weights or reorder)");
  }
  std::string kind = callKindName(out.kind);
  // Attributes of another kind of call would silently mean nothing.
  auto unknown = [&](const char *member) {
    return error(path, "unknown member \"" + std::string(member) + "\"");
  };
  if (!isConv) {
    if (v.strides())
      return unknown("strides");
    if (v.padding())
      return unknown("padding");
    if (v.dilations())
      return unknown("dilations");
    if (v.groups())
      return unknown("groups");
  }
  if (out.kind != CallKind::Conv2dForward && v.relu())
    return unknown("relu");
  if (out.kind != CallKind::Matmul && v.transpose_lhs())
    return unknown("transpose_lhs");
  if (out.kind != CallKind::Matmul && v.transpose_rhs())
    return unknown("transpose_rhs");

  out.function = str(v.function());

  std::string opath = join(path, "operands");
  KILN_RETURN_IF_ERROR(parseTensorMap(*v.operands(), opath, out.operands));
  for (std::string_view name : operands)
    if (!out.hasOperand(name))
      return error(opath, "missing operand \"" + std::string(name) + "\"");
  for (const auto &[name, tensor] : out.operands) {
    bool expected =
        std::find(operands.begin(), operands.end(), name) != operands.end() ||
        std::find(optionalOperands.begin(), optionalOperands.end(), name) !=
            optionalOperands.end();
    if (!expected)
      return error(opath, "unknown operand \"" + name + "\" for " + kind);
    if (tensor.dtype != DType::F32 && tensor.dtype != DType::BF16)
      return error(join(opath, name),
                   std::string("library kernels take f32 or bf16, not ") +
                       dtypeInfo(tensor.dtype).name);
  }

  if (isConv) {
    auto atLeast = [&](const char *member, int64_t value,
                       int64_t minValue) -> Status {
      if (value < minValue)
        return error(join(path, member), "value " + std::to_string(value) +
                                             " is below " +
                                             std::to_string(minValue));
      return Status::ok();
    };
    if (!v.strides())
      return error(path, "missing member \"strides\"");
    out.strides = {v.strides()->h(), v.strides()->w()};
    if (!v.padding())
      return error(path, "missing member \"padding\"");
    out.padding = {v.padding()->top(), v.padding()->bottom(),
                   v.padding()->left(), v.padding()->right()};
    if (v.dilations())
      out.dilations = {v.dilations()->h(), v.dilations()->w()};
    for (int64_t s : out.strides)
      KILN_RETURN_IF_ERROR(atLeast("strides", s, 1));
    for (int64_t p : out.padding)
      KILN_RETURN_IF_ERROR(atLeast("padding", p, 0));
    for (int64_t d : out.dilations)
      KILN_RETURN_IF_ERROR(atLeast("dilations", d, 1));
    if (v.groups())
      out.groups = v.groups();
    KILN_RETURN_IF_ERROR(atLeast("groups", out.groups, 1));
  }
  out.relu = v.relu();
  out.transposeLhs = v.transpose_lhs();
  out.transposeRhs = v.transpose_rhs();
  return checkCallShapes(out, path);
}

Status Parser::checkPostOps(const Call &call, const std::string &path) {
  const TensorRef &output = call.operand("output");
  if (call.hasOperand("bias")) {
    const TensorRef &bias = call.operand("bias");
    if (bias.dtype != DType::F32 ||
        bias.shape != std::vector<int64_t>{output.shape[3]})
      return error(path + ".operands.bias",
                   "must be f32[" + std::to_string(output.shape[3]) +
                       "] (one per output channel), not " +
                       dtypeInfo(bias.dtype).name + shapeString(bias.shape));
  }
  if (call.hasOperand("residual")) {
    const TensorRef &r = call.operand("residual");
    if (r.shape != output.shape || r.dtype != output.dtype ||
        r.layout != output.layout)
      return error(path + ".operands.residual",
                   "must have the output's shape, element type and layout");
  }
  if (call.hasOperand("statistics")) {
    const TensorRef &s = call.operand("statistics");
    if (s.dtype != DType::F32 ||
        s.shape != std::vector<int64_t>{2, output.shape[3]})
      return error(path + ".operands.statistics",
                   "must be f32[2, " + std::to_string(output.shape[3]) +
                       "] (mean and variance per output channel), not " +
                       dtypeInfo(s.dtype).name + shapeString(s.shape));
  }
  return Status::ok();
}

Status Parser::checkCallShapes(const Call &call, const std::string &path) {
  auto shapeOf = [&](std::string_view name) -> const std::vector<int64_t> & {
    return call.operand(name).shape;
  };
  auto mismatch = [&](std::string_view name,
                      const std::vector<int64_t> &expected) {
    return error(path + ".operands." + std::string(name),
                 "shape " + shapeString(shapeOf(name)) +
                     " does not match the expected " + shapeString(expected));
  };
  auto convShape = [&](std::string_view input, std::string_view filter,
                       std::vector<int64_t> &output) -> Status {
    Status s = inferConvOutputShape(shapeOf(input), shapeOf(filter), call,
                                    output);
    if (!s.isOk())
      return error(path, s.message());
    for (std::string_view name : {input, filter})
      if (call.operand(name).numElements() == 0)
        return error(path + ".operands." + std::string(name),
                     "empty tensor");
    if (call.operand(filter).layout != Layout::None)
      return error(path + ".operands." + std::string(filter),
                   "filters are HWIO; a layout does not apply");
    return Status::ok();
  };
  std::vector<int64_t> expected;
  switch (call.kind) {
  case CallKind::Conv2dForward:
    KILN_RETURN_IF_ERROR(convShape("input", "filter", expected));
    if (shapeOf("output") != expected)
      return mismatch("output", expected);
    return checkPostOps(call, path);
  case CallKind::Conv2dBackwardData:
    KILN_RETURN_IF_ERROR(convShape("input_grad", "filter", expected));
    if (shapeOf("output_grad") != expected)
      return mismatch("output_grad", expected);
    return Status::ok();
  case CallKind::Conv2dBackwardFilter:
    KILN_RETURN_IF_ERROR(convShape("input", "filter_grad", expected));
    if (shapeOf("output_grad") != expected)
      return mismatch("output_grad", expected);
    return Status::ok();
  case CallKind::Matmul: {
    const auto &lhs = shapeOf("lhs");
    const auto &rhs = shapeOf("rhs");
    size_t rank = lhs.size();
    if ((rank != 2 && rank != 3) || rhs.size() != rank)
      return error(path, "matmul needs two rank-2 or two rank-3 operands, "
                         "got " + shapeString(lhs) + " and " +
                             shapeString(rhs));
    int64_t m = call.transposeLhs ? lhs[rank - 1] : lhs[rank - 2];
    int64_t k = call.transposeLhs ? lhs[rank - 2] : lhs[rank - 1];
    int64_t k2 = call.transposeRhs ? rhs[rank - 1] : rhs[rank - 2];
    int64_t n = call.transposeRhs ? rhs[rank - 2] : rhs[rank - 1];
    if (k != k2)
      return error(path, "contraction sizes differ: lhs " + shapeString(lhs) +
                             (call.transposeLhs ? " (transposed)" : "") +
                             ", rhs " + shapeString(rhs) +
                             (call.transposeRhs ? " (transposed)" : ""));
    if (rank == 3 && lhs[0] != rhs[0])
      return error(path, "batch sizes differ: " + shapeString(lhs) + " and " +
                             shapeString(rhs));
    expected = rank == 3 ? std::vector<int64_t>{lhs[0], m, n}
                         : std::vector<int64_t>{m, n};
    if (shapeOf("output") != expected)
      return mismatch("output", expected);
    return Status::ok();
  }
  case CallKind::Dense: {
    const auto &x = shapeOf("input");
    const auto &w = shapeOf("weight");
    if (x.size() != 2 || w.size() != 2 || x[1] != w[0])
      return error(path, "dense needs input [N,K] and weight [K,M], got " +
                             shapeString(x) + " and " + shapeString(w));
    if (call.hasOperand("bias") &&
        shapeOf("bias") != std::vector<int64_t>{w[1]})
      return mismatch("bias", {w[1]});
    expected = {x[0], w[1]};
    if (shapeOf("output") != expected)
      return mismatch("output", expected);
    return Status::ok();
  }
  case CallKind::DenseBackwardWeights: {
    const auto &x = shapeOf("input");
    const auto &dy = shapeOf("output_grad");
    if (x.size() != 2 || dy.size() != 2 || x[0] != dy[0])
      return error(path, "dense_backward_weights needs input [N,K] and "
                         "output_grad [N,M], got " +
                             shapeString(x) + " and " + shapeString(dy));
    if (shapeOf("weight_grad") != std::vector<int64_t>{x[1], dy[1]})
      return mismatch("weight_grad", {x[1], dy[1]});
    if (shapeOf("bias_grad") != std::vector<int64_t>{dy[1]})
      return mismatch("bias_grad", {dy[1]});
    return Status::ok();
  }
  case CallKind::Reorder: {
    const TensorRef &in = call.operand("input"), &out = call.operand("output");
    if (in.shape.size() != 4)
      return error(path, "reorder needs a 4-D activation, got " +
                             shapeString(in.shape));
    if (out.shape != in.shape)
      return mismatch("output", in.shape);
    if (out.dtype != in.dtype)
      return error(path + ".operands.output",
                   "a reorder keeps the element type");
    return Status::ok();
  }
  }
  return Status::ok();
}

Status Parser::checkCopies() {
  for (size_t i = 0; i < m.variables.size(); ++i) {
    const Variable &copy = m.variables[i];
    if (!copy.isCopy())
      continue;
    std::string path =
        "variables[" + std::to_string(i) + "] (" + copy.name + ").of";
    if (copy.source == copy.name)
      return error(path, "a copy cannot be its own source");
    const Variable *source = m.findVariable(copy.source);
    if (!source)
      return error(path, "no variable named \"" + copy.source + "\"");
    if (source->isCopy())
      return error(path, "\"" + copy.source +
                             "\" is itself a copy; copy its source instead");
    if (source->tensor.dtype != DType::F32 &&
        source->tensor.dtype != DType::BF16)
      return error(path, "the source \"" + copy.source +
                             "\" must be f32 or bf16, not " +
                             dtypeInfo(source->tensor.dtype).name);
    if (source->tensor.shape != copy.tensor.shape)
      return error(path, "the source \"" + copy.source + "\" is " +
                             shapeString(source->tensor.shape) + ", the copy " +
                             shapeString(copy.tensor.shape));
  }
  return Status::ok();
}

Status Parser::parseSchedule(const fbs::Schedule &v, const std::string &path) {
  ScheduleEntry entry;
  entry.kind = v.kind()->str();
  entry.variable = v.variable()->str();
  for (const flatbuffers::String *slot : *v.slots())
    entry.slots.push_back(slot->str());
  if (v.epochs())
    for (const fbs::SlotEpochs *e : *v.epochs())
      entry.epochs.emplace_back(e->slot()->str(), e->epochs());
  if (v.run_length())
    entry.runLength = v.run_length()->str();
  Schedule s;
  KILN_RETURN_IF_ERROR(checkScheduleEntry(std::move(entry), path, s));
  const Variable *var = m.findVariable(s.variable);
  if (!var)
    return error(join(path, "variable"),
                 "no variable named \"" + s.variable + "\"");
  if (var->tensor.dtype != DType::F64 || var->tensor.shape.size() != 1 ||
      var->tensor.shape[0] != static_cast<int64_t>(s.slots.size()))
    return error(join(path, "variable"),
                 "\"" + s.variable + "\" must be f64[" +
                     std::to_string(s.slots.size()) + "] (one per slot), not " +
                     dtypeInfo(var->tensor.dtype).name +
                     shapeString(var->tensor.shape));
  m.schedule = std::move(s);
  return Status::ok();
}

Status Parser::parse(const fbs::Manifest &root) {
  m.abi = root.abi();
  if (m.abi != KILN_RT_MODEL_ABI_VERSION)
    return error("abi", "the model was compiled for model ABI " +
                            std::to_string(m.abi) +
                            ", but this runtime implements ABI " +
                            std::to_string(KILN_RT_MODEL_ABI_VERSION) +
                            "; rebuild it with a matching kilnc");
  m.model = root.model()->str();
  m.batch = root.batch();
  if (m.batch <= 0)
    return error("batch", "must be positive");
  m.arenaBytes = root.arena_bytes();
  if (m.arenaBytes <= 0)
    return error("arena_bytes", "must be positive");

  // Variables: named, inside the persistent region, not overlapping.
  std::set<std::string> names;
  for (size_t i = 0; i < root.variables()->size(); ++i) {
    Variable var;
    std::string path = index("variables", i);
    KILN_RETURN_IF_ERROR(parseVariable(
        *root.variables()->Get(static_cast<flatbuffers::uoffset_t>(i)), path,
        var));
    if (!names.insert(var.name).second)
      return error(path, "duplicate variable name \"" + var.name + "\"");
    m.persistentBytes =
        std::max(m.persistentBytes, var.tensor.offset + var.tensor.byteSize());
    m.variables.push_back(std::move(var));
  }
  KILN_RETURN_IF_ERROR(checkCopies());
  if (flatbuffers::Optional<int64_t> declared = root.persistent_bytes()) {
    if (*declared < m.persistentBytes || *declared > m.arenaBytes)
      return error("persistent_bytes",
                   std::to_string(*declared) +
                       " does not cover the variables (which end at " +
                       std::to_string(m.persistentBytes) +
                       ") or exceeds arena_bytes");
    m.persistentBytes = *declared;
  }
  std::vector<const Variable *> byOffset;
  for (const Variable &v : m.variables)
    byOffset.push_back(&v);
  std::sort(byOffset.begin(), byOffset.end(),
            [](const Variable *a, const Variable *b) {
              return a->tensor.offset < b->tensor.offset;
            });
  for (size_t i = 1; i < byOffset.size(); ++i) {
    const Variable &a = *byOffset[i - 1], &b = *byOffset[i];
    if (a.tensor.offset + a.tensor.byteSize() > b.tensor.offset &&
        b.tensor.byteSize() > 0)
      return error("variables", "\"" + a.name + "\" and \"" + b.name +
                                    "\" overlap in the arena");
  }

  if (root.schedule())
    KILN_RETURN_IF_ERROR(parseSchedule(*root.schedule(), "schedule"));

  for (const fbs::Function *f : *root.functions()) {
    std::string name = f->name()->str();
    if (name != "train" && name != "eval")
      continue; // informational extras (a future "predict")
    if (m.functions.count(name))
      return error("functions", "duplicate function \"" + name + "\"");
    KILN_RETURN_IF_ERROR(
        parseFunction(*f, "functions." + name, name, m.functions[name]));
  }
  if (!m.findFunction("train"))
    return error("functions", "missing the \"train\" function");
  for (const auto &[name, f] : m.functions)
    if (f.input("images")->shape[0] != m.batch)
      return error("functions." + name + ".inputs.images",
                   "batch " + std::to_string(f.input("images")->shape[0]) +
                       " differs from the manifest's batch " +
                       std::to_string(m.batch));

  for (size_t i = 0; i < root.calls()->size(); ++i) {
    Call call;
    KILN_RETURN_IF_ERROR(parseCall(
        *root.calls()->Get(static_cast<flatbuffers::uoffset_t>(i)),
        index("calls", i), call));
    m.calls.push_back(std::move(call));
  }

  for (size_t i = 0; i < root.buckets()->size(); ++i) {
    std::string path = index("buckets", i);
    const fbs::Bucket &b =
        *root.buckets()->Get(static_cast<flatbuffers::uoffset_t>(i));
    Bucket bucket;
    // Generated code passes the id; keeping id == index makes it an index.
    if (b.id() != static_cast<int64_t>(i))
      return error(join(path, "id"), "bucket ids must be 0, 1, ... in "
                                     "order; got " + std::to_string(b.id()));
    bucket.id = b.id();
    for (size_t j = 0; j < b.tensors()->size(); ++j) {
      TensorRef t;
      std::string tpath = index(join(path, "tensors"), j);
      KILN_RETURN_IF_ERROR(parseTensor(
          *b.tensors()->Get(static_cast<flatbuffers::uoffset_t>(j)), tpath,
          t));
      if (t.dtype != DType::F32 && t.dtype != DType::BF16 &&
          t.dtype != DType::F64)
        return error(tpath, std::string("gradients are f32, bf16 or f64, "
                                        "not ") + dtypeInfo(t.dtype).name);
      bucket.tensors.push_back(std::move(t));
    }
    m.buckets.push_back(std::move(bucket));
  }
  return Status::ok();
}

/// A systolic program info's schedule entry (JSON), read into the entry the
/// manifest's checks take.
Status readScheduleJson(const json::Value &v, const std::string &path,
                        ScheduleEntry &out) {
  using Kind = json::Value::Kind;
  auto string = [&](const json::Value *field, const std::string &where,
                    std::string &s) -> Status {
    if (!field || field->kind != Kind::String)
      return error(where, "expected a string");
    s = field->text;
    return Status::ok();
  };
  if (v.kind != Kind::Object)
    return error(path, "expected an object");
  KILN_RETURN_IF_ERROR(string(v.member("kind"), join(path, "kind"), out.kind));
  KILN_RETURN_IF_ERROR(
      string(v.member("variable"), join(path, "variable"), out.variable));
  const json::Value *slots = v.member("slots");
  if (!slots || slots->kind != Kind::Array)
    return error(join(path, "slots"), "expected an array");
  for (size_t i = 0; i < slots->elements.size(); ++i) {
    out.slots.emplace_back();
    KILN_RETURN_IF_ERROR(string(&slots->elements[i],
                                index(join(path, "slots"), i),
                                out.slots.back()));
  }
  if (const json::Value *epochs = v.member("epochs")) {
    if (epochs->kind != Kind::Object)
      return error(join(path, "epochs"), "expected an object");
    for (const auto &[slot, value] : epochs->members) {
      if (value.kind != Kind::Number)
        return error(join(join(path, "epochs"), slot), "expected a number");
      out.epochs.emplace_back(slot, std::strtod(value.text.c_str(), nullptr));
    }
  }
  if (const json::Value *runLength = v.member("run_length")) {
    out.runLength.emplace();
    KILN_RETURN_IF_ERROR(
        string(runLength, join(path, "run_length"), *out.runLength));
  }
  return Status::ok();
}

} // namespace

bool isScheduleStepSlot(std::string_view slot) {
  constexpr std::string_view kSteps = "_steps";
  return (slot.size() > kSteps.size() &&
          slot.substr(slot.size() - kSteps.size()) == kSteps) ||
         slot.substr(0, 8) == "boundary";
}

Status parseScheduleEntry(const json::Value &entry, const std::string &path,
                          Schedule &out) {
  ScheduleEntry read;
  KILN_RETURN_IF_ERROR(readScheduleJson(entry, path, read));
  return checkScheduleEntry(std::move(read), path, out);
}

const fb::Manifest *verifyManifest(std::string_view bytes) {
  auto *data = reinterpret_cast<const uint8_t *>(bytes.data());
  flatbuffers::Verifier verifier(data, bytes.size());
  return fb::VerifyManifestBuffer(verifier) ? fb::GetManifest(data) : nullptr;
}

StatusOr<Manifest> parseManifest(std::string_view bytes) {
  // The schema's own checks first: offsets, sizes, required members, the
  // identifier; everything after reads through in-bounds accessors.
  const fb::Manifest *root = verifyManifest(bytes);
  if (!root)
    return KILN_STATUS(kInvalidArgument,
                       "manifest: not a valid manifest buffer (" +
                           std::to_string(bytes.size()) +
                           " bytes that FlatBuffers' verifier of "
                           "kiln/rt/manifest.fbs rejects)");
  Manifest manifest;
  Parser parser(manifest);
  KILN_RETURN_IF_ERROR(parser.parse(*root));
  return manifest;
}

} // namespace kiln::rt::exec
