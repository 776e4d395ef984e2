//===- cpu_check.h - Does this CPU run the generated code? ------*- C++ -*-===//
//
// kilnc generates code for one CPU (--cpu, the compiling machine's by
// default) and records it (kiln_model_target, model.h). Before any
// generated code runs, the runtime checks that this CPU has every extension
// recorded, so that an executable copied to an older machine stops with a
// message naming what is missing instead of on an illegal instruction.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RT_EXEC_CPU_CHECK_H
#define KILN_RT_EXEC_CPU_CHECK_H

#include "kiln/base/status.h"

#include <string_view>

namespace kiln::rt::exec {

/// Whether this CPU has the extension `name` of cpu_features.h; false for
/// names it does not list.
bool hostHasCpuFeature(std::string_view name);

/// OK if `hasFeature` holds for every feature of `targetJson` (the JSON of
/// kiln_model_target); kInvalidArgument naming the model's CPU and the
/// missing extensions otherwise; kInternal if the JSON is malformed.
Status checkTargetCpu(std::string_view targetJson,
                      bool (*hasFeature)(std::string_view) = hostHasCpuFeature);

} // namespace kiln::rt::exec

#endif // KILN_RT_EXEC_CPU_CHECK_H
