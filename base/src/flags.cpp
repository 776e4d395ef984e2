//===- flags.cpp - Kiln's one command-line flag parser --------------------===//
#include "kiln/base/flags.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>

namespace kiln::flags {

Status usageError(std::string message) {
  return Status(StatusCode::kInvalidArgument, std::move(message));
}

void Parser::add(const std::string &name, Flag flag) {
  flags[name] = std::move(flag);
}

Status Parser::parse(int argc, char **argv, int first) const {
  for (int i = first; i < argc; ++i) {
    std::string arg = argv[i];
    if (positional && (arg.empty() || arg[0] != '-')) {
      KILN_RETURN_IF_ERROR(positional(arg));
      continue;
    }
    std::string name = arg, value;
    bool inlineValue = false;
    size_t eq = arg.find('=');
    if (arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      inlineValue = true;
    }
    auto it = flags.find(name);
    if (it == flags.end())
      return usageError(unknownMessage ? unknownMessage(arg)
                                       : "unknown flag '" + arg +
                                             "' (--help lists the flags)");
    const Flag &flag = it->second;
    if (!flag.rejectMessage.empty())
      return usageError(flag.rejectMessage);
    if (flag.takesValue && !inlineValue) {
      if (i + 1 >= argc || (!flag.valueMayLookLikeAFlag &&
                            std::string(argv[i + 1]).rfind("--", 0) == 0))
        return usageError(flag.missingValueMessage.empty()
                              ? name + " needs a value"
                              : flag.missingValueMessage);
      value = argv[++i];
    } else if (!flag.takesValue && inlineValue) {
      return usageError(name + " takes no value");
    }
    KILN_RETURN_IF_ERROR(flag.handle(name, value));
  }
  return Status::ok();
}

Status parseInt(const std::string &flag, const std::string &text,
                int64_t minValue, int64_t maxValue, int64_t &out) {
  errno = 0;
  char *end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0')
    return usageError(flag + " expects an integer, got '" + text + "'");
  if (errno == ERANGE || v < minValue || v > maxValue)
    return usageError(flag + " must be between " + std::to_string(minValue) +
                      " and " + std::to_string(maxValue) + ", got " + text);
  out = v;
  return Status::ok();
}

Status parseDouble(const std::string &flag, const std::string &text,
                   double &out) {
  char *end = nullptr;
  out = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(out))
    return usageError(flag + " expects a number, got '" + text + "'");
  return Status::ok();
}

/// A bound as {fmt}'s "{}" prints a double: the shortest digits that read
/// back as the same value, in fixed notation unless the exponent is below -4
/// or at least 16.
static std::string formatBound(double v) {
  char buf[64];
  double magnitude = std::fabs(v);
  auto format = magnitude != 0 && (magnitude < 1e-4 || magnitude >= 1e16)
                    ? std::chars_format::scientific
                    : std::chars_format::fixed;
  auto result = std::to_chars(buf, buf + sizeof(buf), v, format);
  return std::string(buf, result.ptr);
}

Status parseDouble(const std::string &flag, const std::string &text,
                   double minValue, double maxValue, double &out) {
  KILN_RETURN_IF_ERROR(parseDouble(flag, text, out));
  if (out < minValue && maxValue == HUGE_VAL)
    return usageError(flag + " must be at least " + formatBound(minValue) +
                      ", got " + text);
  if (out < minValue || out > maxValue)
    return usageError(flag + " must be between " + formatBound(minValue) +
                      " and " + formatBound(maxValue) + ", got " + text);
  return Status::ok();
}

Flag switchFlag(bool &target, bool value) {
  Flag flag;
  flag.handle = [&target, value](const std::string &, const std::string &) {
    target = value;
    return Status::ok();
  };
  return flag;
}

Flag valueFlag(Handler handler) {
  Flag flag;
  flag.takesValue = true;
  flag.handle = std::move(handler);
  return flag;
}

Flag stringFlag(std::string &target) {
  return valueFlag([&target](const std::string &, const std::string &value) {
    target = value;
    return Status::ok();
  });
}

Flag intFlag(int64_t &target, int64_t minValue, int64_t maxValue) {
  return valueFlag([&target, minValue, maxValue](const std::string &name,
                                                 const std::string &value) {
    return parseInt(name, value, minValue, maxValue, target);
  });
}

Flag rejectedFlag(std::string message) {
  Flag flag;
  flag.rejectMessage = std::move(message);
  return flag;
}

} // namespace kiln::flags
