//===- status.cpp - Status formatting -------------------------------------===//
#include "kiln/base/status.h"

#include <cstring>

namespace kiln {

const char *statusCodeName(StatusCode code) {
  switch (code) {
  case StatusCode::kOk:
    return "OK";
  case StatusCode::kInvalidArgument:
    return "INVALID_ARGUMENT";
  case StatusCode::kNotFound:
    return "NOT_FOUND";
  case StatusCode::kDataLoss:
    return "DATA_LOSS";
  case StatusCode::kOutOfRange:
    return "OUT_OF_RANGE";
  case StatusCode::kIoError:
    return "IO_ERROR";
  case StatusCode::kUnimplemented:
    return "UNIMPLEMENTED";
  case StatusCode::kInternal:
    return "INTERNAL";
  case StatusCode::kCancelled:
    return "CANCELLED";
  }
  return "UNKNOWN";
}

std::string Status::toString() const {
  if (isOk())
    return "OK";
  return std::string(statusCodeName(code_)) + ": " + message_;
}

// __FILE__ is an absolute path in out-of-tree builds; keep the part from
// "runtime/" on so messages stay short and stable across machines.
static const char *shortSourcePath(const char *file) {
  const char *best = nullptr;
  for (const char *p = std::strstr(file, "runtime/"); p;
       p = std::strstr(p + 1, "runtime/"))
    best = p;
  if (best)
    return best;
  const char *slash = std::strrchr(file, '/');
  return slash ? slash + 1 : file;
}

Status makeStatus(StatusCode code, const char *file, int line,
                  std::string message) {
  message += " [";
  message += shortSourcePath(file);
  message += ":";
  message += std::to_string(line);
  message += "]";
  return Status(code, std::move(message));
}

Status errnoStatus(const char *file, int line, const std::string &what,
                   int savedErrno) {
  StatusCode code = savedErrno == ENOENT || savedErrno == ENOTDIR
                        ? StatusCode::kNotFound
                        : StatusCode::kIoError;
  return makeStatus(code, file, line, what + ": " + std::strerror(savedErrno));
}

} // namespace kiln
