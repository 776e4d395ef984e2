//===- program_trace.h - A systolic program's step as a trace ---*- C++ -*-===//
//
// kiln-comm-replay --program: one simulated chip (or core) per rank, each
// running a systolic-target training step (a .ksap program, as kilnc and
// kiln-translate write it). The step's timeline comes from the timed
// simulator (kiln/sim/Timing.h) on one rank, where the program's AllReduce
// instructions take no time: each is a bucket started when the instruction
// issues and waited for where the first instruction that reads its result
// starts; the compute between those points is the simulated device time.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_SMPI_PROGRAM_TRACE_H
#define KILN_SMPI_PROGRAM_TRACE_H

#include "kiln/base/status.h"
#include "kiln/rt/exec/comm_trace.h"

#include <string>
#include <utility>
#include <vector>

namespace kiln::smpi {

struct ProgramTraceOptions {
  std::string path;
  /// A device profile (kiln/sim/Target.h; empty: the program's own target)
  /// and field overrides, as kiln-sim's --profile and --set.
  std::string profile;
  std::vector<std::pair<std::string, std::string>> sets;
  /// Identical steps in the trace.
  int steps = 2;
};

/// The program's step as a --comm-trace (comm_trace.h) of `steps` equal
/// steps; errors name the file.
StatusOr<rt::exec::CommTrace>
traceFromProgram(const ProgramTraceOptions &options);

} // namespace kiln::smpi

#endif // KILN_SMPI_PROGRAM_TRACE_H
