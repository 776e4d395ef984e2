//===- comm_trace.h - Each step's compute and communication calls -*- C++ -*-===//
//
// --comm-trace FILE: a communicator that wraps the real one and records,
// for every training-loop iteration (input, step function, the per-step
// reductions), each call the runtime makes into the communicator, the
// compute time before it and the time the call took. kiln-comm-replay
// (runtime/smpi) replays such a trace on a simulated cluster under SimGrid's
// SMPI: the compute as smpi_execute, the calls through the same MpiComm
// (comm_mpi.cpp) built against SMPI's mpi.h, so the bucket reductions start
// at the offsets the compiled step issued them (docs/scaling.md).
//
// The file is JSON lines. The first describes the run:
//   {"kiln_comm_trace":1,"rank":0,"ranks":2,"backend":"mpi",
//    "buckets":[[count,"f32"],...]}
// then one line per step:
//   {"step":5,"seconds":0.41,"tail":0.002,"events":[["p",c,d,a],...]}
// where each event is [kind, compute seconds since the previous call
// returned, seconds inside the call, argument]; "tail" is the compute after
// the last call. Kinds and arguments: "s" allreduce start (bucket), "w"
// allreduce wait (bucket), "p" progress (-1), "r" sum (count), "m" minimum
// (count), "g" allgather (-1), "t" allgather of text (bytes), "b" barrier
// (-1), "c" broadcast (bytes).
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RT_EXEC_COMM_TRACE_H
#define KILN_RT_EXEC_COMM_TRACE_H

#include "kiln/base/dtype.h"
#include "kiln/base/status.h"
#include "kiln/rt/exec/comm.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kiln::rt::exec {

struct TraceEvent {
  char kind = 'p';
  double computeBefore = 0;
  double callSeconds = 0;
  int64_t argument = -1;
};

struct TraceStep {
  int64_t step = 0;
  /// The whole iteration, as measured.
  double seconds = 0;
  double tail = 0;
  std::vector<TraceEvent> events;

  /// Compute: the gaps before the calls and the tail.
  double computeSeconds() const;
  /// Inside communicator calls: what the step spent on communication.
  double callSeconds() const;
};

struct TraceBucket {
  int64_t count = 0;
  DType type = DType::F32;
};

struct CommTrace {
  int rank = 0;
  int ranks = 1;
  std::string backend;
  std::vector<TraceBucket> buckets;
  std::vector<TraceStep> steps;
};

/// Wraps `inner` (taken only on success, so that a caller can still end
/// the job through it); writes `pathPattern` with "{rank}" replaced by the
/// rank. With more than one rank the pattern must contain "{rank}".
StatusOr<std::unique_ptr<Comm>>
createTracingComm(std::unique_ptr<Comm> &inner,
                  const std::string &pathPattern);

/// Reads a trace; errors name the file and line.
StatusOr<CommTrace> readCommTrace(const std::string &path);

} // namespace kiln::rt::exec

#endif // KILN_RT_EXEC_COMM_TRACE_H
