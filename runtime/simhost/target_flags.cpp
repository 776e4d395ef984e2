//===- target_flags.cpp - The systolic target's flags ---------------------===//
#include "target_flags.h"

#include <fmt/format.h>

namespace kiln::rt::simhost {

void addTargetFlags(flags::Parser &parser, TargetOptions &target) {
  flags::Flag profile = flags::stringFlag(target.profile);
  profile.valueMayLookLikeAFlag = false;
  profile.missingValueMessage =
      "--profile needs a target profile name (tpuv3, tpuv2, tpuv1)";
  parser.add("--profile", std::move(profile));
  flags::Flag set =
      flags::valueFlag([&target](const std::string &, const std::string &v) {
        size_t eq = v.find('=');
        if (eq == std::string::npos || eq == 0)
          return flags::usageError(fmt::format("--set expects FIELD=VALUE, got "
                                               "'{}' (--list-fields shows the "
                                               "fields)",
                                               v));
        target.sets.emplace_back(v.substr(0, eq), v.substr(eq + 1));
        return Status::ok();
      });
  set.valueMayLookLikeAFlag = false;
  parser.add("--set", std::move(set));
  parser.add("--list-fields", flags::switchFlag(target.listFields));
  parser.add("--print-config", flags::switchFlag(target.printConfig));
  parser.add("--device-report", flags::switchFlag(target.deviceReport));
  for (const char *x86 : {"--threads", "--weights-format", "--conv-algorithm"})
    parser.add(x86, flags::rejectedFlag(fmt::format(
                        "{} does not apply to the systolic target (it sets up "
                        "x86 kernels)",
                        x86)));
  for (const char *predict : {"--predict", "--labels"})
    parser.add(predict,
               flags::rejectedFlag(fmt::format(
                   "{} runs on x86 executables only: the systolic target has "
                   "no eval step yet",
                   predict)));
}

std::string targetUsage() {
  return R"(
systolic target (the program runs on a simulated device, docs/systolic.md):
  --profile NAME           tpuv3 (default: the profile kilnc compiled for), tpuv2, tpuv1
                           (a device name here, not the x86 executable's switch)
  --set FIELD=VALUE        override one field of the target (repeatable)
  --list-fields            print the fields with their sources, then exit
  --print-config           print the target configuration used
  --device-report          print the simulated step's per-op cycle table at start
  Progress lines show the host's img/s and the device's simulated img/s at the
  target clock (a step's device time does not depend on the data: it is
  simulated once). --threads, --weights-format, --conv-algorithm and
  --profile (x86 kernel profile) do not apply; there is no --eval on this
  target yet.
)";
}

} // namespace kiln::rt::simhost
