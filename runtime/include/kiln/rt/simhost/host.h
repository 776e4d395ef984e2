//===- host.h - main() of a systolic-target training executable -*- C++ -*-===//
//
// `kilnc --target=systolic` links the object holding the serialized program
// (kiln/rt/sa_program.h) with this host runtime. runSimHost is the whole
// executable: the command line of the x86 executable where it applies
// (kiln/rt/exec/options.h) plus the target's flags, the input pipeline and
// the communicator of runtime/exec, and the simulator (kiln/sim) as the
// device: every step feeds the batch in, runs the program functionally,
// averages gradients over the ranks through the program's AllReduce
// instructions, and reads the loss back. The device time of a step does not
// depend on the values, so it is simulated once (timed mode) and reported
// as images/s at the target's clock next to the host's wall-clock rate.
//
// Exit status as the x86 executable's (kiln/rt/exec/trainer.h).
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RT_SIMHOST_HOST_H
#define KILN_RT_SIMHOST_HOST_H

#include "kiln/rt/sa_program.h"

namespace kiln::rt::simhost {

int runSimHost(int argc, char **argv, const kiln_rt_sa_program_v1_t &program);

} // namespace kiln::rt::simhost

#endif // KILN_RT_SIMHOST_HOST_H
