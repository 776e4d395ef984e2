//===- target_flags.h - The systolic target's flags -------------*- C++ -*-===//
//
// The flags a systolic-target executable adds to the x86 executable's table
// (kiln/rt/exec/options.h): the device's profile and field overrides, and
// what to print about it. --profile names a device here; on x86 it is the
// switch that times kernels, so the target replaces that entry.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RT_SIMHOST_TARGET_FLAGS_H
#define KILN_RT_SIMHOST_TARGET_FLAGS_H

#include "kiln/base/flags.h"

#include <string>
#include <utility>
#include <vector>

namespace kiln::rt::simhost {

struct TargetOptions {
  std::string profile;
  std::vector<std::pair<std::string, std::string>> sets;
  bool listFields = false;
  bool printConfig = false;
  bool deviceReport = false;
};

/// Adds the target's flags to `parser` (replacing --profile), storing into
/// `target`, and makes the flags that set up x86 kernels errors.
void addTargetFlags(flags::Parser &parser, TargetOptions &target);

/// The --help section of the target's flags.
std::string targetUsage();

} // namespace kiln::rt::simhost

#endif // KILN_RT_SIMHOST_TARGET_FLAGS_H
