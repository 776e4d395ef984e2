//===- run_loop.h - What both executables do around a step ------*- C++ -*-===//
//
// The x86 executable (trainer.cpp) and the systolic target's host
// (runtime/simhost) differ in how they take a step and where the variables
// live, but must agree on everything around it: the exit codes, the stop on
// SIGINT/SIGTERM, resuming, the step count, the schedule overrides, the
// progress lines and metrics rows, when checkpoints are written and the
// replica check. Tests and scripts read both executables' output the same
// way, so that part lives here, once, and the two cannot drift apart.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RT_EXEC_RUN_LOOP_H
#define KILN_RT_EXEC_RUN_LOOP_H

#include "kiln/base/status.h"
#include "kiln/rt/exec/agreement.h"
#include "kiln/rt/exec/checkpoint.h"
#include "kiln/rt/exec/clock.h"
#include "kiln/rt/exec/comm.h"
#include "kiln/rt/exec/input.h"
#include "kiln/rt/exec/manifest.h"
#include "kiln/rt/exec/metrics.h"
#include "kiln/rt/exec/options.h"
#include "kiln/rt/exec/variables.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kiln::rt::exec {

//===----------------------------------------------------------------------===//
// The run and its phases.
//===----------------------------------------------------------------------===//

/// The phases runTraining drives; each executable's trainer implements them.
class TrainingPhases {
public:
  virtual ~TrainingPhases() = default;
  /// What this rank can learn alone about the model it runs (reading the
  /// manifest or program), before any collective.
  virtual Status load() = 0;
  /// After load(): what the ranks must agree on (agreement.h), the model's
  /// fields and the run flags'. runTraining compares them with rank 0's
  /// before setup().
  virtual RankFields rankFields() const = 0;
  /// Everything before the first step. Collective: all ranks call it.
  virtual Status setup() = 0;
  /// The loop; sets `exitCode` to kExitNonFiniteLoss or kExitInterrupted
  /// when it stops early.
  virtual Status train(int &exitCode) = 0;
  /// Final checkpoint, replica check, summary; skipped after an early stop.
  /// Sets `exitCode` to kExitNonFiniteLoss if the final state is not finite.
  virtual Status finish(int &exitCode) = 0;
};

/// The executable after its command line: starts the stop-signal watcher
/// (below), creates the communicator, builds the trainer with `create` and
/// runs its phases. Returns the exit code (trainer.h); an error ends the
/// whole job under MPI.
///
/// Between load() and setup(), every rank's rankFields() are compared with
/// rank 0's (checkRanksAgree). If any rank differs, rank 0 prints a line
/// per differing rank and each differing rank its own ("kiln: rank 1:
/// error: rank 1 of 2 differs from rank 0: --lr 0.2 (rank 0: 0.1)"), and
/// every rank ends with kExitError without MPI_Abort: all know the verdict.
///
/// SIGINT and SIGTERM are blocked in the calling thread before anything
/// else starts, so that every thread the run creates (MPI's, OpenMP's, the
/// input pipeline's) inherits the mask and the kernel delivers them to one
/// watcher thread. Its handler only records the signal and wakes the
/// thread (a thread that existed before, in a test or a host program, may
/// run it too); the thread then asks the loop to stop at the next step
/// boundary and, with an interrupt snapshot (Checkpointer), writes the
/// checkpoint of the last completed step at once: mpirun sends SIGKILL one
/// second after SIGTERM by default, often before the step ends. A second
/// signal kills as usual (SA_RESETHAND).
int runTraining(
    const RunOptions &options,
    const std::function<std::unique_ptr<TrainingPhases>(Comm &)> &create);

/// Prints on rank 0 only, flushed at once so that progress reaches a log
/// as it happens.
template <typename... Args>
void say(const Comm &comm, fmt::format_string<Args...> format, Args &&...args) {
  if (comm.rank() != 0)
    return;
  fmt::print(format, std::forward<Args>(args)...);
  std::fflush(stdout);
}

/// Prints a command-line error as "<program>: <message>\n(see <program>
/// --help)" and returns kExitUsage.
int usageError(const char *program, const std::string &message);

//===----------------------------------------------------------------------===//
// Where a run stands.
//===----------------------------------------------------------------------===//

/// The counters both trainers keep around their own step.
struct RunState {
  uint64_t seed = 0;
  int64_t startStep = 0;  ///< steps already taken (resume)
  int64_t totalSteps = 0; ///< the step count to reach
  int64_t stepsPerEpoch = 0;
  std::string dataSummary; ///< InputSource::describe() of the training data
  int64_t step = 0; ///< steps taken so far
  /// Seconds the steps spent in the per-step reduction (reduceStepOutcome):
  /// communication no step can hide, and where a rank waits for slower ones.
  double stepReductionSeconds = 0;
  int64_t lastCheckpointStep = -1;
  std::string lastCheckpoint; ///< the newest good one, written or loaded
  double lastLoss = NAN;
  double trainSeconds = 0;

  /// The epoch `step` falls in; 0 without epochs (synthetic data).
  double epoch() const {
    return stepsPerEpoch ? double(step) / double(stepsPerEpoch) : 0.0;
  }
};

/// What resumeOrBroadcast found.
struct Resumed {
  bool found = false; ///< a checkpoint was loaded (known on every rank)
  std::optional<CheckpointInfo> info; ///< rank 0: what that checkpoint says
};

/// The variables every rank starts from. Rank 0 first removes the
/// temporaries of interrupted checkpoint writes from --model-dir (and says
/// so). With --resume, rank 0 loads the
/// newest checkpoint of --model-dir into `arena` (the model directory may be
/// on its disk only) and takes its step and seed, and warns when the
/// checkpoint's world size, and so the global batch, differs from this
/// run's (checkpoints of older runtimes may not record their batch: the
/// warning says so). Then every rank receives
/// rank 0's variables, so all replicas start identical even if
/// initialization differed somewhere; copies are refilled from their sources
/// after either. Sets run.seed, startStep and step.
StatusOr<Resumed> resumeOrBroadcast(const RunOptions &options, Comm &comm,
                                    const Manifest &manifest, uint8_t *arena,
                                    RunState &run);

/// The training batches: synthetic, or the dataset's from run.startStep.
/// Sets run.stepsPerEpoch and run.totalSteps (--steps, else --epochs; an
/// error if --epochs or --warmup-epochs come to more than kMaxSteps).
StatusOr<std::unique_ptr<InputSource>>
openTrainingInput(const RunOptions &options, const Function &train, Comm &comm,
                  RunState &run);

/// "kiln: data ...: N steps per epoch; training to step ..." or its
/// synthetic-data form, with the newline.
std::string describeTrainingData(const RunOptions &options,
                                 const RunState &run);

//===----------------------------------------------------------------------===//
// The loop.
//===----------------------------------------------------------------------===//

/// What all ranks learn after each step from one small reduction (which also
/// gives the mean loss): how many ranks saw a non-finite loss, and whether
/// any rank was asked to stop (SIGINT/SIGTERM while runTraining runs), so
/// that all ranks stop at the same step.
struct StepOutcome {
  double nonFiniteRanks = 0;
  bool stop = false;
};
/// Also sets run.lastLoss to the mean loss when it is finite on all ranks.
StatusOr<StepOutcome> reduceStepOutcome(Comm &comm, double localLoss,
                                        RunState &run);

/// Prints (on rank 0) that the loss became `what` ("NaN", "not finite")
/// and the checkpoint to go back to; returns kExitNonFiniteLoss.
int reportNonFiniteLoss(const Comm &comm, const RunState &run,
                        const StepOutcome &outcome, const std::string &what);

/// Prints (on rank 0) that the run stops on request and where its
/// checkpoint is; returns kExitInterrupted.
int reportInterrupted(const Comm &comm, const RunState &run);

/// The checkpoints of a run. Rank 0 writes them; every rank calls write()
/// at the same steps, since all must learn whether rank 0 found the state
/// diverged. Before anything is written, every floating-point variable a
/// checkpoint holds is checked: a NaN or Inf (a batch norm's running
/// variance can overflow while the loss still looks finite) is never saved
/// as a good checkpoint, but stops the run as divergence.
///
/// The interrupt snapshot (--interrupt-snapshot; rank 0): a copy of those
/// variables taken at every step boundary, which the stop-signal watcher
/// writes as the checkpoint of the last completed step as soon as SIGINT or
/// SIGTERM arrives, while the loop still runs its step. It costs a memcpy
/// of the parameters and optimizer state per step and as much memory
/// again, so it is on by default only under mpirun, whose SIGKILL follows
/// SIGTERM after one second. All writes are serialized, so a snapshot
/// write and the loop's own never race in the model directory.
class Checkpointer {
public:
  /// `syncArena` runs on rank 0 before `arena` is read, for variables that
  /// live elsewhere (the systolic target's simulator).
  Checkpointer(const RunOptions &options, Comm &comm, const Manifest &manifest,
               const uint8_t *arena, RunState &run,
               std::function<Status()> syncArena = nullptr);
  ~Checkpointer();
  Checkpointer(const Checkpointer &) = delete;
  Checkpointer &operator=(const Checkpointer &) = delete;

  /// Whether this rank keeps the interrupt snapshot.
  bool snapshotting() const { return snapshotting_; }

  /// After a step whose loss was finite on all ranks: refreshes the
  /// snapshot (rank 0, when snapshotting; otherwise nothing).
  Status snapshot();

  enum class Result { Written, NonFinite };
  /// Writes the checkpoint of `run.step` unless there is no --model-dir or
  /// it exists already. Collective. NonFinite: rank 0 found a non-finite
  /// variable, printed "kiln: step S: <variable> holds Inf (element i);
  /// stopping (last good checkpoint: ...)" and wrote nothing; the caller
  /// stops with kExitNonFiniteLoss.
  StatusOr<Result> write();

  /// Rank 0, when `failure` stops the run outside the collective path (a
  /// metrics line that could not be written): tries to save the current
  /// step anyway and returns `failure` saying what became of it.
  Status rescue(const Status &failure);

  /// Records in `run` the checkpoint the watcher wrote, if it is newer
  /// than run.lastCheckpoint (call before reporting a stop).
  void adoptInterruptCheckpoint();

  /// "kiln: interrupt snapshot: ..." with its cost per step, or "".
  std::string snapshotSummary() const;

  /// The stop-signal watcher's entry: writes the snapshot (rank 0).
  void onInterrupt(int signal);

private:
  /// Rank 0, under `mutex_`: the finiteness check and the write of the
  /// arena's variables as the checkpoint of run.step. Returns the
  /// non-finite variable instead of writing, if any.
  StatusOr<std::optional<NonFiniteVariable>> checkAndSave();
  CheckpointInfo infoAt(int64_t step) const;
  /// adoptInterruptCheckpoint under `mutex_`.
  void adoptLocked();

  const RunOptions &options_;
  Comm &comm_;
  const Manifest &manifest_;
  const uint8_t *arena_;
  RunState &run_;
  std::function<Status()> syncArena_;
  bool snapshotting_ = false;

  /// Serializes writes and the snapshot between the loop and the watcher.
  mutable std::mutex mutex_;
  /// The checkpoint of snapshotStep_, ready to write but for its metadata.
  safetensors::File snapshot_;
  int64_t snapshotBytes_ = 0;
  int64_t snapshotStep_ = -1;
  int64_t snapshots_ = 0;
  double snapshotSeconds_ = 0;
  /// The newest checkpoint on disk, whoever wrote it.
  int64_t writtenStep_ = -1;
  std::string writtenPath_;
};

/// The timing of the progress lines.
class ProgressClock {
public:
  using Clock = RunClock;

  explicit ProgressClock(int64_t firstStep)
      : loopStart(Clock::now()), intervalStart(loopStart),
        intervalFirst(firstStep) {}

  struct Interval {
    double imagesPerSecond; ///< since the previous line
    double elapsed;         ///< seconds since the loop started
    double eta;             ///< seconds to totalSteps at the average pace
  };
  /// The interval since the previous line, up to `run.step`, if that step
  /// gets a progress line: every --log-every steps and the last step.
  std::optional<Interval> lap(const RunOptions &options, const RunState &run,
                              double globalBatch) const;
  /// Starts the next interval after the line for `step` is out.
  void restart(int64_t step) {
    intervalStart = Clock::now();
    intervalFirst = step;
  }

  /// Seconds since the loop started.
  double elapsed() const;

private:
  Clock::time_point loopStart, intervalStart;
  int64_t intervalFirst;
};

/// The progress line "step S/T  epoch E  loss L  lr R  <rates>  ETA D" on
/// rank 0 and its "train" row in metrics.jsonl if that is open. `rates` is
/// the executable's images/s text; `extra` fields go before elapsed_sec.
Status reportProgress(const Comm &comm, const RunState &run, double lr,
                      const std::string &rates,
                      const ProgressClock::Interval &interval,
                      MetricsLog &metrics, std::vector<JsonField> extra = {});

/// Whether --checkpoint-every asks for a checkpoint at `run.step`.
bool checkpointDue(const RunOptions &options, const RunState &run);

/// After the loop (collective): how long this rank's steps spent on
/// communication (in the MPI calls that start and progress the bucket
/// reductions, blocked in bucket waits, and in the per-step reduction)
/// against what that communication takes alone (Comm::timeBucketsAlone plus
/// the per-step reduction timed the same way), gathered from every rank;
/// rank 0 prints min/median/max over the ranks (describeCommunication).
/// Nothing when the communicator reduced no bucket.
Status reportCommunication(Comm &comm, const RunState &run);

/// The line reportCommunication prints, from each rank's seconds per step
/// blocked (`exposed`) and alone (`alone`).
std::string describeCommunication(const std::vector<double> &exposed,
                                  const std::vector<double> &alone,
                                  size_t buckets, int64_t bytesPerStep);

/// --verify-replicas: hashes the parameters in `arena`, gathers the hashes
/// and fails if any rank's differ from rank 0's; prints the agreement.
Status verifyReplicas(const Manifest &manifest, const uint8_t *arena,
                      Comm &comm);

} // namespace kiln::rt::exec

#endif // KILN_RT_EXEC_RUN_LOOP_H
