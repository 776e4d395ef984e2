//===- flags.h - Kiln's one command-line flag parser ------------*- C++ -*-===//
//
// Part of Kiln. Every executable and tool reads its flags through one table:
// a flag's name maps to whether it takes a value and a handler that stores
// it. `--name value` and `--name=value` both work; an unknown flag, a missing
// value and a value given to a switch are errors naming the flag. The value
// parsers (integers and numbers in a range, enums by their listed names)
// share their messages, so "--steps must be between 0 and 9999999999, got
// -1" reads the same in every tool.
//
// Errors are kInvalidArgument statuses without a file:line suffix: they are
// about what the user typed, and tools print them as they are.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_BASE_FLAGS_H
#define KILN_BASE_FLAGS_H

#include "kiln/base/status.h"

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace kiln::flags {

/// Stores one occurrence of a flag: `name` as the table spells it, `value`
/// as given ("" for a switch).
using Handler =
    std::function<Status(const std::string &name, const std::string &value)>;

/// One entry of the table.
struct Flag {
  bool takesValue = false;
  Handler handle;
  /// Value flags: whether the next argument may be the value when it starts
  /// with "--" (when not, the value counts as missing).
  bool valueMayLookLikeAFlag = true;
  /// Replaces "<name> needs a value" when the value is missing.
  std::string missingValueMessage;
  /// When set, any use of the flag (with or without a value) is this error.
  std::string rejectMessage;
};

/// The flags of one command line.
class Parser {
public:
  /// Adds `flag`, or replaces the flag of that name.
  void add(const std::string &name, Flag flag);

  /// Arguments that do not start with '-' go to `handler`; without one they
  /// are unknown flags.
  void setPositional(std::function<Status(const std::string &)> handler) {
    positional = std::move(handler);
  }
  /// The message for an unknown flag, given the argument as written;
  /// default "unknown flag '<arg>' (--help lists the flags)".
  void setUnknownMessage(std::function<std::string(const std::string &)> fn) {
    unknownMessage = std::move(fn);
  }

  /// Parses argv[first..argc) in order; the first error stops it.
  Status parse(int argc, char **argv, int first = 1) const;

private:
  std::map<std::string, Flag> flags;
  std::function<Status(const std::string &)> positional;
  std::function<std::string(const std::string &)> unknownMessage;
};

/// A kInvalidArgument status about the command line (no file:line).
Status usageError(std::string message);

/// "<flag> expects an integer, got '<text>'" / "<flag> must be between
/// <min> and <max>, got <text>".
Status parseInt(const std::string &flag, const std::string &text,
                int64_t minValue, int64_t maxValue, int64_t &out);
/// "<flag> expects a number, got '<text>'" (NaN and infinities included).
Status parseDouble(const std::string &flag, const std::string &text,
                   double &out);
/// A number in [minValue, maxValue] ("must be at least" when maxValue is
/// HUGE_VAL).
Status parseDouble(const std::string &flag, const std::string &text,
                   double minValue, double maxValue, double &out);

/// A switch that sets `target` to `value`.
Flag switchFlag(bool &target, bool value = true);
/// A value stored as given.
Flag stringFlag(std::string &target);
/// An integer in [minValue, maxValue].
Flag intFlag(int64_t &target, int64_t minValue, int64_t maxValue);
/// A value flag whose handler gets the value.
Flag valueFlag(Handler handler);
/// A flag any use of which is `message`.
Flag rejectedFlag(std::string message);

/// One of the listed names: "<flag> expects a, b or c, got '<text>'".
template <typename T>
Flag enumFlag(T &target, std::vector<std::pair<std::string, T>> names) {
  return valueFlag([&target, names = std::move(names)](
                       const std::string &flag, const std::string &value) {
    std::string listed;
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i].first == value) {
        target = names[i].second;
        return Status::ok();
      }
      listed += (i == 0                  ? ""
                 : i + 1 == names.size() ? " or "
                                         : ", ") +
                names[i].first;
    }
    return usageError(flag + " expects " + listed + ", got '" + value + "'");
  });
}

} // namespace kiln::flags

#endif // KILN_BASE_FLAGS_H
