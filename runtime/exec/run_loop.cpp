//===- run_loop.cpp - What both executables do around a step -------------===//

#include "kiln/rt/exec/run_loop.h"

#include "kiln/rt/exec/checkpoint.h"
#include "kiln/rt/exec/comm_trace.h"
#include "kiln/rt/exec/trainer.h"
#include "kiln/rt/exec/variables.h"

#include <fmt/format.h>

#include <fmt/ranges.h>

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <new>
#include <thread>

namespace kiln::rt::exec {
namespace {

/// The first SIGINT/SIGTERM of the run (0: none); the loops stop at the
/// next step boundary. Set by the handler, so lock-free.
std::atomic<int> stopSignal{0};
static_assert(std::atomic<int>::is_always_lock_free);

/// The pipe that wakes the watcher thread: the handler writes the signal's
/// number, the watcher's destructor a 0.
int wakeFds[2] = {-1, -1};

void onStopSignal(int signal) {
  int savedErrno = errno;
  stopSignal.store(signal);
  unsigned char byte = static_cast<unsigned char>(signal);
  // Non-blocking: a full pipe already holds a wake-up.
  [[maybe_unused]] ssize_t n = ::write(wakeFds[1], &byte, 1);
  errno = savedErrno;
}

/// Where the watcher sends the signal: the current run's checkpointer on
/// rank 0 while it snapshots. The watcher holds the mutex while writing, so
/// the checkpointer cannot go away under it.
std::mutex interruptTargetMutex;
Checkpointer *interruptTarget = nullptr;
/// Set when the training loop starts; a stop signal before it ends the
/// process at once.
std::atomic<bool> trainingStarted{false};
/// Whether the job takes interrupt snapshots (set on every rank).
std::atomic<bool> jobSnapshots{false};

/// The nice values of this process's other threads before the watcher
/// lowered their priority, to restore when the run ends.
std::vector<std::pair<pid_t, int>> lowered;

/// Gives the CPU to the watcher: once SIGTERM has come, the step in flight
/// is usually lost anyway (mpirun's SIGKILL follows in a second), while the
/// snapshot must reach the disk before it. On a loaded node the writer
/// otherwise gets a share like any compute thread's (measured: 1.1 s for
/// ResNet-18's 89 MiB under two ranks, 0.5 s alone). Raising a nice value
/// needs no privilege; every rank does it, so that the other ranks on the
/// node yield too.
void lowerOtherThreads() {
  pid_t self = pid_t(::syscall(SYS_gettid));
  DIR *tasks = ::opendir("/proc/self/task");
  if (!tasks)
    return;
  while (dirent *e = ::readdir(tasks)) {
    pid_t tid = pid_t(std::atoi(e->d_name));
    if (tid <= 0 || tid == self)
      continue;
    errno = 0;
    int nice = ::getpriority(PRIO_PROCESS, id_t(tid));
    if (errno == 0 && ::setpriority(PRIO_PROCESS, id_t(tid), 19) == 0)
      lowered.emplace_back(tid, nice);
  }
  ::closedir(tasks);
}

/// Undoes lowerOtherThreads where allowed: lowering a nice value needs
/// CAP_SYS_NICE or a matching RLIMIT_NICE. Where it is not, the threads
/// keep nice 19, which slows them only against other processes on the node
/// (the job's own threads were lowered alike) while the run stops.
void restoreOtherThreads() {
  for (const auto &[tid, nice] : lowered)
    ::setpriority(PRIO_PROCESS, id_t(tid), nice);
  lowered.clear();
}

const char *signalName(int signal) {
  return signal == SIGINT ? "SIGINT" : signal == SIGTERM ? "SIGTERM" : "signal";
}

/// The stop-signal watcher for the lifetime of a run (run_loop.h). Create
/// it before any other thread of the run exists.
class StopWatcher {
public:
  StopWatcher() {
    stopSignal.store(0);
    trainingStarted.store(false);
    if (::pipe2(wakeFds, O_CLOEXEC) != 0) {
      // Without the pipe the signals still stop the loop; only the
      // immediate snapshot write is lost.
      fmt::print(stderr, "kiln: warning: no stop-signal watcher (pipe: "
                         "{}); SIGTERM stops the run at the next step "
                         "boundary only\n",
                 std::strerror(errno));
      wakeFds[0] = wakeFds[1] = -1;
    } else {
      ::fcntl(wakeFds[1], F_SETFL, O_NONBLOCK);
    }
    sigset_t stops;
    sigemptyset(&stops);
    sigaddset(&stops, SIGINT);
    sigaddset(&stops, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stops, &oldMask);
    struct sigaction action = {};
    action.sa_handler = onStopSignal;
    action.sa_flags = SA_RESETHAND | SA_RESTART;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, &oldInt);
    sigaction(SIGTERM, &action, &oldTerm);
    if (wakeFds[0] >= 0)
      watcher = std::thread([stops] {
        // The one thread of the run that takes the signals.
        pthread_sigmask(SIG_UNBLOCK, &stops, nullptr);
        for (;;) {
          unsigned char byte = 0;
          ssize_t n = ::read(wakeFds[0], &byte, 1);
          if (n < 0 && errno == EINTR)
            continue;
          if (n <= 0 || byte == 0)
            return;
          // Before the loop nothing is lost by ending at once, while the
          // start-up may be blocked (in MPI_Init, on a file) with no step
          // boundary coming to notice the signal.
          if (!trainingStarted.load()) {
            fmt::print(stderr,
                       "kiln: {} during start-up: exiting (no step has run, "
                       "nothing to save)\n",
                       signalName(byte));
            std::fflush(nullptr);
            ::_exit(kExitInterrupted);
          }
          if (jobSnapshots.load())
            lowerOtherThreads();
          {
            std::lock_guard<std::mutex> lock(interruptTargetMutex);
            if (interruptTarget)
              interruptTarget->onInterrupt(byte);
          }
          // The loop may still reach its step boundary before SIGKILL and
          // write a newer checkpoint.
          restoreOtherThreads();
        }
      });
  }
  ~StopWatcher() {
    if (watcher.joinable()) {
      // The watcher may be handling a signal; it reads this 0 afterwards.
      unsigned char zero = 0;
      while (::write(wakeFds[1], &zero, 1) < 0 && errno == EAGAIN)
        std::this_thread::yield();
      watcher.join();
    }
    jobSnapshots.store(false);
    sigaction(SIGINT, &oldInt, nullptr);
    sigaction(SIGTERM, &oldTerm, nullptr);
    pthread_sigmask(SIG_SETMASK, &oldMask, nullptr);
    for (int &fd : wakeFds)
      if (fd >= 0) {
        ::close(fd);
        fd = -1;
      }
  }

private:
  struct sigaction oldInt, oldTerm;
  sigset_t oldMask;
  std::thread watcher;
};


/// Runs one phase of the run, turning an allocation failure (a batch too
/// large for the machine, say) into an error naming the phase, which `fail`
/// reports on every rank, instead of std::terminate.
Status guardMemory(const char *phase, const std::function<Status()> &run) {
  try {
    return run();
  } catch (const std::bad_alloc &) {
    return KILN_STATUS(kInvalidArgument,
                       fmt::format("out of memory during {} (a memory "
                                   "allocation failed: a smaller batch, or "
                                   "fewer --prefetch/--shuffle-buffer "
                                   "records, needs less)",
                                   phase));
  }
}

/// Prints `status` and ends this rank: under MPI the whole job must end, or
/// the other ranks would wait in a collective forever.
int fail(const Status &status, Comm *comm) {
  std::fflush(stdout);
  if (comm && comm->size() > 1) {
    fmt::print(stderr, "kiln: rank {}: error: {}\n", comm->rank(),
               status.message());
    comm->abort(kExitError);
  }
  fmt::print(stderr, "kiln: error: {}\n", status.message());
  return kExitError;
}

/// Rank 0, resuming: the global batch (batch x ranks) of the checkpoint's
/// run against this one's. A different one changes what a step averages
/// over at the same learning rate, which nothing else would say.
void warnIfGlobalBatchChanges(const LoadedCheckpoint &c, int64_t batch,
                              int worldSize) {
  auto ranks = [](int64_t n) {
    return fmt::format("{} rank{}", n, n == 1 ? "" : "s");
  };
  std::string now = fmt::format("this run has {} of batch {} (a global batch "
                                "of {})",
                                ranks(worldSize), batch, batch * worldSize);
  auto recorded = c.metadata.find("batch");
  int64_t written = 0;
  char *end = nullptr;
  if (recorded != c.metadata.end())
    written = std::strtoll(recorded->second.c_str(), &end, 10);
  if (recorded == c.metadata.end() || recorded->second.empty() ||
      *end != '\0' || written <= 0) {
    if (c.info.worldSize != worldSize)
      fmt::print(stderr,
                 "kiln: warning: {} was written by {} and does not record "
                 "its batch (an older runtime); {}: the global batch "
                 "changes unless the batch did, and the data order from "
                 "here on differs from an uninterrupted run\n",
                 c.path, ranks(c.info.worldSize), now);
    return;
  }
  if (written * c.info.worldSize == batch * worldSize &&
      c.info.worldSize == worldSize)
    return;
  fmt::print(stderr,
             "kiln: warning: {} was written by {} of batch {} (a global "
             "batch of {}); {}: {}the data order from here on differs from "
             "an uninterrupted run\n",
             c.path, ranks(c.info.worldSize), written,
             written * c.info.worldSize, now,
             written * c.info.worldSize != batch * worldSize
                 ? "each step from here on averages the gradient over "
                   "another number of examples at the same learning rate, "
                   "and "
                 : "");
}

} // namespace

int usageError(const char *program, const std::string &message) {
  fmt::print(stderr, "{}: {}\n(see {} --help)\n", program, message, program);
  return kExitUsage;
}

int runTraining(
    const RunOptions &options,
    const std::function<std::unique_ptr<TrainingPhases>(Comm &)> &create) {
  // Before MPI starts its threads: they must inherit the blocked signals.
  StopWatcher watcher;
  std::unique_ptr<Comm> comm;
  bool mpi = options.comm == CommBackend::Mpi ||
             (options.comm == CommBackend::Auto && launchedByMpirun());
  if (mpi) {
    MpiOptions mpiOptions;
    mpiOptions.timeoutSeconds = options.commTimeout;
    mpiOptions.algorithm = options.allreduce;
    mpiOptions.torusDims = options.torusDims;
    auto created = createMpiComm(mpiOptions);
    if (!created.isOk())
      return fail(created.status(), nullptr);
    comm = std::move(*created);
  } else {
    comm = createLocalComm();
  }
  if (!options.commTrace.empty()) {
    auto traced = createTracingComm(comm, options.commTrace);
    if (!traced.isOk())
      return fail(traced.status(), comm.get());
    comm = std::move(*traced);
  }

  int exitCode = kExitOk;
  {
    // The trainer stays alive until `fail` has aborted the job: under MPI
    // the communicator may still be reducing into its buffers.
    std::unique_ptr<TrainingPhases> trainer = create(*comm);
    Status status = guardMemory("start-up", [&] { return trainer->load(); });
    if (status.isOk()) {
      // Before the first collective that depends on what the ranks run.
      StatusOr<Agreement> agreement =
          checkRanksAgree(*comm, trainer->rankFields());
      if (!agreement.isOk()) {
        status = agreement.status();
      } else if (!agreement->agreed) {
        std::fflush(stdout);
        for (const std::string &message : agreement->messages)
          fmt::print(stderr, "kiln: rank {}: error: {}\n", comm->rank(),
                     message);
        std::fflush(stderr);
        comm->finalize();
        return kExitError;
      }
    }
    if (status.isOk())
      status = guardMemory("setup", [&] { return trainer->setup(); });
    trainingStarted.store(true);
    if (status.isOk())
      status = guardMemory("training", [&] { return trainer->train(exitCode); });
    if (status.isOk() && exitCode == kExitOk)
      status = guardMemory("the end of the run",
                           [&] { return trainer->finish(exitCode); });
    if (!status.isOk())
      return fail(status, comm.get());
  }
  comm->finalize();
  return exitCode;
}

StatusOr<Resumed> resumeOrBroadcast(const RunOptions &options, Comm &comm,
                                    const Manifest &manifest, uint8_t *arena,
                                    RunState &run) {
  Resumed resumed;
  int64_t header[3] = {0, 0, 0}; // found, step, seed
  if (!options.modelDir.empty() && comm.rank() == 0) {
    // Nothing writes yet: every temporary is a dead writer's.
    KILN_ASSIGN_OR_RETURN(std::vector<std::string> removed,
                          removeStaleTemporaries(options.modelDir));
    if (!removed.empty())
      fmt::print("kiln: removed {} temporar{} of interrupted checkpoint "
                 "writes: {}\n",
                 removed.size(), removed.size() == 1 ? "y" : "ies",
                 fmt::join(removed, ", "));
  }
  if (options.resume && comm.rank() == 0) {
    std::vector<std::string> warnings;
    auto loaded =
        loadNewestCheckpoint(options.modelDir, manifest, arena, warnings);
    for (const std::string &w : warnings)
      fmt::print(stderr, "kiln: warning: {}\n", w);
    KILN_RETURN_IF_ERROR(loaded.status());
    if (*loaded) {
      const LoadedCheckpoint &c = **loaded;
      header[0] = 1;
      header[1] = c.info.step;
      header[2] = static_cast<int64_t>(c.info.seed);
      resumed.info = c.info;
      warnIfGlobalBatchChanges(c, manifest.batch, comm.size());
      run.lastCheckpoint = c.path;
      run.lastCheckpointStep = c.info.step;
      if (options.seedSet && c.info.seed != options.seed)
        fmt::print(stderr,
                   "kiln: warning: --seed {} ignored: the checkpoint was "
                   "trained with seed {}, which fixes the data order\n",
                   options.seed, c.info.seed);
      fmt::print("kiln: resuming from {} (step {})\n", c.path, c.info.step);
    } else {
      fmt::print("kiln: --resume: no checkpoint in {}; starting fresh\n",
                 options.modelDir);
    }
  }
  if (!options.initFrom.empty() && !header[0] && comm.rank() == 0) {
    KILN_RETURN_IF_ERROR(
        loadInitialValues(options.initFrom, manifest, arena));
    fmt::print("kiln: initial values from {}\n", options.initFrom);
  } else if (!options.initFrom.empty() && header[0] && comm.rank() == 0) {
    fmt::print("kiln: --init-from {} not used: resuming from the checkpoint\n",
               options.initFrom);
  }
  if (comm.size() > 1) {
    KILN_RETURN_IF_ERROR(comm.broadcast(header, sizeof(header), 0));
    KILN_RETURN_IF_ERROR(comm.broadcast(
        arena, static_cast<size_t>(manifest.persistentBytes), 0));
    // The copies came along, but refilling them from the sources that did
    // keeps "copy == round(source)" a local fact on every rank.
    KILN_RETURN_IF_ERROR(refreshCopies(manifest, arena));
  }
  resumed.found = header[0] != 0;
  if (resumed.found) {
    run.startStep = header[1];
    run.seed = static_cast<uint64_t>(header[2]);
  }
  run.step = run.startStep;
  return resumed;
}

StatusOr<std::unique_ptr<InputSource>>
openTrainingInput(const RunOptions &options, const Function &train, Comm &comm,
                  RunState &run) {
  std::unique_ptr<InputSource> input;
  if (options.synthetic) {
    input = openSyntheticInput(train, comm.rank(), run.seed,
                               options.syntheticBatches);
  } else {
    KILN_ASSIGN_OR_RETURN(
        input, openDatasetInput(options, train, comm, run.seed, run.startStep));
  }
  run.stepsPerEpoch = input->stepsPerEpoch();
  run.dataSummary = input->describe();
  // Epochs become steps only here; a huge count must not wrap around.
  auto epochSteps = [&](const char *flag, double epochs) -> StatusOr<int64_t> {
    double steps = std::round(epochs * double(run.stepsPerEpoch));
    if (!(steps <= double(kMaxSteps)))
      return KILN_STATUS(
          kInvalidArgument,
          fmt::format("{} {}: {} steps per epoch make {:g} steps, more than "
                      "the {} a run can count",
                      flag, epochs, run.stepsPerEpoch, steps, kMaxSteps));
    return static_cast<int64_t>(steps);
  };
  if (options.warmupEpochs)
    KILN_RETURN_IF_ERROR(
        epochSteps("--warmup-epochs", *options.warmupEpochs).status());
  if (options.steps) {
    run.totalSteps = *options.steps;
  } else {
    KILN_ASSIGN_OR_RETURN(run.totalSteps,
                          epochSteps("--epochs", *options.epochs));
  }
  return input;
}

std::string describeTrainingData(const RunOptions &options,
                                 const RunState &run) {
  std::string resuming =
      run.startStep ? fmt::format(", resuming at step {}", run.startStep) : "";
  if (run.stepsPerEpoch)
    return fmt::format("kiln: data {}: {}; training to step {} "
                       "({:.2f} epochs){}\n",
                       options.dataDir, run.dataSummary, run.totalSteps,
                       double(run.totalSteps) / double(run.stepsPerEpoch),
                       resuming);
  return fmt::format("kiln: synthetic data ({} batch{}); training to step "
                     "{}{}\n",
                     options.syntheticBatches,
                     options.syntheticBatches == 1 ? "" : "es", run.totalSteps,
                     resuming);
}

StatusOr<StepOutcome> reduceStepOutcome(Comm &comm, double localLoss,
                                        RunState &run) {
  bool finite = std::isfinite(localLoss);
  double sums[3] = {finite ? localLoss : 0.0, finite ? 0.0 : 1.0,
                    stopSignal.load() ? 1.0 : 0.0};
  auto start = RunClock::now();
  KILN_RETURN_IF_ERROR(comm.allreduceSum(sums, 3));
  run.stepReductionSeconds +=
      std::chrono::duration<double>(RunClock::now() - start).count();
  StepOutcome outcome;
  outcome.nonFiniteRanks = sums[1];
  outcome.stop = sums[2] > 0;
  if (outcome.nonFiniteRanks == 0)
    run.lastLoss = sums[0] / comm.size();
  return outcome;
}

int reportNonFiniteLoss(const Comm &comm, const RunState &run,
                        const StepOutcome &outcome, const std::string &what) {
  if (comm.rank() == 0)
    fmt::print(
        stderr, "kiln: step {}: loss is {}{}; stopping (last checkpoint: {})\n",
        run.step, what,
        comm.size() > 1 ? fmt::format(" on {} of {} ranks",
                                      outcome.nonFiniteRanks, comm.size())
                        : "",
        run.lastCheckpoint.empty() ? "none" : run.lastCheckpoint);
  return kExitNonFiniteLoss;
}

int reportInterrupted(const Comm &comm, const RunState &run) {
  if (comm.rank() == 0)
    fmt::print(stderr,
               "kiln: step {}: interrupted; stopping (checkpoint: {})\n",
               run.step,
               run.lastCheckpoint.empty() ? "none (no --model-dir)"
                                          : run.lastCheckpoint);
  return kExitInterrupted;
}

std::optional<ProgressClock::Interval>
ProgressClock::lap(const RunOptions &options, const RunState &run,
                   double globalBatch) const {
  if (options.logEvery <= 0 ||
      (run.step % options.logEvery != 0 && run.step != run.totalSteps))
    return std::nullopt;
  double interval =
      std::chrono::duration<double>(Clock::now() - intervalStart).count();
  Interval result;
  result.imagesPerSecond =
      double(run.step - intervalFirst) * globalBatch / std::max(interval, 1e-9);
  result.elapsed = elapsed();
  result.eta = result.elapsed / double(run.step - run.startStep) *
               double(run.totalSteps - run.step);
  return result;
}

double ProgressClock::elapsed() const {
  return std::chrono::duration<double>(Clock::now() - loopStart).count();
}

namespace {
/// "0.1000" or "1.000e-05".
std::string formatLr(double lr) {
  return (lr >= 1e-3 && lr < 1e4) || lr == 0 ? fmt::format("{:.4f}", lr)
                                             : fmt::format("{:.3e}", lr);
}
} // namespace

Status reportProgress(const Comm &comm, const RunState &run, double lr,
                      const std::string &rates,
                      const ProgressClock::Interval &interval,
                      MetricsLog &metrics, std::vector<JsonField> extra) {
  say(comm, "step {}/{}{}  loss {:.4f}  lr {}  {}  ETA {}\n", run.step,
      run.totalSteps,
      run.stepsPerEpoch ? fmt::format("  epoch {:.2f}", run.epoch()) : "",
      run.lastLoss, formatLr(lr), rates, formatDuration(interval.eta));
  if (!metrics.isOpen())
    return Status::ok();
  std::vector<JsonField> row = {
      JsonField::text("kind", "train"),
      JsonField::integer("step", run.step),
      JsonField::number("epoch", run.epoch()),
      JsonField::number("loss", run.lastLoss),
      JsonField::number("lr", lr),
      JsonField::number("images_per_sec", interval.imagesPerSecond)};
  for (JsonField &field : extra)
    row.push_back(std::move(field));
  row.push_back(JsonField::number("elapsed_sec", interval.elapsed));
  return metrics.write(row);
}

bool checkpointDue(const RunOptions &options, const RunState &run) {
  return options.checkpointEvery > 0 && run.step % options.checkpointEvery == 0;
}

//===----------------------------------------------------------------------===//
// Checkpointer
//===----------------------------------------------------------------------===//

namespace {
using SteadyClock = std::chrono::steady_clock;

double secondsSince(SteadyClock::time_point start) {
  return std::chrono::duration<double>(SteadyClock::now() - start).count();
}
} // namespace

Checkpointer::Checkpointer(const RunOptions &options, Comm &comm,
                           const Manifest &manifest, const uint8_t *arena,
                           RunState &run, std::function<Status()> syncArena)
    : options_(options), comm_(comm), manifest_(manifest), arena_(arena),
      run_(run), syncArena_(std::move(syncArena)) {
  bool wanted = options.interruptSnapshot == InterruptSnapshot::On ||
                (options.interruptSnapshot == InterruptSnapshot::Auto &&
                 launchedByMpirun());
  snapshotting_ = wanted && comm.rank() == 0 && !options.modelDir.empty();
  jobSnapshots.store(wanted && !options.modelDir.empty());
  writtenStep_ = run.lastCheckpointStep;
  writtenPath_ = run.lastCheckpoint;
  if (!snapshotting_)
    return;
  for (const Variable &v : manifest.variables)
    if (!v.isCopy())
      snapshotBytes_ += v.tensor.byteSize();
  std::lock_guard<std::mutex> lock(interruptTargetMutex);
  interruptTarget = this;
}

Checkpointer::~Checkpointer() {
  std::lock_guard<std::mutex> lock(interruptTargetMutex);
  if (interruptTarget == this)
    interruptTarget = nullptr;
}

CheckpointInfo Checkpointer::infoAt(int64_t step) const {
  CheckpointInfo info;
  info.step = step;
  info.seed = run_.seed;
  info.stepsPerEpoch = run_.stepsPerEpoch;
  info.worldSize = comm_.size();
  info.data = options_.synthetic ? "synthetic" : options_.dataDir;
  return info;
}

Status Checkpointer::snapshot() {
  if (!snapshotting_)
    return Status::ok();
  auto start = SteadyClock::now();
  std::lock_guard<std::mutex> lock(mutex_);
  if (syncArena_)
    KILN_RETURN_IF_ERROR(syncArena_());
  // Kept as the checkpoint file's tensors: when the signal comes, nothing
  // is left to copy but the serialization.
  copyCheckpointTensors(manifest_, arena_, snapshot_);
  snapshotStep_ = run_.step;
  ++snapshots_;
  snapshotSeconds_ += secondsSince(start);
  return Status::ok();
}

StatusOr<std::optional<NonFiniteVariable>> Checkpointer::checkAndSave() {
  if (std::optional<NonFiniteVariable> bad =
          findNonFiniteVariable(manifest_, arena_))
    return bad;
  KILN_RETURN_IF_ERROR(saveCheckpoint(options_.modelDir, manifest_, arena_,
                                      infoAt(run_.step),
                                      options_.keepCheckpoints));
  writtenStep_ = run_.step;
  writtenPath_ = checkpointPath(options_.modelDir, run_.step);
  return std::optional<NonFiniteVariable>();
}

void Checkpointer::adoptInterruptCheckpoint() {
  std::lock_guard<std::mutex> lock(mutex_);
  adoptLocked();
}

void Checkpointer::adoptLocked() {
  if (writtenStep_ > run_.lastCheckpointStep) {
    run_.lastCheckpointStep = writtenStep_;
    run_.lastCheckpoint = writtenPath_;
  }
}

StatusOr<Checkpointer::Result> Checkpointer::write() {
  if (options_.modelDir.empty() || run_.step == run_.lastCheckpointStep)
    return Result::Written;
  // 1: rank 0 found a non-finite variable; every rank must stop with it.
  int64_t nonFinite = 0;
  if (comm_.rank() == 0) {
    std::lock_guard<std::mutex> lock(mutex_);
    adoptLocked();
    if (writtenStep_ < run_.step) {
      if (syncArena_)
        KILN_RETURN_IF_ERROR(syncArena_());
      KILN_ASSIGN_OR_RETURN(std::optional<NonFiniteVariable> bad,
                            checkAndSave());
      if (bad) {
        nonFinite = 1;
        fmt::print(stderr, "kiln: step {}: {}; stopping (last good "
                           "checkpoint: {})\n",
                   run_.step, describeNonFinite(bad->variable->name,
                                                bad->element),
                   run_.lastCheckpoint.empty() ? "none" : run_.lastCheckpoint);
      }
    }
  }
  if (comm_.size() > 1)
    KILN_RETURN_IF_ERROR(comm_.broadcast(&nonFinite, sizeof(nonFinite), 0));
  if (nonFinite)
    return Result::NonFinite;
  run_.lastCheckpointStep = run_.step;
  run_.lastCheckpoint = checkpointPath(options_.modelDir, run_.step);
  return Result::Written;
}

Status Checkpointer::rescue(const Status &failure) {
  if (failure.isOk() || comm_.rank() != 0 || options_.modelDir.empty())
    return failure;
  std::string what;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    adoptLocked();
    if (run_.step == run_.lastCheckpointStep) {
      what = "the checkpoint of step " + std::to_string(run_.step) +
             " is on disk: " + run_.lastCheckpoint;
    } else {
      Status synced = syncArena_ ? syncArena_() : Status::ok();
      StatusOr<std::optional<NonFiniteVariable>> saved =
          synced.isOk() ? checkAndSave()
                        : StatusOr<std::optional<NonFiniteVariable>>(synced);
      if (!saved.isOk())
        what = fmt::format("the checkpoint of step {} could not be written "
                           "either: {}",
                           run_.step, saved.status().message());
      else if (*saved)
        what = fmt::format("no checkpoint of step {}: {} (last good "
                           "checkpoint: {})",
                           run_.step,
                           describeNonFinite((*saved)->variable->name,
                                             (*saved)->element),
                           run_.lastCheckpoint.empty() ? "none"
                                                       : run_.lastCheckpoint);
      else
        what = "wrote the checkpoint of step " + std::to_string(run_.step) +
               ": " + writtenPath_;
    }
  }
  return Status(failure.code(), failure.message() + "; stopping (" + what +
                                    ")");
}

std::string Checkpointer::snapshotSummary() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!snapshotting_ || snapshots_ == 0)
    return "";
  return fmt::format("kiln: interrupt snapshot: {:.2f} MiB copied after each "
                     "step, {:.2f} ms per step on average ({} steps)\n",
                     double(snapshotBytes_) / double(1 << 20),
                     1e3 * snapshotSeconds_ / double(snapshots_), snapshots_);
}

void Checkpointer::onInterrupt(int signal) {
  auto start = SteadyClock::now();
  std::lock_guard<std::mutex> lock(mutex_);
  const char *name = signalName(signal);
  if (snapshotStep_ < 0) {
    fmt::print(stderr, "kiln: {}: no step has completed yet; stopping at the "
                       "end of the first\n",
               name);
    return;
  }
  if (snapshotStep_ <= writtenStep_) {
    fmt::print(stderr, "kiln: {}: the checkpoint of step {} is on disk "
                       "already; stopping at the end of the current step\n",
               name, writtenStep_);
    return;
  }
  if (std::optional<NonFiniteVariable> bad =
          findNonFiniteTensor(manifest_, snapshot_)) {
    fmt::print(stderr, "kiln: step {}: {}; not writing it on {} (last good "
                       "checkpoint: {})\n",
               snapshotStep_,
               describeNonFinite(bad->variable->name, bad->element), name,
               writtenPath_.empty() ? "none" : writtenPath_);
    return;
  }
  Status saved =
      writeCheckpointFile(options_.modelDir, manifest_, infoAt(snapshotStep_),
                          snapshot_, options_.keepCheckpoints);
  if (!saved.isOk()) {
    fmt::print(stderr, "kiln: error: {}: writing the checkpoint of step {} "
                       "from the interrupt snapshot failed: {}\n",
               name, snapshotStep_, saved.message());
    return;
  }
  writtenStep_ = snapshotStep_;
  writtenPath_ = checkpointPath(options_.modelDir, snapshotStep_);
  fmt::print(stderr, "kiln: {}: wrote {}, the last completed step's "
                     "checkpoint, in {:.2f} s; stopping at the end of the "
                     "current step\n",
             name, writtenPath_, secondsSince(start));
}

std::string describeCommunication(const std::vector<double> &exposed,
                                  const std::vector<double> &alone,
                                  size_t buckets, int64_t bytesPerStep) {
  std::vector<double> hidden;
  for (size_t r = 0; r < exposed.size(); ++r)
    // Waiting longer than the communication takes alone (for a slower rank)
    // hides nothing, and communication that takes no time (under a
    // microsecond: one rank) has nothing to hide.
    hidden.push_back(alone[r] > 1e-6
                         ? std::max(0.0, 1 - exposed[r] / alone[r])
                         : 0.0);
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  };
  auto spread = [&](const std::vector<double> &v, double scale,
                    const char *format) {
    auto f = [&](double x) {
      return fmt::format(fmt::runtime(format), scale * x);
    };
    return fmt::format("{} / {} / {}", f(*std::min_element(v.begin(), v.end())),
                       f(median(v)), f(*std::max_element(v.begin(), v.end())));
  };
  std::string bytes =
      bytesPerStep >= (1 << 20)
          ? fmt::format("{:.1f} MiB", double(bytesPerStep) / (1 << 20))
          : fmt::format("{:.1f} KiB", double(bytesPerStep) / 1024);
  return fmt::format(
      "kiln: gradient allreduce: {} bucket{} of {} per step take {:.3f} ms "
      "alone; the steps spent {} ms per step on communication (MPI calls "
      "and bucket waits, the per-step reduction): {}% hidden (min / median "
      "/ max over {} rank{})\n",
      buckets, buckets == 1 ? "" : "s", bytes, 1e3 * median(alone),
      spread(exposed, 1e3, "{:.3f}"), spread(hidden, 100, "{:.0f}"),
      exposed.size(), exposed.size() == 1 ? "" : "s");
}

Status reportCommunication(Comm &comm, const RunState &run) {
  BucketWaits waits = comm.bucketWaits();
  int64_t steps = run.step - run.startStep;
  // Collective decisions only: every rank reduced the same buckets.
  if (waits.reductions == 0 || steps <= 0)
    return Status::ok();
  constexpr int kRepeats = 5;
  KILN_ASSIGN_OR_RETURN(double bucketsAlone, comm.timeBucketsAlone(kRepeats));
  std::vector<double> reductions;
  for (int r = 0; r < kRepeats; ++r) {
    KILN_RETURN_IF_ERROR(comm.barrier());
    double sums[3] = {0, 0, 0};
    auto start = RunClock::now();
    KILN_RETURN_IF_ERROR(comm.allreduceSum(sums, 3));
    reductions.push_back(
        std::chrono::duration<double>(RunClock::now() - start).count());
  }
  std::sort(reductions.begin(), reductions.end());
  double alone = bucketsAlone + reductions[reductions.size() / 2];
  double exposed = (waits.blockedSeconds + waits.callSeconds +
                    run.stepReductionSeconds) /
                   double(steps);
  // Doubles travel as their bits.
  auto gather = [&](double x) -> StatusOr<std::vector<double>> {
    uint64_t bits;
    std::memcpy(&bits, &x, sizeof bits);
    KILN_ASSIGN_OR_RETURN(std::vector<uint64_t> all, comm.allgather(bits));
    std::vector<double> values(all.size());
    std::memcpy(values.data(), all.data(), all.size() * sizeof(double));
    return values;
  };
  KILN_ASSIGN_OR_RETURN(std::vector<double> allExposed, gather(exposed));
  KILN_ASSIGN_OR_RETURN(std::vector<double> allAlone, gather(alone));
  say(comm, "{}",
      describeCommunication(allExposed, allAlone,
                            size_t(waits.reductions / steps),
                            comm.bucketBytes()));
  return Status::ok();
}

Status verifyReplicas(const Manifest &manifest, const uint8_t *arena,
                      Comm &comm) {
  VariableKind parameters = VariableKind::Parameter;
  uint64_t hash = hashVariables(manifest, arena, &parameters);
  KILN_ASSIGN_OR_RETURN(std::vector<uint64_t> all, comm.allgather(hash));
  for (size_t r = 1; r < all.size(); ++r)
    if (all[r] != all[0])
      return KILN_STATUS(kInternal,
                         fmt::format("replicas diverged: the parameters of "
                                     "rank {} (hash {:016x}) differ from "
                                     "rank 0's ({:016x})",
                                     r, all[r], all[0]));
  say(comm, "kiln: parameters identical on all {} ranks (hash {:016x})\n",
      all.size(), all[0]);
  return Status::ok();
}

} // namespace kiln::rt::exec
