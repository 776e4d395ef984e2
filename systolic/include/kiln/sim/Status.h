//===- Status.h - Error reporting of the simulator -------------*- C++ -*-===//
//
// Part of Kiln. The simulator reports bad programs, bad options and bad
// inputs as a Status the caller prints; it never throws and never aborts on
// data it was handed.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_SIM_STATUS_H
#define KILN_SIM_STATUS_H

#include "kiln/ref/status.h"

namespace kiln::sim {

/// The reference kernels' status (kiln_sim links kiln_ref for bf16 rounding).
using Status = ::kiln::ref::Status;

#define KILN_SIM_RETURN_IF_ERROR(expr)                                         \
  do {                                                                         \
    ::kiln::sim::Status kilnSimStatus = (expr);                                \
    if (!kilnSimStatus.ok())                                                   \
      return kilnSimStatus;                                                    \
  } while (false)

} // namespace kiln::sim

#endif // KILN_SIM_STATUS_H
