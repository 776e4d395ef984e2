//===- Status.h - Error reporting of the simulator -------------*- C++ -*-===//
//
// Part of Kiln. The simulator reports bad programs, bad options and bad
// inputs as a Status the caller prints; it never throws and never aborts on
// data it was handed.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_SIM_STATUS_H
#define KILN_SIM_STATUS_H

#include <string>
#include <utility>

namespace kiln::sim {

class [[nodiscard]] Status {
public:
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
  const std::string &message() const { return msg; }

private:
  bool failed = false;
  std::string msg;
};

#define KILN_SIM_RETURN_IF_ERROR(expr)                                         \
  do {                                                                         \
    ::kiln::sim::Status kilnSimStatus = (expr);                                \
    if (!kilnSimStatus.ok())                                                   \
      return kilnSimStatus;                                                    \
  } while (false)

} // namespace kiln::sim

#endif // KILN_SIM_STATUS_H
