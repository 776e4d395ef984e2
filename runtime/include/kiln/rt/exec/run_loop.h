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

#include "kiln/rt/exec/checkpoint.h"
#include "kiln/rt/exec/comm.h"
#include "kiln/rt/exec/input.h"
#include "kiln/rt/exec/manifest.h"
#include "kiln/rt/exec/metrics.h"
#include "kiln/rt/exec/options.h"
#include "kiln/rt/status.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
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
  /// Everything before the first step. Collective: all ranks call it.
  virtual Status setup() = 0;
  /// The loop; sets `exitCode` to kExitNonFiniteLoss or kExitInterrupted
  /// when it stops early.
  virtual Status train(int &exitCode) = 0;
  /// Final checkpoint, replica check, summary; skipped after an early stop.
  virtual Status finish() = 0;
};

/// The executable after its command line: creates the communicator,
/// installs the stop handlers, builds the trainer with `create` and runs its
/// phases. Returns the exit code (trainer.h); an error ends the whole job
/// under MPI.
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
  int64_t step = 0; ///< steps taken so far
  int64_t lastCheckpointStep = -1;
  std::string lastCheckpoint;
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

/// The variables every rank starts from. With --resume, rank 0 loads the
/// newest checkpoint of --model-dir into `arena` (the model directory may be
/// on its disk only) and takes its step and seed. Then every rank receives
/// rank 0's variables, so all replicas start identical even if
/// initialization differed somewhere; copies are refilled from their sources
/// after either. Sets run.seed, startStep and step.
StatusOr<Resumed> resumeOrBroadcast(const RunOptions &options, Comm &comm,
                                    const Manifest &manifest, uint8_t *arena,
                                    RunState &run);

/// The training batches: synthetic, or the dataset's from run.startStep.
/// Sets run.stepsPerEpoch and run.totalSteps (--steps, else --epochs).
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

/// The timing of the progress lines.
class ProgressClock {
public:
  using Clock = std::chrono::steady_clock;

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

/// Writes the checkpoint of `run.step` (rank 0 writes, all ranks record it)
/// unless there is no --model-dir or it was written already. `syncArena`
/// runs on rank 0 before writing, for variables that live elsewhere.
Status writeCheckpoint(const RunOptions &options, const Comm &comm,
                       const Manifest &manifest, const uint8_t *arena,
                       RunState &run,
                       const std::function<Status()> &syncArena = nullptr);

/// --verify-replicas: hashes the parameters in `arena`, gathers the hashes
/// and fails if any rank's differ from rank 0's; prints the agreement.
Status verifyReplicas(const Manifest &manifest, const uint8_t *arena,
                      Comm &comm);

} // namespace kiln::rt::exec

#endif // KILN_RT_EXEC_RUN_LOOP_H
