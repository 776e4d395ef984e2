//===- json.h - A minimal JSON reader for safetensors headers ---*- C++ -*-===//
//
// Part of Kiln. Just enough JSON for safetensors headers: objects, arrays,
// strings (with escapes, \u included), numbers, true, false, null. Object
// members keep their order; duplicate keys are rejected, since a header with
// two entries for one tensor is ambiguous. Nesting is limited so a hostile
// header cannot exhaust the stack.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RT_CHECKPOINT_JSON_H
#define KILN_RT_CHECKPOINT_JSON_H

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kiln::rt::json {

struct Value {
  enum class Kind { Null, Bool, Number, String, Array, Object };
  Kind kind = Kind::Null;
  bool boolean = false;
  /// The number as written (Number) or the decoded text (String).
  std::string text;
  std::vector<Value> elements;
  std::vector<std::pair<std::string, Value>> members;

  /// The value of member `key` of an object, or null if absent.
  const Value *member(std::string_view key) const;
  /// True for a Number written as a plain non-negative integer that fits in
  /// uint64_t; stores it in `out`.
  bool asUnsigned(uint64_t &out) const;
};

/// Parses `text` as one JSON value (surrounding whitespace allowed). On
/// failure returns false and describes the problem and its byte offset.
bool parse(std::string_view text, Value &value, std::string &error);

/// `s` as a JSON string literal, quotes included.
std::string quote(std::string_view s);

} // namespace kiln::rt::json

#endif // KILN_RT_CHECKPOINT_JSON_H
