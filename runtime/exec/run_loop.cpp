//===- run_loop.cpp - What both executables do around a step -------------===//

#include "kiln/rt/exec/run_loop.h"

#include "kiln/rt/exec/checkpoint.h"
#include "kiln/rt/exec/trainer.h"
#include "kiln/rt/exec/variables.h"

#include <fmt/format.h>

#include <signal.h>

#include <algorithm>
#include <cstdio>

namespace kiln::rt::exec {
namespace {

/// Set by SIGINT/SIGTERM; the loops stop at the next step boundary.
volatile sig_atomic_t stopSignal = 0;

void onStopSignal(int signal) { stopSignal = signal; }

/// Installs the stop handlers for the lifetime of a run; the first signal
/// asks for an orderly stop, a second one (SA_RESETHAND) kills as usual.
class StopSignals {
public:
  StopSignals() {
    stopSignal = 0;
    struct sigaction action = {};
    action.sa_handler = onStopSignal;
    action.sa_flags = SA_RESETHAND;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, &oldInt);
    sigaction(SIGTERM, &action, &oldTerm);
  }
  ~StopSignals() {
    sigaction(SIGINT, &oldInt, nullptr);
    sigaction(SIGTERM, &oldTerm, nullptr);
  }

private:
  struct sigaction oldInt, oldTerm;
};

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

} // namespace

int usageError(const char *program, const std::string &message) {
  fmt::print(stderr, "{}: {}\n(see {} --help)\n", program, message, program);
  return kExitUsage;
}

int runTraining(
    const RunOptions &options,
    const std::function<std::unique_ptr<TrainingPhases>(Comm &)> &create) {
  std::unique_ptr<Comm> comm;
  bool mpi = options.comm == CommBackend::Mpi ||
             (options.comm == CommBackend::Auto && launchedByMpirun());
  if (mpi) {
    MpiOptions mpiOptions;
    mpiOptions.timeoutSeconds = options.commTimeout;
    auto created = createMpiComm(mpiOptions);
    if (!created.isOk())
      return fail(created.status(), nullptr);
    comm = std::move(*created);
  } else {
    comm = createLocalComm();
  }

  int exitCode = kExitOk;
  {
    // The trainer stays alive until `fail` has aborted the job: under MPI
    // the communicator may still be reducing into its buffers.
    StopSignals signals;
    std::unique_ptr<TrainingPhases> trainer = create(*comm);
    Status status = trainer->setup();
    if (status.isOk())
      status = trainer->train(exitCode);
    if (status.isOk() && exitCode == kExitOk)
      status = trainer->finish();
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
  run.totalSteps = options.steps
                       ? *options.steps
                       : static_cast<int64_t>(std::llround(
                             *options.epochs * double(run.stepsPerEpoch)));
  return input;
}

std::string describeTrainingData(const RunOptions &options,
                                 const RunState &run) {
  std::string resuming =
      run.startStep ? fmt::format(", resuming at step {}", run.startStep) : "";
  if (run.stepsPerEpoch)
    return fmt::format("kiln: data {}: {} steps per epoch; training to step {} "
                       "({:.2f} epochs){}\n",
                       options.dataDir, run.stepsPerEpoch, run.totalSteps,
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
                    stopSignal ? 1.0 : 0.0};
  KILN_RETURN_IF_ERROR(comm.allreduceSum(sums, 3));
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

Status writeCheckpoint(const RunOptions &options, const Comm &comm,
                       const Manifest &manifest, const uint8_t *arena,
                       RunState &run,
                       const std::function<Status()> &syncArena) {
  if (options.modelDir.empty() || run.step == run.lastCheckpointStep)
    return Status::ok();
  if (comm.rank() == 0) {
    if (syncArena)
      KILN_RETURN_IF_ERROR(syncArena());
    CheckpointInfo info;
    info.step = run.step;
    info.seed = run.seed;
    info.stepsPerEpoch = run.stepsPerEpoch;
    info.worldSize = comm.size();
    info.data = options.synthetic ? "synthetic" : options.dataDir;
    KILN_RETURN_IF_ERROR(saveCheckpoint(options.modelDir, manifest, arena, info,
                                        options.keepCheckpoints));
  }
  run.lastCheckpointStep = run.step;
  run.lastCheckpoint = checkpointPath(options.modelDir, run.step);
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
