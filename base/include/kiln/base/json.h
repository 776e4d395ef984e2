//===- json.h - Kiln's one JSON reader and string escaper -------*- C++ -*-===//
//
// Part of Kiln. Just enough JSON for safetensors headers, the compiled
// model's target and program info, and the JSON Kiln writes (checkpoint
// headers, metrics logs, simulator reports). Reading: objects, arrays,
// strings (with escapes, \u included), numbers, true, false, null. Object
// members keep their order; duplicate keys are rejected, since a header with
// two entries for one tensor is ambiguous. Nesting is limited so a hostile
// header cannot exhaust the stack. Writing: quote() is the one string
// escaper; writers put numbers, braces and commas themselves.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_BASE_JSON_H
#define KILN_BASE_JSON_H

#include "kiln/base/status.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kiln::json {

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
/// failure, kInvalidArgument describing the problem and its byte offset.
Status parse(std::string_view text, Value &value);

/// `s` as a JSON string literal, quotes included: `"` and `\` escaped,
/// newline, carriage return and tab as \n, \r, \t, other control
/// characters as \u00XX, everything else (UTF-8 included) as it is.
std::string quote(std::string_view s);

} // namespace kiln::json

#endif // KILN_BASE_JSON_H
