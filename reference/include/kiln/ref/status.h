//===- status.h - Error reporting for the reference kernels -----*- C++ -*-===//
//
// Part of Kiln. The reference kernels report data-dependent errors (an
// out-of-range label, inconsistent shapes handed in by the interpreter) as a
// Status value the caller can print; they never throw. Every kernel has a
// Status-returning check/infer function; the kernel itself treats a failed
// check as a broken precondition and aborts with file:line and the message.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_REF_STATUS_H
#define KILN_REF_STATUS_H

#include <string>
#include <utility>

namespace kiln::ref {

/// The outcome of a checked operation: success, or failure with a message.
class [[nodiscard]] Status {
public:
  /// A successful status.
  Status() = default;

  static Status success() { return Status(); }
  static Status error(std::string message) {
    Status s;
    s.failed = true;
    s.msg = std::move(message);
    return s;
  }

  bool ok() const { return !failed; }
  explicit operator bool() const { return ok(); }
  /// The error message; empty on success.
  const std::string &message() const { return msg; }

private:
  bool failed = false;
  std::string msg;
};

/// Aborts with a message naming file and line when `cond` is false. Used for
/// the kernels' preconditions (shapes the dialect verifier already enforces);
/// callers that want a Status instead call the matching `infer…`/`check…`
/// function first.
[[noreturn]] void fatalError(const char *file, int line,
                             const std::string &message);

#define KILN_REF_CHECK(cond, message)                                          \
  do {                                                                         \
    if (!(cond))                                                               \
      ::kiln::ref::fatalError(__FILE__, __LINE__, (message));                  \
  } while (false)

/// Like KILN_REF_CHECK, for a Status-returning expression.
#define KILN_REF_CHECK_OK(expr)                                                \
  do {                                                                         \
    ::kiln::ref::Status kilnRefStatus = (expr);                                \
    if (!kilnRefStatus.ok())                                                   \
      ::kiln::ref::fatalError(__FILE__, __LINE__, kilnRefStatus.message());    \
  } while (false)

} // namespace kiln::ref

#endif // KILN_REF_STATUS_H
