//===- host.cpp - main() of a systolic-target training executable ---------===//
//
// The command line (the x86 executable's flags plus the target's,
// target_flags.h), then the x86 runtime's run loop over the simulator's
// training phases (sim_trainer.h).
//
//===----------------------------------------------------------------------===//

#include "kiln/rt/simhost/host.h"

#include "sim_trainer.h"
#include "target_flags.h"

#include "kiln/base/flags.h"
#include "kiln/rt/exec/options.h"
#include "kiln/rt/exec/run_loop.h"
#include "kiln/rt/exec/trainer.h"
#include "kiln/sim/Target.h"

#include <fmt/format.h>

namespace kiln::rt::simhost {

using namespace kiln::rt::exec;

int runSimHost(int argc, char **argv, const kiln_rt_sa_program_v1_t &program) {
  const char *name = argc > 0 ? argv[0] : "kiln-train";
  RunOptions options;
  TargetOptions target;
  flags::Parser parser;
  addRunFlags(parser, options);
  addTargetFlags(parser, target);
  if (Status parsed = parser.parse(argc, argv); !parsed.isOk())
    return usageError(name, parsed.message());
  if (target.listFields) {
    for (const sim::TargetField &f : sim::targetFields())
      fmt::print("{:<16} {} [source: {}]\n", f.name, f.meaning, f.source);
    return kExitOk;
  }
  if (options.help) {
    fmt::print("{}{}", usage(name), targetUsage());
    return kExitOk;
  }
  if (Status checked = checkRunOptions(options); !checked.isOk())
    return usageError(name, checked.message());

  return runTraining(options, [&](Comm &comm) {
    return makeSimTrainer(options, target, program, comm);
  });
}

} // namespace kiln::rt::simhost
