//===- clock.cpp - The clock the runtime times its run with ---------------===//

#include "kiln/rt/exec/clock.h"

#ifdef KILN_SMPI
#include <mpi.h>

#include <cmath>
#endif

namespace kiln::rt::exec {

RunClock::time_point RunClock::now() noexcept {
#ifdef KILN_SMPI
  // SMPI's MPI_Wtime first charges the rank the CPU time it has spent since
  // its last MPI call (smpi/simulate-computation), so the simulated clock
  // includes the compute up to here. It needs no MPI_Init.
  return time_point(duration(std::llround(MPI_Wtime() * 1e9)));
#else
  return time_point(std::chrono::duration_cast<duration>(
      std::chrono::steady_clock::now().time_since_epoch()));
#endif
}

} // namespace kiln::rt::exec
