//===- trainer.h - The training executable's main ---------------*- C++ -*-===//
//
// runMain is the whole executable: flags, manifest, arena, variables,
// kernels, communicator, input, the training loop with progress lines and
// metrics, evaluation, checkpoints and resume. kiln_rt_main's main() calls
// it with the symbols of the compiled model; tests call it with a
// hand-written model.
//
// Exit status: 0 done; 1 runtime error (bad manifest, missing data, I/O,
// MPI); 2 bad command line; 3 the loss became NaN or Inf; 4 interrupted by
// SIGINT or SIGTERM (the run stops at the next step boundary of all ranks
// and writes a checkpoint first, so a preempted job can --resume). Under MPI
// a rank that fails ends the whole job (MPI_Abort) after printing its
// message.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RT_EXEC_TRAINER_H
#define KILN_RT_EXEC_TRAINER_H

#include "kiln/rt/model.h"

namespace kiln::rt::exec {

using StepFunction = void (*)(kiln_rt_context_t *, kiln_rt_arena_ref_t *);

/// What the compiled object file provides (model.h).
struct ModelEntryPoints {
  const uint8_t *(*manifest)(size_t *size) = nullptr;
  /// kiln_model_target, if the object has it (checked before anything runs).
  const char *(*target)(void) = nullptr;
  StepFunction train = nullptr;
  StepFunction eval = nullptr;
};

enum ExitCode : int {
  kExitOk = 0,
  kExitError = 1,
  kExitUsage = 2,
  kExitNonFiniteLoss = 3,
  kExitInterrupted = 4, ///< SIGINT/SIGTERM: stopped after a checkpoint
};

int runMain(int argc, char **argv, const ModelEntryPoints &model);

} // namespace kiln::rt::exec

#endif // KILN_RT_EXEC_TRAINER_H
