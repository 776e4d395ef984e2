//===- sim_trainer.h - The training phases on the simulator -----*- C++ -*-===//
//
// The systolic executable's TrainingPhases (kiln/rt/exec/run_loop.h): the
// host keeps a small arena in the x86 runtime's terms (kiln/rt/exec/
// manifest.h): the program's variables and the step's inputs and outputs,
// described by a Manifest built from the program and kilnc's info JSON. That
// lets the x86 runtime's pieces work unchanged: the synthetic and TFRecord
// inputs write the batch into the arena, schedule overrides, checkpoints and
// the replica hash read and write the variables there. Variables live in the
// simulator during training and are copied to the arena only when one of
// those needs them.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RT_SIMHOST_SIM_TRAINER_H
#define KILN_RT_SIMHOST_SIM_TRAINER_H

#include "target_flags.h"

#include "kiln/rt/exec/comm.h"
#include "kiln/rt/exec/options.h"
#include "kiln/rt/exec/run_loop.h"
#include "kiln/rt/sa_program.h"

#include <memory>

namespace kiln::rt::simhost {

/// The phases of a run of `program` on the simulated device; the arguments
/// must outlive them.
std::unique_ptr<exec::TrainingPhases>
makeSimTrainer(const exec::RunOptions &options, const TargetOptions &target,
               const kiln_rt_sa_program_v1_t &program, exec::Comm &comm);

} // namespace kiln::rt::simhost

#endif // KILN_RT_SIMHOST_SIM_TRAINER_H
