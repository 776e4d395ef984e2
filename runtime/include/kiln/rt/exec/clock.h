//===- clock.h - The clock the runtime times its run with -------*- C++ -*-===//
//
// Steps, progress lines, bucket waits and --comm-trace are timed with
// RunClock: the steady clock, except in the runtime built for SimGrid's SMPI
// (kiln_rt_exec_smpi, runtime/smpi), where it is the simulated time
// (MPI_Wtime), so that a simulated run reports simulated seconds and its
// trace is the simulated run's timeline (docs/scaling.md).
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RT_EXEC_CLOCK_H
#define KILN_RT_EXEC_CLOCK_H

#include <chrono>

namespace kiln::rt::exec {

/// A std::chrono clock (TrivialClock) read by the thread that runs the
/// step; under SMPI only a simulated rank may read it, not the input
/// pipeline's threads.
struct RunClock {
  using duration = std::chrono::nanoseconds;
  using rep = duration::rep;
  using period = duration::period;
  using time_point = std::chrono::time_point<RunClock>;
  static constexpr bool is_steady = true;
  static time_point now() noexcept;
};

} // namespace kiln::rt::exec

#endif // KILN_RT_EXEC_CLOCK_H
