//===- manifest.cpp - Parsing and validating the model manifest -----------===//

#include "kiln/rt/exec/manifest.h"
#include "kiln/rt/model.h"

#include "json.h" // kiln_safetensors' minimal JSON reader (runtime/checkpoint)

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <set>

namespace kiln::rt::exec {

const char *dtypeName(DType dtype) {
  switch (dtype) {
  case DType::F32: return "f32";
  case DType::BF16: return "bf16";
  case DType::F64: return "f64";
  case DType::I32: return "i32";
  case DType::I64: return "i64";
  }
  return "?";
}

size_t dtypeSize(DType dtype) {
  switch (dtype) {
  case DType::BF16: return 2;
  case DType::F32:
  case DType::I32: return 4;
  case DType::F64:
  case DType::I64: return 8;
  }
  return 0;
}

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
  return n * static_cast<int64_t>(dtypeSize(dtype));
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
  if (input[3] != filter[2])
    return KILN_STATUS(kInvalidArgument,
                       "input channels " + std::to_string(input[3]) +
                           " differ from the filter's " +
                           std::to_string(filter[2]) + " (input " +
                           shapeString(input) + ", filter " +
                           shapeString(filter) + ")");
  output = {input[0], 0, 0, filter[3]};
  for (int i = 0; i < 2; ++i) {
    int64_t extent = input[1 + i] + call.padding[2 * i] +
                     call.padding[2 * i + 1] -
                     call.dilations[i] * (filter[i] - 1) - 1;
    if (extent < 0)
      return KILN_STATUS(kInvalidArgument,
                         "the dilated filter " + shapeString(filter) +
                             " does not fit the padded input " +
                             shapeString(input));
    output[1 + i] = extent / call.strides[i] + 1;
  }
  return Status::ok();
}

namespace {

using json::Value;

/// Walks the JSON tree and records the path of the current value so every
/// message says where the problem is.
class Parser {
public:
  explicit Parser(Manifest &m) : m(m) {}

  Status parse(const Value &root);
  /// The schedule entry without its variable (parseScheduleEntry).
  static Status parseScheduleEntry(const Value &v, const std::string &path,
                                   Schedule &s);

private:
  Manifest &m;

  static Status error(const std::string &path, const std::string &what) {
    return KILN_STATUS(kInvalidArgument,
                       "manifest: " + (path.empty() ? "" : path + ": ") + what);
  }

  static const char *kindName(Value::Kind k) {
    switch (k) {
    case Value::Kind::Null: return "null";
    case Value::Kind::Bool: return "a boolean";
    case Value::Kind::Number: return "a number";
    case Value::Kind::String: return "a string";
    case Value::Kind::Array: return "an array";
    case Value::Kind::Object: return "an object";
    }
    return "?";
  }

  static Status expectKind(const Value &v, Value::Kind kind,
                           const std::string &path) {
    if (v.kind != kind)
      return error(path, std::string("expected ") + kindName(kind) +
                             ", got " + kindName(v.kind));
    return Status::ok();
  }

  static std::string join(const std::string &path, std::string_view key) {
    return path.empty() ? std::string(key) : path + "." + std::string(key);
  }

  /// The member `key` of object `obj`; an error if it is absent.
  static Status require(const Value &obj, std::string_view key,
                        const std::string &path, const Value *&out) {
    out = obj.member(key);
    if (!out)
      return error(path, "missing member \"" + std::string(key) + "\"");
    return Status::ok();
  }

  static Status onlyKnownMembers(const Value &obj, const std::string &path,
                                 std::initializer_list<std::string_view> keys) {
    for (const auto &member : obj.members)
      if (std::find(keys.begin(), keys.end(), member.first) == keys.end())
        return error(path, "unknown member \"" + member.first + "\"");
    return Status::ok();
  }

  static Status getInt(const Value &v, const std::string &path, int64_t &out) {
    KILN_RETURN_IF_ERROR(expectKind(v, Value::Kind::Number, path));
    const std::string &t = v.text;
    if (t.empty() || t.find_first_of(".eE") != std::string::npos)
      return error(path, "expected an integer, got " + t);
    errno = 0;
    char *end = nullptr;
    long long value = std::strtoll(t.c_str(), &end, 10);
    if (errno == ERANGE || *end != '\0')
      return error(path, "integer " + t + " is out of range");
    out = value;
    return Status::ok();
  }

  static Status getDouble(const Value &v, const std::string &path,
                          double &out) {
    KILN_RETURN_IF_ERROR(expectKind(v, Value::Kind::Number, path));
    char *end = nullptr;
    out = std::strtod(v.text.c_str(), &end);
    if (*end != '\0' || !std::isfinite(out))
      return error(path, "number " + v.text + " is not a finite double");
    return Status::ok();
  }

  static Status getString(const Value &v, const std::string &path,
                          std::string &out) {
    KILN_RETURN_IF_ERROR(expectKind(v, Value::Kind::String, path));
    out = v.text;
    return Status::ok();
  }

  static Status getBool(const Value &v, const std::string &path, bool &out) {
    KILN_RETURN_IF_ERROR(expectKind(v, Value::Kind::Bool, path));
    out = v.boolean;
    return Status::ok();
  }

  static Status getIntArray(const Value &v, const std::string &path,
                            std::vector<int64_t> &out) {
    KILN_RETURN_IF_ERROR(expectKind(v, Value::Kind::Array, path));
    out.clear();
    for (size_t i = 0; i < v.elements.size(); ++i) {
      int64_t x;
      KILN_RETURN_IF_ERROR(
          getInt(v.elements[i], path + "[" + std::to_string(i) + "]", x));
      out.push_back(x);
    }
    return Status::ok();
  }

  template <size_t N>
  static Status getFixedArray(const Value &v, const std::string &path,
                              int64_t minValue, std::array<int64_t, N> &out) {
    std::vector<int64_t> values;
    KILN_RETURN_IF_ERROR(getIntArray(v, path, values));
    if (values.size() != N)
      return error(path, "expected " + std::to_string(N) + " integers, got " +
                             std::to_string(values.size()));
    for (size_t i = 0; i < N; ++i) {
      if (values[i] < minValue)
        return error(path, "value " + std::to_string(values[i]) +
                               " is below " + std::to_string(minValue));
      out[i] = values[i];
    }
    return Status::ok();
  }

  static Status parseDType(const Value &v, const std::string &path,
                           DType &out) {
    std::string s;
    KILN_RETURN_IF_ERROR(getString(v, path, s));
    static const std::pair<const char *, DType> kNames[] = {
        {"f32", DType::F32}, {"bf16", DType::BF16}, {"f64", DType::F64},
        {"i32", DType::I32}, {"i64", DType::I64}};
    for (const auto &[name, dtype] : kNames)
      if (s == name) {
        out = dtype;
        return Status::ok();
      }
    return error(path, "unknown dtype \"" + s +
                           "\" (expected f32, bf16, f64, i32 or i64)");
  }

  /// A tensor slot "T"; checks that it lies inside the arena.
  Status parseTensor(const Value &v, const std::string &path,
                     TensorRef &out) {
    KILN_RETURN_IF_ERROR(expectKind(v, Value::Kind::Object, path));
    KILN_RETURN_IF_ERROR(
        onlyKnownMembers(v, path, {"offset", "shape", "dtype", "layout"}));
    const Value *field;
    KILN_RETURN_IF_ERROR(require(v, "offset", path, field));
    KILN_RETURN_IF_ERROR(getInt(*field, join(path, "offset"), out.offset));
    KILN_RETURN_IF_ERROR(require(v, "shape", path, field));
    KILN_RETURN_IF_ERROR(getIntArray(*field, join(path, "shape"), out.shape));
    for (int64_t d : out.shape)
      if (d < 0)
        return error(join(path, "shape"), "negative dimension in " +
                                              shapeString(out.shape));
    KILN_RETURN_IF_ERROR(require(v, "dtype", path, field));
    KILN_RETURN_IF_ERROR(parseDType(*field, join(path, "dtype"), out.dtype));
    out.layout = Layout::None;
    if (const Value *layout = v.member("layout")) {
      std::string s;
      KILN_RETURN_IF_ERROR(getString(*layout, join(path, "layout"), s));
      if (s == "nhwc")
        out.layout = Layout::Nhwc;
      else if (s == "nchw")
        out.layout = Layout::Nchw;
      else if (s == "nChw16c")
        out.layout = Layout::NChw16c;
      else
        return error(join(path, "layout"),
                     "unknown layout \"" + s +
                         "\" (expected nhwc, nchw or nChw16c)");
      if (out.shape.size() != 4)
        return error(join(path, "layout"),
                     "a layout is only meaningful for a 4-D tensor, not " +
                         shapeString(out.shape));
    }
    if (out.offset < 0 ||
        out.offset % static_cast<int64_t>(dtypeSize(out.dtype)) != 0)
      return error(join(path, "offset"),
                   "offset " + std::to_string(out.offset) +
                       " is negative or not a multiple of the " +
                       dtypeName(out.dtype) + " element size");
    int64_t bytes = out.byteSize();
    if (out.offset > m.arenaBytes || bytes > m.arenaBytes - out.offset)
      return error(path, "bytes [" + std::to_string(out.offset) + ", " +
                             std::to_string(out.offset + bytes) +
                             ") lie outside the arena of " +
                             std::to_string(m.arenaBytes) + " bytes");
    return Status::ok();
  }

  Status parseTensorMap(const Value &v, const std::string &path,
                        std::map<std::string, TensorRef> &out) {
    KILN_RETURN_IF_ERROR(expectKind(v, Value::Kind::Object, path));
    for (const auto &[name, value] : v.members)
      KILN_RETURN_IF_ERROR(
          parseTensor(value, join(path, name), out[name]));
    return Status::ok();
  }

  Status parseVariable(const Value &v, const std::string &path,
                       Variable &out);
  Status parseFunction(const Value &v, const std::string &path,
                       const std::string &name, Function &out);
  Status parseCall(const Value &v, const std::string &path, Call &out);
  Status checkCallShapes(const Call &call, const std::string &path);
  /// The optional post-op operands of a forward convolution.
  Status checkPostOps(const Call &call, const std::string &path);
  Status parseSchedule(const Value &v, const std::string &path);
  /// Every copy's source: another variable, not a copy, of the same shape,
  /// f32 or bf16.
  Status checkCopies();
};

Status Parser::parseVariable(const Value &v, const std::string &path,
                             Variable &out) {
  KILN_RETURN_IF_ERROR(expectKind(v, Value::Kind::Object, path));
  const Value *field;
  KILN_RETURN_IF_ERROR(require(v, "name", path, field));
  KILN_RETURN_IF_ERROR(getString(*field, join(path, "name"), out.name));
  if (out.name.empty())
    return error(join(path, "name"), "empty variable name");
  std::string where = path + " (" + out.name + ")";

  std::string kind;
  KILN_RETURN_IF_ERROR(require(v, "kind", where, field));
  KILN_RETURN_IF_ERROR(getString(*field, join(where, "kind"), kind));
  if (kind == "parameter")
    out.kind = VariableKind::Parameter;
  else if (kind == "state")
    out.kind = VariableKind::State;
  else
    return error(join(where, "kind"), "unknown variable kind \"" + kind +
                                          "\" (expected parameter or state)");

  // The variable's slot is a T without the "kind"/"name"/"init" members.
  Value slot;
  slot.kind = Value::Kind::Object;
  for (const char *key : {"offset", "shape", "dtype", "layout"})
    if (const Value *member = v.member(key))
      slot.members.emplace_back(key, *member);
  KILN_RETURN_IF_ERROR(parseTensor(slot, where, out.tensor));
  // Checkpoints store a variable as its logical, row-major tensor.
  if (out.tensor.layout != Layout::None)
    return error(join(where, "layout"),
                 "variables are stored row-major (HWIO filters); a layout "
                 "does not apply");

  std::string init;
  KILN_RETURN_IF_ERROR(require(v, "init", where, field));
  KILN_RETURN_IF_ERROR(getString(*field, join(where, "init"), init));
  static const std::pair<const char *, InitKind> kInits[] = {
      {"zeros", InitKind::Zeros},        {"ones", InitKind::Ones},
      {"constant", InitKind::Constant},  {"normal", InitKind::Normal},
      {"he_normal", InitKind::HeNormal}, {"copy", InitKind::Copy}};
  bool known = false;
  for (const auto &[name, k] : kInits)
    if (init == name) {
      out.init = k;
      known = true;
    }
  if (!known)
    return error(join(where, "init"),
                 "unknown initializer \"" + init +
                     "\" (expected zeros, ones, constant, normal, he_normal "
                     "or copy)");
  bool isFloat =
      out.tensor.dtype == DType::F32 || out.tensor.dtype == DType::BF16;
  // A copy's source is checked once every variable is known (checkCopies):
  // it may be declared after the copy.
  if (const Value *of = v.member("of")) {
    if (!out.isCopy())
      return error(join(where, "of"),
                   std::string("only init \"copy\" takes a source, not \"") +
                       initKindName(out.init) + "\"");
    KILN_RETURN_IF_ERROR(getString(*of, join(where, "of"), out.source));
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
                       dtypeName(out.tensor.dtype));
  }
  if ((out.init == InitKind::Normal || out.init == InitKind::HeNormal) &&
      !isFloat)
    return error(join(where, "init"),
                 std::string(initKindName(out.init)) +
                     " needs an f32 or bf16 variable, not " +
                     dtypeName(out.tensor.dtype));
  if (out.init == InitKind::HeNormal && out.tensor.shape.size() < 2)
    return error(join(where, "init"),
                 "he_normal needs a rank >= 2 shape, not " +
                     shapeString(out.tensor.shape));
  if (out.init == InitKind::Normal) {
    KILN_RETURN_IF_ERROR(require(v, "std", where, field));
    KILN_RETURN_IF_ERROR(getDouble(*field, join(where, "std"), out.stddev));
    if (!(out.stddev > 0))
      return error(join(where, "std"), "the standard deviation must be > 0");
    // kiln-run reads the initializer's f32 attribute; round the same way so
    // both start from identical values whatever digits the compiler wrote.
    out.stddev = static_cast<double>(static_cast<float>(out.stddev));
  }
  if (out.init == InitKind::Constant) {
    KILN_RETURN_IF_ERROR(require(v, "value", where, field));
    std::string vpath = join(where, "value");
    if (field->kind == Value::Kind::Number) {
      out.value.resize(1);
      KILN_RETURN_IF_ERROR(getDouble(*field, vpath, out.value[0]));
    } else {
      KILN_RETURN_IF_ERROR(expectKind(*field, Value::Kind::Array, vpath));
      for (size_t i = 0; i < field->elements.size(); ++i) {
        double x;
        KILN_RETURN_IF_ERROR(getDouble(field->elements[i],
                                       vpath + "[" + std::to_string(i) + "]",
                                       x));
        out.value.push_back(x);
      }
    }
    auto n = static_cast<size_t>(out.tensor.numElements());
    if (out.value.size() != n && out.value.size() != 1)
      return error(vpath, std::to_string(out.value.size()) +
                              " values for a variable of " +
                              std::to_string(n) + " elements");
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
                             dtypeName(source->tensor.dtype));
    if (source->tensor.shape != copy.tensor.shape)
      return error(path, "the source \"" + copy.source + "\" is " +
                             shapeString(source->tensor.shape) + ", the copy " +
                             shapeString(copy.tensor.shape));
  }
  return Status::ok();
}

Status Parser::parseFunction(const Value &v, const std::string &path,
                             const std::string &name, Function &out) {
  KILN_RETURN_IF_ERROR(expectKind(v, Value::Kind::Object, path));
  const Value *field;
  KILN_RETURN_IF_ERROR(require(v, "symbol", path, field));
  KILN_RETURN_IF_ERROR(getString(*field, join(path, "symbol"), out.symbol));
  KILN_RETURN_IF_ERROR(require(v, "inputs", path, field));
  KILN_RETURN_IF_ERROR(parseTensorMap(*field, join(path, "inputs"), out.inputs));
  KILN_RETURN_IF_ERROR(require(v, "outputs", path, field));
  KILN_RETURN_IF_ERROR(
      parseTensorMap(*field, join(path, "outputs"), out.outputs));
  if (const Value *scratch = v.member("scratch")) {
    KILN_RETURN_IF_ERROR(
        getFixedArray(*scratch, join(path, "scratch"), 0, out.scratch));
    if (out.scratch[0] > out.scratch[1] || out.scratch[1] > m.arenaBytes)
      return error(join(path, "scratch"),
                   "[" + std::to_string(out.scratch[0]) + ", " +
                       std::to_string(out.scratch[1]) +
                       ") is not a range inside the arena");
  }

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
                     std::string(dtypeName(images.dtype)) +
                     shapeString(images.shape));
  if (labels.shape != std::vector<int64_t>{images.shape[0]} ||
      labels.dtype != DType::I32)
    return error(join(path, "inputs.labels"),
                 "expected i32[" + std::to_string(images.shape[0]) +
                     "], got " + dtypeName(labels.dtype) +
                     shapeString(labels.shape));
  if (!isScalar(loss) || !isFloat(loss.dtype))
    return error(join(path, "outputs.loss"),
                 "expected one f32 or bf16 value, got " +
                     std::string(dtypeName(loss.dtype)) +
                     shapeString(loss.shape));
  if (logits.shape.size() != 2 || logits.shape[0] != images.shape[0] ||
      !isFloat(logits.dtype))
    return error(join(path, "outputs.logits"),
                 "expected f32 or bf16 [" + std::to_string(images.shape[0]) +
                     ", classes], got " + dtypeName(logits.dtype) +
                     shapeString(logits.shape));
  if (train) {
    const TensorRef &step = *out.input("step");
    if (!isScalar(step) || step.dtype != DType::I64)
      return error(join(path, "inputs.step"),
                   "expected one i64, got " +
                       std::string(dtypeName(step.dtype)) +
                       shapeString(step.shape));
    const TensorRef &lr = *out.output("learning_rate");
    if (!isScalar(lr) || !isFloat(lr.dtype))
      return error(join(path, "outputs.learning_rate"),
                   "expected one f32 value, got " +
                       std::string(dtypeName(lr.dtype)) +
                       shapeString(lr.shape));
  }
  return Status::ok();
}

Status Parser::parseCall(const Value &v, const std::string &path, Call &out) {
  KILN_RETURN_IF_ERROR(expectKind(v, Value::Kind::Object, path));
  const Value *field;
  std::string kind;
  KILN_RETURN_IF_ERROR(require(v, "kind", path, field));
  KILN_RETURN_IF_ERROR(getString(*field, join(path, "kind"), kind));
  std::vector<std::string_view> operands;
  std::vector<std::string_view> optionalOperands;
  bool isConv = true;
  if (kind == "conv2d_forward") {
    out.kind = CallKind::Conv2dForward;
    operands = {"input", "filter", "output"};
    optionalOperands = {"bias", "residual", "statistics"};
  } else if (kind == "conv2d_backward_data") {
    out.kind = CallKind::Conv2dBackwardData;
    operands = {"output_grad", "filter", "input_grad"};
  } else if (kind == "conv2d_backward_filter") {
    out.kind = CallKind::Conv2dBackwardFilter;
    operands = {"input", "output_grad", "filter_grad"};
  } else if (kind == "matmul") {
    out.kind = CallKind::Matmul;
    operands = {"lhs", "rhs", "output"};
    isConv = false;
  } else if (kind == "dense") {
    out.kind = CallKind::Dense;
    operands = {"input", "weight", "output"};
    optionalOperands = {"bias"};
    isConv = false;
  } else if (kind == "reorder") {
    out.kind = CallKind::Reorder;
    operands = {"input", "output"};
    isConv = false;
  } else if (kind == "dense_backward_weights") {
    out.kind = CallKind::DenseBackwardWeights;
    operands = {"input", "output_grad", "weight_grad", "bias_grad"};
    isConv = false;
  } else {
    return error(join(path, "kind"),
                 "unknown call kind \"" + kind +
                     "\" (expected conv2d_forward, conv2d_backward_data, "
                     "conv2d_backward_filter, matmul, dense, "
                     "dense_backward_weights or reorder)");
  }
  if (out.kind == CallKind::Conv2dForward)
    KILN_RETURN_IF_ERROR(onlyKnownMembers(v, path,
                                          {"kind", "function", "operands",
                                           "strides", "padding", "dilations",
                                           "relu"}));
  else if (isConv)
    KILN_RETURN_IF_ERROR(onlyKnownMembers(
        v, path,
        {"kind", "function", "operands", "strides", "padding", "dilations"}));
  else if (out.kind == CallKind::Matmul)
    KILN_RETURN_IF_ERROR(onlyKnownMembers(
        v, path,
        {"kind", "function", "operands", "transpose_lhs", "transpose_rhs"}));
  else
    KILN_RETURN_IF_ERROR(
        onlyKnownMembers(v, path, {"kind", "function", "operands"}));

  if (const Value *function = v.member("function"))
    KILN_RETURN_IF_ERROR(
        getString(*function, join(path, "function"), out.function));

  KILN_RETURN_IF_ERROR(require(v, "operands", path, field));
  std::string opath = join(path, "operands");
  KILN_RETURN_IF_ERROR(parseTensorMap(*field, opath, out.operands));
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
                       dtypeName(tensor.dtype));
  }

  if (isConv) {
    KILN_RETURN_IF_ERROR(require(v, "strides", path, field));
    KILN_RETURN_IF_ERROR(
        getFixedArray(*field, join(path, "strides"), 1, out.strides));
    KILN_RETURN_IF_ERROR(require(v, "padding", path, field));
    KILN_RETURN_IF_ERROR(
        getFixedArray(*field, join(path, "padding"), 0, out.padding));
    if (const Value *dilations = v.member("dilations"))
      KILN_RETURN_IF_ERROR(
          getFixedArray(*dilations, join(path, "dilations"), 1, out.dilations));
  }
  if (const Value *relu = v.member("relu"))
    KILN_RETURN_IF_ERROR(getBool(*relu, join(path, "relu"), out.relu));
  if (const Value *t = v.member("transpose_lhs"))
    KILN_RETURN_IF_ERROR(getBool(*t, join(path, "transpose_lhs"),
                                 out.transposeLhs));
  if (const Value *t = v.member("transpose_rhs"))
    KILN_RETURN_IF_ERROR(getBool(*t, join(path, "transpose_rhs"),
                                 out.transposeRhs));
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
                       dtypeName(bias.dtype) + shapeString(bias.shape));
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
                       dtypeName(s.dtype) + shapeString(s.shape));
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

Status Parser::parseScheduleEntry(const Value &v, const std::string &path,
                                  Schedule &s) {
  KILN_RETURN_IF_ERROR(expectKind(v, Value::Kind::Object, path));
  const Value *field;
  KILN_RETURN_IF_ERROR(require(v, "kind", path, field));
  KILN_RETURN_IF_ERROR(getString(*field, join(path, "kind"), s.kind));
  KILN_RETURN_IF_ERROR(require(v, "variable", path, field));
  KILN_RETURN_IF_ERROR(getString(*field, join(path, "variable"), s.variable));
  KILN_RETURN_IF_ERROR(require(v, "slots", path, field));
  KILN_RETURN_IF_ERROR(expectKind(*field, Value::Kind::Array, join(path, "slots")));
  std::set<std::string> seen;
  for (size_t i = 0; i < field->elements.size(); ++i) {
    std::string slot;
    std::string spath = join(path, "slots") + "[" + std::to_string(i) + "]";
    KILN_RETURN_IF_ERROR(getString(field->elements[i], spath, slot));
    if (!seen.insert(slot).second)
      return error(spath, "duplicate slot \"" + slot + "\"");
    s.slots.push_back(slot);
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
  if (const Value *epochs = v.member("epochs")) {
    std::string epath = join(path, "epochs");
    KILN_RETURN_IF_ERROR(expectKind(*epochs, Value::Kind::Object, epath));
    for (const auto &[slot, value] : epochs->members) {
      std::string spath = join(epath, slot);
      KILN_RETURN_IF_ERROR(fillable(slot, spath));
      double e;
      KILN_RETURN_IF_ERROR(getDouble(value, spath, e));
      if (e < 0)
        return error(spath, "epochs must not be negative, got " + value.text);
      s.epochs[slot] = e; // the reader refuses duplicate keys
    }
  }
  if (const Value *runLength = v.member("run_length")) {
    std::string rpath = join(path, "run_length");
    KILN_RETURN_IF_ERROR(getString(*runLength, rpath, s.runLength));
    KILN_RETURN_IF_ERROR(fillable(s.runLength, rpath));
    if (s.epochs.count(s.runLength))
      return error(rpath, "\"" + s.runLength +
                              "\" is given in epochs too (schedule.epochs)");
  }
  return Status::ok();
}

Status Parser::parseSchedule(const Value &v, const std::string &path) {
  Schedule s;
  KILN_RETURN_IF_ERROR(parseScheduleEntry(v, path, s));
  const Variable *var = m.findVariable(s.variable);
  if (!var)
    return error(join(path, "variable"),
                 "no variable named \"" + s.variable + "\"");
  if (var->tensor.dtype != DType::F64 || var->tensor.shape.size() != 1 ||
      var->tensor.shape[0] != static_cast<int64_t>(s.slots.size()))
    return error(join(path, "variable"),
                 "\"" + s.variable + "\" must be f64[" +
                     std::to_string(s.slots.size()) + "] (one per slot), not " +
                     dtypeName(var->tensor.dtype) +
                     shapeString(var->tensor.shape));
  m.schedule = std::move(s);
  return Status::ok();
}

Status Parser::parse(const Value &root) {
  KILN_RETURN_IF_ERROR(expectKind(root, Value::Kind::Object, ""));
  const Value *field;
  KILN_RETURN_IF_ERROR(require(root, "abi", "", field));
  KILN_RETURN_IF_ERROR(getInt(*field, "abi", m.abi));
  if (m.abi != KILN_RT_MODEL_ABI_VERSION)
    return error("abi", "the model was compiled for model ABI " +
                            std::to_string(m.abi) +
                            ", but this runtime implements ABI " +
                            std::to_string(KILN_RT_MODEL_ABI_VERSION) +
                            "; rebuild it with a matching kilnc");
  KILN_RETURN_IF_ERROR(require(root, "model", "", field));
  KILN_RETURN_IF_ERROR(getString(*field, "model", m.model));
  KILN_RETURN_IF_ERROR(require(root, "batch", "", field));
  KILN_RETURN_IF_ERROR(getInt(*field, "batch", m.batch));
  if (m.batch <= 0)
    return error("batch", "must be positive");
  KILN_RETURN_IF_ERROR(require(root, "arena_bytes", "", field));
  KILN_RETURN_IF_ERROR(getInt(*field, "arena_bytes", m.arenaBytes));
  if (m.arenaBytes <= 0)
    return error("arena_bytes", "must be positive");

  // Variables: named, inside the persistent region, not overlapping.
  KILN_RETURN_IF_ERROR(require(root, "variables", "", field));
  KILN_RETURN_IF_ERROR(expectKind(*field, Value::Kind::Array, "variables"));
  std::set<std::string> names;
  for (size_t i = 0; i < field->elements.size(); ++i) {
    Variable var;
    std::string path = "variables[" + std::to_string(i) + "]";
    KILN_RETURN_IF_ERROR(parseVariable(field->elements[i], path, var));
    if (!names.insert(var.name).second)
      return error(path, "duplicate variable name \"" + var.name + "\"");
    m.persistentBytes =
        std::max(m.persistentBytes, var.tensor.offset + var.tensor.byteSize());
    m.variables.push_back(std::move(var));
  }
  KILN_RETURN_IF_ERROR(checkCopies());
  if (const Value *persistent = root.member("persistent_bytes")) {
    int64_t declared;
    KILN_RETURN_IF_ERROR(getInt(*persistent, "persistent_bytes", declared));
    if (declared < m.persistentBytes || declared > m.arenaBytes)
      return error("persistent_bytes",
                   std::to_string(declared) +
                       " does not cover the variables (which end at " +
                       std::to_string(m.persistentBytes) +
                       ") or exceeds arena_bytes");
    m.persistentBytes = declared;
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

  if (const Value *schedule = root.member("schedule"))
    KILN_RETURN_IF_ERROR(parseSchedule(*schedule, "schedule"));

  KILN_RETURN_IF_ERROR(require(root, "functions", "", field));
  KILN_RETURN_IF_ERROR(expectKind(*field, Value::Kind::Object, "functions"));
  for (const auto &[name, value] : field->members) {
    if (name != "train" && name != "eval")
      continue; // informational extras (a future "predict")
    KILN_RETURN_IF_ERROR(parseFunction(value, "functions." + name, name,
                                       m.functions[name]));
  }
  if (!m.findFunction("train"))
    return error("functions", "missing the \"train\" function");
  for (const auto &[name, f] : m.functions)
    if (f.input("images")->shape[0] != m.batch)
      return error("functions." + name + ".inputs.images",
                   "batch " + std::to_string(f.input("images")->shape[0]) +
                       " differs from the manifest's batch " +
                       std::to_string(m.batch));

  if (const Value *calls = root.member("calls")) {
    KILN_RETURN_IF_ERROR(expectKind(*calls, Value::Kind::Array, "calls"));
    for (size_t i = 0; i < calls->elements.size(); ++i) {
      Call call;
      KILN_RETURN_IF_ERROR(parseCall(calls->elements[i],
                                     "calls[" + std::to_string(i) + "]", call));
      m.calls.push_back(std::move(call));
    }
  }

  if (const Value *buckets = root.member("buckets")) {
    KILN_RETURN_IF_ERROR(expectKind(*buckets, Value::Kind::Array, "buckets"));
    for (size_t i = 0; i < buckets->elements.size(); ++i) {
      std::string path = "buckets[" + std::to_string(i) + "]";
      const Value &b = buckets->elements[i];
      KILN_RETURN_IF_ERROR(expectKind(b, Value::Kind::Object, path));
      Bucket bucket;
      int64_t id;
      KILN_RETURN_IF_ERROR(require(b, "id", path, field));
      KILN_RETURN_IF_ERROR(getInt(*field, join(path, "id"), id));
      // Generated code passes the id; keeping id == index makes it an index.
      if (id != static_cast<int64_t>(i))
        return error(join(path, "id"), "bucket ids must be 0, 1, ... in "
                                       "order; got " + std::to_string(id));
      bucket.id = static_cast<int32_t>(id);
      KILN_RETURN_IF_ERROR(require(b, "tensors", path, field));
      KILN_RETURN_IF_ERROR(
          expectKind(*field, Value::Kind::Array, join(path, "tensors")));
      for (size_t j = 0; j < field->elements.size(); ++j) {
        TensorRef t;
        std::string tpath = join(path, "tensors") + "[" + std::to_string(j) + "]";
        KILN_RETURN_IF_ERROR(parseTensor(field->elements[j], tpath, t));
        if (t.dtype != DType::F32 && t.dtype != DType::BF16 &&
            t.dtype != DType::F64)
          return error(tpath, std::string("gradients are f32, bf16 or f64, "
                                          "not ") + dtypeName(t.dtype));
        bucket.tensors.push_back(std::move(t));
      }
      m.buckets.push_back(std::move(bucket));
    }
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
  return Parser::parseScheduleEntry(entry, path, out);
}

StatusOr<Manifest> parseManifest(std::string_view text) {
  json::Value root;
  std::string error;
  if (!json::parse(text, root, error)) {
    // The reader was written for safetensors headers; say what we parsed.
    const std::string suffix = " of the header";
    if (error.size() >= suffix.size() &&
        error.compare(error.size() - suffix.size(), suffix.size(), suffix) == 0)
      error.replace(error.size() - suffix.size(), suffix.size(),
                    " of the manifest");
    return KILN_STATUS(kInvalidArgument, "manifest: malformed JSON: " + error);
  }
  Manifest manifest;
  Parser parser(manifest);
  KILN_RETURN_IF_ERROR(parser.parse(root));
  return manifest;
}

} // namespace kiln::rt::exec
