//===- check.h - Precondition checks of the reference kernels ---*- C++ -*-===//
//
// Part of Kiln. The reference kernels report data-dependent errors (an
// out-of-range label, inconsistent shapes handed in by the interpreter) as a
// kiln::Status the caller can print; they never throw. Every kernel has a
// Status-returning check/infer function; the kernel itself treats a failed
// check as a broken precondition and aborts with file:line and the message.
//
// The abort stays here rather than in base/: it is an assertion about the
// kernels' own contract (its message says "kiln::ref fatal error"), not a
// way of reporting failures to a caller.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_REF_CHECK_H
#define KILN_REF_CHECK_H

#include "kiln/base/status.h"

#include <string>

namespace kiln::ref {

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
    ::kiln::Status kilnRefStatus = (expr);                                     \
    if (!kilnRefStatus.isOk())                                                 \
      ::kiln::ref::fatalError(__FILE__, __LINE__, kilnRefStatus.message());    \
  } while (false)

} // namespace kiln::ref

#endif // KILN_REF_CHECK_H
