//===- schedule.h - The learning-rate schedule in effect for a run -*- C++ -*-===//
//
// The compiled model evaluates its learning-rate schedule from an f64
// variable whose slots the manifest names ("base_lr", "warmup_steps", ...).
// Before the first step the runtime writes into those slots
//
//  1. what the compiler left to the run (model-abi.md, ABI 5): step slots
//     given in epochs, resolved as round(epochs x steps per epoch) (the
//     warmup exactly, unrounded: it may be fractional), and a
//     decaying schedule's horizon compiled without one, which takes the
//     run's length; on resume the checkpoint's values stand instead, so a
//     resumed run continues the curve it started;
//  2. the command line: --lr-style flags, in command-line order, and
//     --warmup-epochs / --decay-epochs (epochs, resolved as above).
//
// Aliases map the common flags onto whichever slot the schedule kind has:
//
//   lr              lr | base_lr | peak_lr
//   warmup_init_lr  warmup_init_lr | init_lr
//   warmup_steps    warmup_steps           (--warmup-epochs in epochs)
//   total_steps     total_steps | train_steps  (--decay-epochs in epochs)
//   end_lr, power   end_lr, power
//   decay_factor    factor
//
// and --set-schedule names a slot exactly. A flag whose slot the schedule
// does not have is an error listing the slots it does have.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RT_EXEC_SCHEDULE_H
#define KILN_RT_EXEC_SCHEDULE_H

#include "kiln/base/status.h"
#include "kiln/rt/exec/comm.h"
#include "kiln/rt/exec/manifest.h"
#include "kiln/rt/exec/options.h"
#include "kiln/rt/exec/run_loop.h"

#include <string>
#include <vector>

namespace kiln::rt::exec {

/// Per slot, where its value came from ("1 epoch x 19 steps per epoch",
/// "--lr"); empty where it is the compiled value (or the checkpoint's).
using ScheduleSources = std::vector<std::string>;

/// Writes the schedule in effect into `arena` (the steps above) once the
/// input is open (run.stepsPerEpoch, run.totalSteps) and any checkpoint is
/// loaded (run.startStep). Every rank calls it and writes the same values;
/// rank 0 warns when the schedule's horizon is not the run's last step, or
/// when a resumed run's checkpoint holds other values than this run would
/// resolve (another world size). A slot that cannot be resolved (epochs on
/// synthetic data without --steps-per-epoch) is an error naming it.
StatusOr<ScheduleSources> applySchedule(const Manifest &manifest,
                                        uint8_t *arena,
                                        const RunOptions &options,
                                        const RunState &run, const Comm &comm);

/// "cosine_decay: base_lr=0.1 warmup_init_lr=0 warmup_steps=469 ...", then
/// the slots `sources` explains in parentheses, or "none" without a
/// schedule.
std::string describeSchedule(const Manifest &manifest, const uint8_t *arena,
                             const ScheduleSources &sources = {});

} // namespace kiln::rt::exec

#endif // KILN_RT_EXEC_SCHEDULE_H
