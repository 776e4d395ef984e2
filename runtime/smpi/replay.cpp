//===- replay.cpp - kiln-comm-replay: a training run's trace under SMPI ---===//
//
// Each simulated rank replays one --comm-trace file (rank r reads trace
// r mod the number of traces): the compute between the runtime's calls into
// the communicator as smpi_execute, the calls themselves through MpiComm
// (runtime/exec/comm_mpi.cpp, compiled here against SimGrid's mpi.h), so the
// bucket reductions start, progress and are waited for where the compiled
// step did. Rank 0 prints one JSON line: the simulated step time, its
// compute and exposed communication, and the traced run's own figures for
// the same steps. Run it with smpirun (runtime/smpi/cluster.py does).
// With --program, every rank runs a systolic-target training step instead,
// its timeline from the timed simulator (program_trace.h).
//
//===----------------------------------------------------------------------===//

#include "kiln/base/flags.h"
#include "kiln/rt/exec/comm.h"
#include "kiln/rt/exec/comm_trace.h"
#include "program_trace.h"

#include <fmt/format.h>
#include <mpi.h>
#include <smpi/smpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <random>
#include <string>
#include <vector>

using namespace kiln;
using namespace kiln::rt::exec;

namespace {

struct ReplayOptions {
  std::vector<std::string> traces;
  /// Steps left out at the start of each trace (the first writes every
  /// activation for the first time).
  int64_t skip = 1;
  /// Steps replayed (0: all that remain).
  int64_t steps = 0;
  /// When positive, each rank's compute is scaled to this many seconds per
  /// step, keeping where in the step each call happens.
  double stepCompute = 0;
  /// Examples per rank and step, for images/s (0: not printed).
  int64_t batch = 0;
  double timeout = 1e6;
  /// A systolic program to replay instead of traces.
  smpi::ProgramTraceOptions program;
  AllreduceAlgorithm algorithm = AllreduceAlgorithm::Ring;
  std::vector<int> torusDims;
  /// When positive, a progress call every this many seconds of compute
  /// while a bucket is in flight: a device whose links move the data while
  /// its cores compute (a TPU's), or a host's progress thread.
  double progressEvery = 0;
  /// Replays the time the traced run spent inside progress calls as the
  /// rank's own CPU time before each simulated progress call: Open MPI has
  /// no progress thread, and its TCP transport's work there takes the
  /// compute's place, which SMPI's network model does not include.
  bool progressCpu = false;
  /// Stragglers: a --comm-trace of a real run whose steps' compute, each
  /// over their median, is the distribution every rank draws one factor
  /// per step from (seeded by --seed and the rank) to scale that step's
  /// compute.
  std::string jitterTrace;
  int64_t seed = 1;
};

const char *kUsage =
    "usage: smpirun ... kiln-comm-replay --trace FILE [--trace FILE ...]\n"
    "         [--skip N] [--steps N] [--step-compute SEC] [--batch N]\n"
    "         [--allreduce ring|torus --torus-dims AxB...]\n"
    "         [--progress-every SEC] [--progress-cpu]\n"
    "         [--jitter TRACE [--seed N]]\n"
    "       (or --program STEP.ksap [--profile NAME] [--set FIELD=VALUE ...]\n"
    "        instead of the traces)\n";

Status parseReplayOptions(int argc, char **argv, ReplayOptions &o) {
  flags::Parser parser;
  parser.add("--trace", flags::valueFlag([&](const std::string &,
                                              const std::string &v) {
               o.traces.push_back(v);
               return Status::ok();
             }));
  parser.add("--skip", flags::intFlag(o.skip, 0, int64_t(1) << 40));
  parser.add("--steps", flags::intFlag(o.steps, 0, int64_t(1) << 40));
  parser.add("--batch", flags::intFlag(o.batch, 0, int64_t(1) << 40));
  parser.add("--step-compute",
             flags::valueFlag([&](const std::string &f, const std::string &v) {
               return flags::parseDouble(f, v, 0, 1e6, o.stepCompute);
             }));
  parser.add("--progress-cpu", flags::switchFlag(o.progressCpu));
  parser.add("--progress-every",
             flags::valueFlag([&](const std::string &f, const std::string &v) {
               return flags::parseDouble(f, v, 0, 1e6, o.progressEvery);
             }));
  parser.add("--jitter", flags::stringFlag(o.jitterTrace));
  parser.add("--seed", flags::intFlag(o.seed, 0, int64_t(1) << 62));
  parser.add("--program", flags::stringFlag(o.program.path));
  parser.add("--profile", flags::stringFlag(o.program.profile));
  parser.add("--set", flags::valueFlag([&](const std::string &,
                                           const std::string &v) {
               size_t eq = v.find('=');
               if (eq == std::string::npos || eq == 0)
                 return flags::usageError("--set needs FIELD=VALUE, got '" +
                                          v + "'");
               o.program.sets.emplace_back(v.substr(0, eq), v.substr(eq + 1));
               return Status::ok();
             }));
  parser.add("--allreduce",
             flags::enumFlag(o.algorithm, {{"ring", AllreduceAlgorithm::Ring},
                                           {"torus", AllreduceAlgorithm::Torus}}));
  parser.add("--torus-dims",
             flags::valueFlag([&](const std::string &f, const std::string &v) {
               return parseTorusDims(f, v, o.torusDims);
             }));
  KILN_RETURN_IF_ERROR(parser.parse(argc, argv));
  if (o.traces.empty() == o.program.path.empty())
    return flags::usageError("give --trace or --program (one of them)");
  if ((o.algorithm == AllreduceAlgorithm::Torus) != !o.torusDims.empty())
    return flags::usageError("--allreduce torus and --torus-dims go together");
  o.program.steps = int(std::min<int64_t>(o.skip + std::max<int64_t>(o.steps, 1),
                                          1 << 20));
  return Status::ok();
}

/// FNV-1a over what every rank must agree on, so that traces that would
/// not meet in their collectives are refused instead of hanging.
struct Fingerprint {
  uint64_t value = 1469598103934665603ull;
  void add(int64_t x) {
    for (int i = 0; i < 8; ++i) {
      value ^= uint64_t(x >> (8 * i)) & 0xff;
      value *= 1099511628211ull;
    }
  }
};

class Replay {
public:
  Replay(Comm &comm, const ReplayOptions &options)
      : comm(comm), options(options) {}

  Status run() {
    const std::string &path = traceName(comm.rank());
    StatusOr<CommTrace> read = options.program.path.empty()
                                   ? readCommTrace(path)
                                   : programTrace(options.program);
    // Every rank learns whether all traces were read, so that none waits
    // in a collective for a rank that has given up.
    int64_t allRead = read.isOk() ? 1 : 0;
    KILN_RETURN_IF_ERROR(comm.allreduceMin(&allRead, 1));
    if (!read.isOk())
      return read.status();
    if (!allRead)
      return invalidArgumentError("another rank's trace could not be read");
    CommTrace &trace = *read;
    // Every rank replays the same number of steps.
    int64_t available =
        std::max<int64_t>(0, int64_t(trace.steps.size()) - options.skip);
    int64_t count = options.steps ? std::min(options.steps, available)
                                  : available;
    KILN_RETURN_IF_ERROR(comm.allreduceMin(&count, 1));
    if (count <= 0)
      return invalidArgumentError(fmt::format(
          "{}: no step left to replay after --skip {} (a trace has {})", path,
          options.skip, trace.steps.size()));
    std::vector<const TraceStep *> steps;
    for (int64_t i = 0; i < count; ++i)
      steps.push_back(&trace.steps[size_t(options.skip + i)]);
    KILN_RETURN_IF_ERROR(checkTracesMeet(trace, steps));

    double traced = 0;
    for (const TraceStep *step : steps)
      traced += step->computeSeconds();
    double scale = 1;
    if (options.stepCompute > 0 && traced > 0)
      scale = options.stepCompute * double(count) / traced;
    std::vector<double> factors;
    if (!options.jitterTrace.empty()) {
      KILN_ASSIGN_OR_RETURN(factors, jitterFactors());
    }
    std::mt19937_64 draw(uint64_t(options.seed) * 1000003u +
                         uint64_t(comm.rank()));

    // The gradients live in one arena shared by every simulated rank
    // (SMPI_SHARED_MALLOC): the values do not change the time, and 512
    // copies of ResNet-50's gradients would not fit in this machine. It
    // starts as zeros, and sums of zeros stay finite.
    std::vector<Bucket> buckets;
    int64_t bytes = 0;
    for (size_t b = 0; b < trace.buckets.size(); ++b) {
      TensorRef tensor;
      tensor.offset = bytes;
      tensor.shape = {trace.buckets[b].count};
      tensor.dtype = trace.buckets[b].type;
      bytes += tensor.byteSize();
      buckets.push_back({int32_t(b), {tensor}});
    }
    arena = static_cast<uint8_t *>(SMPI_SHARED_MALLOC(size_t(bytes) + 64));
    KILN_RETURN_IF_ERROR(comm.setBuckets(buckets, arena));

    KILN_RETURN_IF_ERROR(comm.barrier());
    double simulated = 0, computed = 0, measured = 0, communicated = 0;
    // Each step's compute on this rank, negated nanoseconds: a minimum
    // over the ranks is then the slowest rank's (stragglers).
    std::vector<int64_t> slowest;
    for (const TraceStep *step : steps) {
      double stepScale = scale;
      if (!factors.empty())
        stepScale *= factors[draw() % factors.size()];
      double begin = MPI_Wtime();
      for (const TraceEvent &event : step->events) {
        double before = event.computeBefore * stepScale;
        if (options.progressCpu && event.kind == 'p')
          before += event.callSeconds;
        compute(before);
        KILN_RETURN_IF_ERROR(call(event));
      }
      compute(step->tail * stepScale);
      simulated += MPI_Wtime() - begin;
      // The progress calls' CPU time counts as communication, as in the
      // trace.
      computed += step->computeSeconds() * stepScale;
      slowest.push_back(
          -std::llround(step->computeSeconds() * stepScale * 1e9));
      measured += step->seconds;
      communicated += step->callSeconds();
    }
    SMPI_SHARED_FREE(arena);
    arena = nullptr;

    double sums[4] = {simulated / double(count), computed / double(count),
                      measured / double(count), communicated / double(count)};
    KILN_RETURN_IF_ERROR(comm.allreduceSum(sums, 4));
    KILN_RETURN_IF_ERROR(comm.allreduceMin(slowest.data(), int(count)));
    double slowestSeconds = 0;
    for (int64_t negated : slowest)
      slowestSeconds -= double(negated) * 1e-9 / double(count);
    if (comm.rank() != 0)
      return Status::ok();
    double ranks = comm.size();
    double stepSeconds = sums[0] / ranks, computeSeconds = sums[1] / ranks;
    std::string line = fmt::format(
        "{{\"ranks\":{},\"steps\":{},\"allreduce\":\"{}\",\"bucket_bytes\":{},"
        "\"progress_cpu\":{},\"compute_scale\":{:.6g},"
        "\"step_seconds\":{:.6f},"
        "\"compute_seconds\":{:.6f},\"slowest_compute_seconds\":{:.6f},"
        "\"exposed_seconds\":{:.6f},"
        "\"traced_step_seconds\":{:.6f},\"traced_exposed_seconds\":{:.6f}",
        comm.size(), count,
        options.algorithm == AllreduceAlgorithm::Torus ? "torus" : "ring",
        comm.bucketBytes(), options.progressCpu, scale, stepSeconds,
        computeSeconds, slowestSeconds, stepSeconds - computeSeconds,
        sums[2] / ranks, sums[3] / ranks);
    if (options.progressEvery > 0)
      line += fmt::format(",\"progress_every\":{:.6g}", options.progressEvery);
    if (!options.program.path.empty())
      line += fmt::format(",\"device_step_seconds\":{:.6f}",
                          steps.front()->seconds);
    if (!factors.empty())
      line += fmt::format(",\"jitter_steps\":{},\"jitter_max\":{:.4f}",
                          factors.size(),
                          *std::max_element(factors.begin(), factors.end()));
    if (options.batch > 0)
      line += fmt::format(",\"images_per_second\":{:.1f}",
                          double(options.batch) * ranks / stepSeconds);
    std::printf("%s}\n", line.c_str());
    std::fflush(stdout);
    return Status::ok();
  }

private:
  Comm &comm;
  const ReplayOptions &options;
  uint8_t *arena = nullptr;

  /// Each step's compute in --jitter's trace over the median of them, from
  /// its step --skip on. Every rank reads the same file, so their errors
  /// agree.
  StatusOr<std::vector<double>> jitterFactors() const {
    KILN_ASSIGN_OR_RETURN(CommTrace trace, readCommTrace(options.jitterTrace));
    std::vector<double> factors;
    for (size_t s = size_t(options.skip); s < trace.steps.size(); ++s)
      factors.push_back(trace.steps[s].computeSeconds());
    if (factors.size() < 2)
      return invalidArgumentError(fmt::format(
          "{}: --jitter needs at least 2 steps after --skip {} (it has {})",
          options.jitterTrace, options.skip, trace.steps.size()));
    std::vector<double> sorted = factors;
    std::sort(sorted.begin(), sorted.end());
    double median = sorted[sorted.size() / 2];
    if (!(median > 0))
      return invalidArgumentError(fmt::format(
          "{}: --jitter's steps have no compute", options.jitterTrace));
    for (double &f : factors)
      f /= median;
    return factors;
  }

  const std::string &traceName(int rank) const {
    return options.program.path.empty()
               ? options.traces[size_t(rank) % options.traces.size()]
               : options.program.path;
  }

  /// The program's trace is the same for every rank: worked out once per
  /// process (the simulated ranks share its globals, privatization off) and
  /// copied, not 512 times.
  static StatusOr<CommTrace>
  programTrace(const smpi::ProgramTraceOptions &program) {
    static std::optional<StatusOr<CommTrace>> cached;
    if (!cached)
      cached = smpi::traceFromProgram(program);
    return *cached;
  }

  void compute(double seconds) {
    if (seconds <= 0)
      return;
    // Slices with a progress call between them while a reduction is in
    // flight (--progress-every). The calls' own simulated time (SMPI's cost of an
    // MPI_Test) is taken from the compute, so that the step's compute stays
    // what the trace says: they stand for links that move data by
    // themselves.
    while (options.progressEvery > 0 && comm.reductionsInFlight() &&
           seconds > options.progressEvery) {
      smpi_execute(options.progressEvery);
      seconds -= options.progressEvery;
      double before = MPI_Wtime();
      comm.progress();
      seconds -= MPI_Wtime() - before;
    }
    if (seconds > 0)
      smpi_execute(seconds);
  }

  Status call(const TraceEvent &event) {
    switch (event.kind) {
    case 's':
      comm.allreduceStart(int32_t(event.argument));
      return Status::ok();
    case 'w':
      comm.allreduceWait(int32_t(event.argument));
      return Status::ok();
    case 'p':
      comm.progress();
      return Status::ok();
    case 'r': {
      std::vector<double> values(size_t(event.argument), 0.0);
      return comm.allreduceSum(values.data(), int(event.argument));
    }
    case 'm': {
      std::vector<int64_t> values(size_t(event.argument), 0);
      return comm.allreduceMin(values.data(), int(event.argument));
    }
    case 'g':
      return comm.allgather(0).status();
    case 't':
      return comm.allgatherText(std::string(size_t(event.argument), ' '))
          .status();
    case 'b':
      return comm.barrier();
    case 'c': {
      std::vector<uint8_t> data(size_t(event.argument));
      return comm.broadcast(data.data(), data.size(), 0);
    }
    }
    return invalidArgumentError(
        fmt::format("unknown trace event '{}'", event.kind));
  }

  /// The ranks must agree on the buckets and on the collectives each step
  /// makes, in order; bucket reductions must start in the same order too
  /// (their messages are matched by bucket).
  Status checkTracesMeet(const CommTrace &trace,
                         const std::vector<const TraceStep *> &steps) {
    Fingerprint print;
    for (const TraceBucket &b : trace.buckets) {
      print.add(b.count);
      print.add(int64_t(b.type));
    }
    for (const TraceStep *step : steps)
      for (const TraceEvent &e : step->events)
        if (e.kind != 'p' && e.kind != 'w') {
          print.add(e.kind);
          print.add(e.argument);
        }
    KILN_ASSIGN_OR_RETURN(std::vector<uint64_t> all,
                          comm.allgather(print.value));
    for (size_t r = 1; r < all.size(); ++r)
      if (all[r] != all[0])
        return invalidArgumentError(fmt::format(
            "{} (rank {}) and {} (rank 0) differ in their buckets or in the "
            "collectives their steps make: the ranks would not meet",
            traceName(int(r)), r, traceName(0)));
    return Status::ok();
  }
};

} // namespace

int main(int argc, char **argv) {
  ReplayOptions options;
  MpiOptions mpiOptions;
  Status parsed = parseReplayOptions(argc, argv, options);
  // Kiln's ring: SMPI 3.32's own MPI_Iallreduce is another algorithm than
  // Open MPI's, and crashed (a segmentation fault) in place here.
  // A bad command line is reported once MPI is up, through the ring.
  mpiOptions.algorithm =
      parsed.isOk() ? options.algorithm : AllreduceAlgorithm::Ring;
  if (parsed.isOk())
    mpiOptions.torusDims = options.torusDims;
  mpiOptions.timeoutSeconds = options.timeout;
  StatusOr<std::unique_ptr<Comm>> created = createMpiComm(mpiOptions);
  if (!created.isOk()) {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0)
      std::fprintf(stderr, "kiln-comm-replay: %s\n",
                   created.status().message().c_str());
    MPI_Finalize();
    return 1;
  }
  Comm &comm = **created;
  if (!parsed.isOk()) {
    if (comm.rank() == 0)
      std::fprintf(stderr, "kiln-comm-replay: %s\n%s",
                   parsed.message().c_str(), kUsage);
    comm.finalize();
    return 2;
  }
  // The replay's errors are collective (every rank returns one), so each
  // rank can end normally; smpirun's exit status is then 1.
  Status status = Replay(comm, options).run();
  if (!status.isOk())
    std::fprintf(stderr, "kiln-comm-replay: rank %d: %s\n", comm.rank(),
                 status.message().c_str());
  comm.finalize();
  return status.isOk() ? 0 : 1;
}
