//===- schedule.h - Learning-rate overrides into the schedule variable -*- C++ -*-===//
//
// The compiled model evaluates its learning-rate schedule from an f64
// variable whose slots the manifest names ("base_lr", "warmup_steps", ...);
// --lr-style flags are writes into those slots before training starts.
// Aliases map the common flags onto whichever slot the schedule kind has:
//
//   lr              lr | base_lr | peak_lr
//   warmup_init_lr  warmup_init_lr | init_lr
//   warmup_steps    warmup_steps
//   total_steps     total_steps | train_steps
//   end_lr, power   end_lr, power
//   decay_factor    factor
//
// and --set-schedule names a slot exactly. A flag whose slot the schedule
// does not have is an error listing the slots it does have.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RT_EXEC_SCHEDULE_H
#define KILN_RT_EXEC_SCHEDULE_H

#include "kiln/rt/exec/manifest.h"
#include "kiln/rt/status.h"

#include <string>
#include <utility>
#include <vector>

namespace kiln::rt::exec {

/// Writes `overrides` (alias or "=slot", value) in order. Step-valued slots
/// must be non-negative integers.
Status applyScheduleOverrides(
    const Manifest &manifest, uint8_t *arena,
    const std::vector<std::pair<std::string, double>> &overrides);

/// "cosine_decay: base_lr=0.1 warmup_init_lr=0 warmup_steps=469 ...", or
/// "none" without a schedule.
std::string describeSchedule(const Manifest &manifest, const uint8_t *arena);

} // namespace kiln::rt::exec

#endif // KILN_RT_EXEC_SCHEDULE_H
