//===- metrics.cpp - metrics.jsonl ----------------------------------------===//

#include "kiln/rt/exec/metrics.h"

#include "kiln/rt/files.h"

#include <fmt/format.h>

#include <cmath>

namespace kiln::rt::exec {

JsonField JsonField::number(std::string key, double v) {
  // JSON has no NaN/Inf; null says "not a number" without breaking readers.
  return {std::move(key), std::isfinite(v) ? fmt::format("{:.9g}", v) : "null"};
}

JsonField JsonField::integer(std::string key, long long v) {
  return {std::move(key), std::to_string(v)};
}

JsonField JsonField::text(std::string key, const std::string &v) {
  std::string quoted = "\"";
  for (char c : v) {
    if (c == '"' || c == '\\')
      quoted += '\\', quoted += c;
    else if (static_cast<unsigned char>(c) < 0x20)
      quoted += fmt::format("\\u{:04x}", c);
    else
      quoted += c;
  }
  return {std::move(key), quoted + "\""};
}

MetricsLog::~MetricsLog() {
  if (file_)
    std::fclose(file_);
}

Status MetricsLog::open(const std::string &dir) {
  KILN_RETURN_IF_ERROR(makeDirectories(dir));
  path_ = dir + "/metrics.jsonl";
  file_ = std::fopen(path_.c_str(), "a");
  KILN_CHECK_LIBC_PTR(file_, "open " + path_ + " for appending");
  return Status::ok();
}

Status MetricsLog::write(const std::vector<JsonField> &fields) {
  std::string line = "{";
  for (size_t i = 0; i < fields.size(); ++i)
    line += fmt::format("{}\"{}\":{}", i ? "," : "", fields[i].key,
                        fields[i].value);
  line += "}\n";
  if (std::fputs(line.c_str(), file_) < 0 || std::fflush(file_) != 0) {
    int err = errno;
    return errnoStatus(__FILE__, __LINE__, "write " + path_, err);
  }
  return Status::ok();
}

std::string formatDuration(double seconds) {
  if (!(seconds >= 0) || seconds > 1e8)
    return "?";
  auto s = static_cast<long long>(std::llround(seconds));
  if (s >= 3600)
    return fmt::format("{}h{:02}m{:02}s", s / 3600, s / 60 % 60, s % 60);
  if (s >= 60)
    return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}s", s);
}

} // namespace kiln::rt::exec
