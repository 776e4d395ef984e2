//===- status.h - Status, StatusOr and file:line check macros ---*- C++ -*-===//
//
// Every part of Kiln reports a failure as a value: a code plus a message that
// names what failed (file, record, byte offset, op). The runtime also says
// where it was detected (KILN_STATUS appends the source file:line); the
// reference kernels, the simulator and the systolic planner report messages
// users read as they are. Nothing throws; the runtime's C ABI layer converts
// a Status into a kiln_rt_status_t.
//
// Shape follows IREE's iree/base/status.h (codes, RETURN_IF_ERROR) and llm.c's
// habit of wrapping every libc call in a checking macro that records file:line.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_BASE_STATUS_H
#define KILN_BASE_STATUS_H

#include <cerrno>
#include <optional>
#include <string>
#include <utility>

namespace kiln {

/// Status codes; the numeric values are part of the C ABI
/// (kiln_rt_status_code_t).
enum class StatusCode : int {
  kOk = 0,
  kInvalidArgument = 1, ///< Bad configuration or call.
  kNotFound = 2,        ///< Missing file, directory or feature key.
  kDataLoss = 3,        ///< Corrupt input: CRC mismatch, truncation, bad JPEG.
  kOutOfRange = 4,      ///< Clean end of a stream.
  kIoError = 5,         ///< A libc call failed (errno text in the message).
  kUnimplemented = 6,   ///< A valid request this build does not support.
  kInternal = 7,        ///< A broken invariant inside the runtime.
  kCancelled = 8,       ///< The operation was abandoned (e.g. dataset closed).
};

const char *statusCodeName(StatusCode code);

/// A code and a message; OK statuses carry no allocation.
class [[nodiscard]] Status {
public:
  Status() = default;
  Status(StatusCode code, std::string message)
      : code_(code), message_(std::move(message)) {}

  static Status ok() { return Status(); }

  bool isOk() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string &message() const { return message_; }

  /// "DATA_LOSS: <message>", or "OK".
  std::string toString() const;

  /// Prepends context ("while reading X: ") to a non-OK status.
  Status &withContext(const std::string &context) {
    if (!isOk())
      message_ = context + ": " + message_;
    return *this;
  }

private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

/// A kInvalidArgument status with the message as given: how the reference
/// kernels, the simulator and the systolic planner report what they were
/// handed (their messages are shown to users verbatim, without file:line).
inline Status invalidArgumentError(std::string message) {
  return Status(StatusCode::kInvalidArgument, std::move(message));
}

/// Builds a status whose message ends with " [file:line]", so every report
/// says where in the runtime it was detected.
Status makeStatus(StatusCode code, const char *file, int line,
                  std::string message);
/// Builds a kIoError status from errno: "<what>: <strerror(errno)>
/// [file:line]".
Status errnoStatus(const char *file, int line, const std::string &what,
                   int savedErrno);

/// A value or an error status.
template <typename T> class [[nodiscard]] StatusOr {
public:
  StatusOr(T value) : value_(std::move(value)) {}
  StatusOr(Status status) : status_(std::move(status)) {}

  bool isOk() const { return status_.isOk(); }
  const Status &status() const { return status_; }
  T &value() { return *value_; }
  const T &value() const { return *value_; }
  T &operator*() { return *value_; }
  T *operator->() { return &*value_; }

private:
  Status status_;
  std::optional<T> value_;
};

} // namespace kiln

#define KILN_CONCAT_INNER(a, b) a##b
#define KILN_CONCAT(a, b) KILN_CONCAT_INNER(a, b)

/// Creates a status of the given code with file:line appended.
#define KILN_STATUS(code, message)                                             \
  ::kiln::makeStatus(::kiln::StatusCode::code, __FILE__, __LINE__, (message))

/// Returns from the enclosing function if `expr` yields a non-OK Status.
#define KILN_RETURN_IF_ERROR(expr)                                             \
  do {                                                                         \
    ::kiln::Status kilnStatusTmp_ = (expr);                                    \
    if (!kilnStatusTmp_.isOk())                                                \
      return kilnStatusTmp_;                                                   \
  } while (0)

#define KILN_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr)                             \
  auto tmp = (expr);                                                           \
  if (!tmp.isOk())                                                             \
    return tmp.status();                                                       \
  lhs = std::move(tmp.value())

/// `KILN_ASSIGN_OR_RETURN(auto x, makeX());` binds the value or returns the
/// error.
#define KILN_ASSIGN_OR_RETURN(lhs, expr)                                       \
  KILN_ASSIGN_OR_RETURN_IMPL(KILN_CONCAT(kilnStatusOr_, __LINE__), lhs, expr)

/// Wraps a libc call that returns -1 (or a negative value) and sets errno:
/// `KILN_CHECK_LIBC(::close(fd), "close " + path);` returns kIoError with
/// errno text and the call site's file:line.
#define KILN_CHECK_LIBC(call, what)                                            \
  do {                                                                         \
    if ((call) < 0) {                                                          \
      int kilnErrno_ = errno;                                                  \
      return ::kiln::errnoStatus(__FILE__, __LINE__, (what), kilnErrno_);      \
    }                                                                          \
  } while (0)

/// Same for calls that return a null pointer on failure (fopen, opendir, ...).
#define KILN_CHECK_LIBC_PTR(ptr, what)                                         \
  do {                                                                         \
    if ((ptr) == nullptr) {                                                    \
      int kilnErrno_ = errno;                                                  \
      return ::kiln::errnoStatus(__FILE__, __LINE__, (what), kilnErrno_);      \
    }                                                                          \
  } while (0)

#endif // KILN_BASE_STATUS_H
