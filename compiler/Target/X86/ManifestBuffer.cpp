//===- ManifestBuffer.cpp - The manifest as the runtime reads it ----------===//
//
// JSON members map 1:1 onto the schema's fields. Where the JSON has an
// object used as a map (a function's inputs, a call's operands, schedule
// epochs, optimizer attributes), the schema has a vector, in key order so
// that a model always compiles to the same bytes.
//
//===----------------------------------------------------------------------===//

#include "compiler/Target/X86/ManifestBuffer.h"

#include "kiln/rt/manifest_generated.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

using llvm::json::ObjectMapper;
using llvm::json::Path;
using llvm::json::Value;

namespace kiln::rt::fb {

/// An enumerator by its schema name ("f32", "he_normal").
template <typename E, size_t N>
static bool enumFromJSON(const Value &e, E &out, Path p,
                         const E (&values)[N], const char *const *names) {
  std::optional<llvm::StringRef> s = e.getAsString();
  if (!s) {
    p.report("expected a string");
    return false;
  }
  for (size_t i = 0; i < N; ++i)
    if (*s == names[i]) {
      out = values[i];
      return true;
    }
  p.report("unknown name");
  return false;
}

#define KILN_ENUM_FROM_JSON(E)                                                 \
  static bool fromJSON(const Value &e, E &out, Path p) {                       \
    return enumFromJSON(e, out, p, EnumValues##E(), EnumNames##E());           \
  }
KILN_ENUM_FROM_JSON(DType)
KILN_ENUM_FROM_JSON(Layout)
KILN_ENUM_FROM_JSON(VariableKind)
KILN_ENUM_FROM_JSON(InitKind)
KILN_ENUM_FROM_JSON(CallKind)
#undef KILN_ENUM_FROM_JSON

/// The members of an object used as a map, in key order.
static std::vector<std::pair<std::string, const Value *>>
sortedMembers(const llvm::json::Object &object) {
  std::vector<std::pair<std::string, const Value *>> members;
  for (const auto &[key, value] : object)
    members.emplace_back(key.str(), &value);
  llvm::sort(members, llvm::less_first());
  return members;
}

/// The tensor members of `e` (a T, or a variable, which carries them).
static bool tensorFromJSON(const Value &e, TensorT &out, Path p) {
  ObjectMapper o(e, p);
  return o && o.map("offset", out.offset) && o.map("shape", out.shape) &&
         o.map("dtype", out.dtype) && o.mapOptional("layout", out.layout);
}

static bool fromJSON(const Value &e, std::unique_ptr<TensorT> &out, Path p) {
  out = std::make_unique<TensorT>();
  return tensorFromJSON(e, *out, p);
}

/// {"name": T, ...} as NamedTensors.
static bool namedTensorsFromJSON(const Value &e,
                                 std::vector<std::unique_ptr<NamedTensorT>> &out,
                                 Path p) {
  const llvm::json::Object *object = e.getAsObject();
  if (!object) {
    p.report("expected an object");
    return false;
  }
  for (const auto &[name, value] : sortedMembers(*object)) {
    auto named = std::make_unique<NamedTensorT>();
    named->name = name;
    if (!fromJSON(*value, named->tensor, p.field(name)))
      return false;
    out.push_back(std::move(named));
  }
  return true;
}

static bool fromJSON(const Value &e, std::unique_ptr<VariableT> &out, Path p) {
  out = std::make_unique<VariableT>();
  ObjectMapper o(e, p);
  if (!o || !o.map("name", out->name) || !o.map("kind", out->kind) ||
      !o.map("init", out->init) || !o.mapOptional("std", out->std) ||
      !o.mapOptional("of", out->of) ||
      !fromJSON(e, out->tensor, p))
    return false;
  // "value": one number for all elements, or one per element.
  if (const Value *value = e.getAsObject()->get("value")) {
    if (std::optional<double> one = value->getAsNumber())
      out->value = {*one};
    else if (!fromJSON(*value, out->value, p.field("value")))
      return false;
  }
  return true;
}

static bool fromJSON(const Value &e, std::unique_ptr<ScheduleT> &out, Path p) {
  out = std::make_unique<ScheduleT>();
  ObjectMapper o(e, p);
  if (!o || !o.map("kind", out->kind) || !o.map("variable", out->variable) ||
      !o.map("slots", out->slots) ||
      !o.mapOptional("run_length", out->run_length))
    return false;
  if (const Value *epochs = e.getAsObject()->get("epochs")) {
    const llvm::json::Object *object = epochs->getAsObject();
    if (!object) {
      p.field("epochs").report("expected an object");
      return false;
    }
    for (const auto &[slot, value] : sortedMembers(*object)) {
      auto entry = std::make_unique<SlotEpochsT>();
      entry->slot = slot;
      if (!llvm::json::fromJSON(*value, entry->epochs,
                                p.field("epochs").field(slot)))
        return false;
      out->epochs.push_back(std::move(entry));
    }
  }
  return true;
}

/// Exactly N integers.
template <size_t N>
static bool fixedFromJSON(const Value &e, std::array<int64_t, N> &out,
                          Path p) {
  std::vector<int64_t> values;
  if (!llvm::json::fromJSON(e, values, p))
    return false;
  if (values.size() != N) {
    p.report("wrong number of integers");
    return false;
  }
  std::copy(values.begin(), values.end(), out.begin());
  return true;
}

static bool functionFromJSON(const Value &e, FunctionT &out, Path p) {
  ObjectMapper o(e, p);
  std::array<int64_t, 2> scratch;
  const llvm::json::Object *object = e.getAsObject();
  if (!o || !o.map("symbol", out.symbol) || !object->get("inputs") ||
      !object->get("outputs") || !object->get("scratch") ||
      !namedTensorsFromJSON(*object->get("inputs"), out.inputs,
                            p.field("inputs")) ||
      !namedTensorsFromJSON(*object->get("outputs"), out.outputs,
                            p.field("outputs")) ||
      !fixedFromJSON(*object->get("scratch"), scratch, p.field("scratch"))) {
    p.report("expected symbol, inputs, outputs and scratch");
    return false;
  }
  out.scratch = std::make_unique<Range>(scratch[0], scratch[1]);
  return true;
}

static bool fromJSON(const Value &e, std::unique_ptr<CallT> &out, Path p) {
  out = std::make_unique<CallT>();
  ObjectMapper o(e, p);
  const llvm::json::Object *object = e.getAsObject();
  if (!o || !o.map("kind", out->kind) ||
      !o.mapOptional("function", out->function) ||
      !o.mapOptional("relu", out->relu) ||
      !o.mapOptional("transpose_lhs", out->transpose_lhs) ||
      !o.mapOptional("transpose_rhs", out->transpose_rhs) ||
      !o.mapOptional("groups", out->groups))
    return false;
  const Value *operands = object->get("operands");
  if (!operands) {
    p.report("missing operands");
    return false;
  }
  if (!namedTensorsFromJSON(*operands, out->operands, p.field("operands")))
    return false;
  std::array<int64_t, 2> pair;
  std::array<int64_t, 4> pad;
  if (const Value *v = object->get("strides")) {
    if (!fixedFromJSON(*v, pair, p.field("strides")))
      return false;
    out->strides = std::make_unique<Pair>(pair[0], pair[1]);
  }
  if (const Value *v = object->get("padding")) {
    if (!fixedFromJSON(*v, pad, p.field("padding")))
      return false;
    out->padding = std::make_unique<Padding>(pad[0], pad[1], pad[2], pad[3]);
  }
  if (const Value *v = object->get("dilations")) {
    if (!fixedFromJSON(*v, pair, p.field("dilations")))
      return false;
    out->dilations = std::make_unique<Pair>(pair[0], pair[1]);
  }
  return true;
}

static bool fromJSON(const Value &e, std::unique_ptr<BucketT> &out, Path p) {
  out = std::make_unique<BucketT>();
  ObjectMapper o(e, p);
  return o && o.map("id", out->id) && o.map("tensors", out->tensors);
}

static bool fromJSON(const Value &e, std::unique_ptr<OptimizerEntryT> &out,
                     Path p) {
  out = std::make_unique<OptimizerEntryT>();
  ObjectMapper o(e, p);
  if (!o || !o.map("update", out->update) ||
      !o.map("parameters", out->parameters))
    return false;
  const Value *attributes = e.getAsObject()->get("attributes");
  if (!attributes)
    return true;
  const llvm::json::Object *object = attributes->getAsObject();
  if (!object) {
    p.field("attributes").report("expected an object");
    return false;
  }
  // Kept as the compiler printed them: the ranks compare the text.
  for (const auto &[name, value] : sortedMembers(*object)) {
    auto attribute = std::make_unique<OptimizerAttributeT>();
    attribute->name = name;
    if (std::optional<llvm::StringRef> s = value->getAsString()) {
      attribute->kind = AttributeKind::text;
      attribute->value = s->str();
    } else {
      attribute->kind = value->getAsBoolean() ? AttributeKind::boolean
                                              : AttributeKind::number;
      llvm::raw_string_ostream os(attribute->value);
      os << *value;
    }
    out->attributes.push_back(std::move(attribute));
  }
  return true;
}

/// A site; null (a call no step makes with a constant id) is one without
/// members.
static bool fromJSON(const Value &e, std::unique_ptr<SiteT> &out, Path p) {
  out = std::make_unique<SiteT>();
  if (e.kind() == Value::Null)
    return true;
  ObjectMapper o(e, p);
  return o && o.mapOptional("op", out->op) && o.mapOptional("loc", out->loc) &&
         o.mapOptional("function", out->function) &&
         o.mapOptional("kernel", out->kernel) &&
         o.mapOptional("parallel", out->parallel) &&
         o.mapOptional("layer", out->layer);
}

/// Manifest::Pack (the generated CreateManifest, member for member and in
/// its order, so that a manifest without data has the bytes Pack gives it),
/// except that the variables' data go from `data` (one entry per variable,
/// empty for none) straight into the builder: through VariableT they would
/// be copied once more, which for a large model is hundreds of MB.
static flatbuffers::Offset<Manifest>
packManifest(flatbuffers::FlatBufferBuilder &fbb, const ManifestT &o,
             llvm::ArrayRef<llvm::ArrayRef<char>> data) {
  auto model = fbb.CreateString(o.model);
  std::vector<flatbuffers::Offset<Variable>> variableOffsets;
  for (size_t i = 0; i < o.variables.size(); ++i) {
    const VariableT &v = *o.variables[i];
    if (data[i].empty()) {
      variableOffsets.push_back(CreateVariable(fbb, &v));
      continue;
    }
    // CreateVariable(fbb, &v), with the data.
    auto name = fbb.CreateString(v.name);
    auto tensor = v.tensor ? CreateTensor(fbb, v.tensor.get()) : 0;
    auto value = v.value.size() ? fbb.CreateVector(v.value) : 0;
    auto of = v.of.empty() ? 0 : fbb.CreateString(v.of);
    auto bytes = fbb.CreateVector(
        reinterpret_cast<const uint8_t *>(data[i].data()), data[i].size());
    variableOffsets.push_back(CreateVariable(fbb, name, v.kind, tensor, v.init,
                                             v.std, value, of, bytes));
  }
  auto variables = fbb.CreateVector(variableOffsets);
  auto schedule = o.schedule ? CreateSchedule(fbb, o.schedule.get()) : 0;
  auto pack = [&](const auto &objects, auto create) {
    using Object = typename std::decay_t<decltype(objects)>::value_type;
    std::vector<decltype(create(fbb, std::declval<Object &>().get(),
                                nullptr))>
        offsets;
    for (const auto &object : objects)
      offsets.push_back(create(fbb, object.get(), nullptr));
    return fbb.CreateVector(offsets);
  };
  auto functions = pack(
      o.functions, [](auto &b, const FunctionT *f, auto r) {
        return CreateFunction(b, f, r);
      });
  auto calls = pack(o.calls, [](auto &b, const CallT *c, auto r) {
    return CreateCall(b, c, r);
  });
  auto buckets = pack(o.buckets, [](auto &b, const BucketT *c, auto r) {
    return CreateBucket(b, c, r);
  });
  auto createSite = [](auto &b, const SiteT *s, auto r) {
    return CreateSite(b, s, r);
  };
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<OptimizerEntry>>>
      optimizer = 0;
  if (!o.optimizer.empty())
    optimizer = pack(o.optimizer, [](auto &b, const OptimizerEntryT *e,
                                     auto r) {
      return CreateOptimizerEntry(b, e, r);
    });
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<Site>>> sites = 0,
                                                                     callSites =
                                                                         0;
  if (!o.sites.empty())
    sites = pack(o.sites, createSite);
  if (!o.call_sites.empty())
    callSites = pack(o.call_sites, createSite);
  return CreateManifest(fbb, o.abi, model, o.batch, o.arena_bytes,
                        o.persistent_bytes, variables, schedule, functions,
                        calls, buckets, optimizer, sites, callSites);
}

static bool manifestFromJSON(const Value &e, ManifestT &out, Path p) {
  ObjectMapper o(e, p);
  if (!o || !o.map("abi", out.abi) || !o.map("model", out.model) ||
      !o.map("batch", out.batch) || !o.map("arena_bytes", out.arena_bytes) ||
      !o.map("variables", out.variables) || !o.map("calls", out.calls) ||
      !o.map("buckets", out.buckets) ||
      !o.mapOptional("optimizer", out.optimizer) ||
      !o.mapOptional("sites", out.sites) ||
      !o.mapOptional("call_sites", out.call_sites))
    return false;
  const llvm::json::Object *object = e.getAsObject();
  if (const Value *v = object->get("persistent_bytes")) {
    int64_t bytes;
    if (!llvm::json::fromJSON(*v, bytes, p.field("persistent_bytes")))
      return false;
    out.persistent_bytes = bytes;
  }
  if (const Value *v = object->get("schedule"))
    if (!fromJSON(*v, out.schedule, p.field("schedule")))
      return false;
  const Value *functions = object->get("functions");
  const llvm::json::Object *roles = functions ? functions->getAsObject() : nullptr;
  if (!roles) {
    p.field("functions").report("expected an object");
    return false;
  }
  for (const auto &[role, value] : sortedMembers(*roles)) {
    auto function = std::make_unique<FunctionT>();
    function->name = role;
    if (!functionFromJSON(*value, *function, p.field("functions").field(role)))
      return false;
    out.functions.push_back(std::move(function));
  }
  return true;
}

} // namespace kiln::rt::fb

llvm::Expected<flatbuffers::DetachedBuffer>
kiln::buildManifestBuffer(llvm::StringRef json, InitialValueLookup lookup) {
  llvm::Expected<Value> value = llvm::json::parse(json);
  if (!value)
    return value.takeError();
  rt::fb::ManifestT manifest;
  llvm::json::Path::Root root("manifest");
  if (!rt::fb::manifestFromJSON(*value, manifest, root))
    return root.getError();
  // Each variable's raw values, from where "data" refers to.
  const llvm::json::Array &variables =
      *value->getAsObject()->getArray("variables");
  std::vector<llvm::ArrayRef<char>> data(variables.size());
  uint64_t dataBytes = 0;
  for (size_t i = 0; i < variables.size(); ++i) {
    const Value *ref = variables[i].getAsObject()->get("data");
    if (!ref)
      continue;
    const llvm::json::Object *object = ref->getAsObject();
    std::optional<int64_t> bytes =
        object ? object->getInteger("bytes") : std::nullopt;
    const std::string &name = manifest.variables[i]->name;
    std::string where = "manifest.variables[" + std::to_string(i) + "] (" +
                        name + ").data";
    if (!bytes)
      return llvm::createStringError(where + ": expected {\"bytes\": N, ...}");
    llvm::Expected<llvm::ArrayRef<char>> values = lookup(name);
    if (!values)
      return llvm::createStringError(where + ": " +
                                     llvm::toString(values.takeError()));
    if (static_cast<int64_t>(values->size()) != *bytes)
      return llvm::createStringError(
          where + ": " + std::to_string(values->size()) +
          " bytes of initial values for the " + std::to_string(*bytes) +
          " the manifest states");
    data[i] = *values;
    dataBytes += values->size();
  }
  // FlatBuffers addresses its buffer with 32-bit offsets; leave room for the
  // rest of the manifest (well below a MiB for ResNet-50) rather than let
  // the builder abort.
  constexpr uint64_t kMaxDataBytes = FLATBUFFERS_MAX_BUFFER_SIZE - (64u << 20);
  if (dataBytes > kMaxDataBytes)
    return llvm::createStringError(
        "the initial values take " + std::to_string(dataBytes) +
        " bytes, more than the " + std::to_string(kMaxDataBytes) +
        " one manifest can hold (FlatBuffers' 2 GiB); compile with "
        "--init=fresh and load the values as a checkpoint "
        "(docs/onnx.md, \"Initial values\")");
  flatbuffers::FlatBufferBuilder builder(
      std::max<size_t>(1024, static_cast<size_t>(dataBytes) + json.size()));
  rt::fb::FinishManifestBuffer(builder,
                               rt::fb::packManifest(builder, manifest, data));
  return builder.Release();
}
