//===- fuzz_json.cpp - libFuzzer target: the runtime's JSON reader --------===//
//
// The reader parses safetensors headers (untrusted files) and the model
// manifest. Beyond "no crash, no leak" (ASan), every accepted document must
// survive a round trip: re-serializing what was parsed and parsing that again
// gives the same tree, so nothing is silently dropped or reinterpreted.
//
//===----------------------------------------------------------------------===//
#include "kiln/base/json.h"

#include <cstdlib>
#include <string>

namespace {

using kiln::json::Value;

std::string serialize(const Value &v) {
  switch (v.kind) {
  case Value::Kind::Null:
    return "null";
  case Value::Kind::Bool:
    return v.boolean ? "true" : "false";
  case Value::Kind::Number:
    return v.text;
  case Value::Kind::String:
    return kiln::json::quote(v.text);
  case Value::Kind::Array: {
    std::string out = "[";
    for (size_t i = 0; i < v.elements.size(); ++i)
      out += (i ? "," : "") + serialize(v.elements[i]);
    return out + "]";
  }
  case Value::Kind::Object: {
    std::string out = "{";
    for (size_t i = 0; i < v.members.size(); ++i)
      out += (i ? "," : "") + kiln::json::quote(v.members[i].first) + ":" +
             serialize(v.members[i].second);
    return out + "}";
  }
  }
  std::abort();
}

bool same(const Value &a, const Value &b) {
  if (a.kind != b.kind || a.boolean != b.boolean || a.text != b.text ||
      a.elements.size() != b.elements.size() ||
      a.members.size() != b.members.size())
    return false;
  for (size_t i = 0; i < a.elements.size(); ++i)
    if (!same(a.elements[i], b.elements[i]))
      return false;
  for (size_t i = 0; i < a.members.size(); ++i)
    if (a.members[i].first != b.members[i].first ||
        !same(a.members[i].second, b.members[i].second))
      return false;
  return true;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view text(reinterpret_cast<const char *>(data), size);
  Value value;
  if (kiln::Status s = kiln::json::parse(text, value); !s.isOk()) {
    // A rejection must say what and where.
    if (s.message().find(" at byte ") == std::string::npos)
      std::abort();
    return 0;
  }
  std::string again = serialize(value);
  Value reparsed;
  if (!kiln::json::parse(again, reparsed).isOk() || !same(value, reparsed))
    std::abort();
  return 0;
}
