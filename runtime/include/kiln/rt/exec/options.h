//===- options.h - The training executable's command line -------*- C++ -*-===//
//
// Every flag of the executable (docs/runtime.md has the table). Parsing is
// strict: an unknown flag, a missing or malformed value, or a contradiction
// (--data with --synthetic) is an error naming the flag, and the executable
// exits with status 2.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RT_EXEC_OPTIONS_H
#define KILN_RT_EXEC_OPTIONS_H

#include "kiln/base/flags.h"
#include "kiln/base/status.h"
#include "kiln/rt/exec/comm.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kiln::rt::exec {

enum class Augment { RandomResizedCrop, PadCrop, None };
enum class CommBackend { Auto, Local, Mpi };
/// --interrupt-snapshot: whether rank 0 keeps a copy of the checkpointed
/// variables at every step boundary, so that SIGINT/SIGTERM can write a
/// checkpoint at once (run_loop.h). Auto: when started by mpirun.
enum class InterruptSnapshot { Auto, On, Off };

/// The largest step count a run may reach: checkpoint names hold the step
/// in 10 digits, so their names sort like their steps.
constexpr int64_t kMaxSteps = 9'999'999'999;

/// Under MPI the ranks compare their options at start-up: describeRunFlags
/// (agreement.h) decides for each field whether ranks must agree; a new
/// field needs a decision there.
struct RunOptions {
  bool help = false;

  // Input.
  std::string dataDir;
  bool synthetic = false;
  int64_t syntheticBatches = 1;
  Augment augment = Augment::RandomResizedCrop;
  bool augmentSet = false;
  int64_t pad = 4;
  bool flip = true;
  std::vector<float> mean, stddev; ///< empty: the defaults for the channels
  int64_t dataWorkers = 2;
  int64_t prefetch = 4;
  int64_t shuffleBuffer = 1024;
  bool skipBadRecords = false;
  /// Stored value of class 0: labels are stored - labelOffset (kiln-data and
  /// ImageNet shards are 1-based, TensorFlow's often 0-based).
  int64_t labelOffset = 1;

  // Length.
  std::optional<int64_t> steps;
  std::optional<double> epochs;
  uint64_t seed = 0;
  bool seedSet = false;

  // Compute.
  int64_t threads = 0; ///< 0: cores / ranks on this node
  bool blockedWeights = true;
  std::string convAlgorithm = "auto"; ///< auto | winograd | direct | library
  bool profile = false;
  bool tensorboard = true; ///< an event file beside metrics.jsonl

  // Output.
  std::string modelDir;
  bool convertChannels = false; ///< --convert-channels: gray <-> RGB
  bool upscale = false;         ///< --upscale: enlarge smaller images
  std::string initFrom; ///< --init-from: initial values instead of initializers
  int64_t logEvery = 10;
  int64_t checkpointEvery = 0; ///< 0: only at the end
  int64_t keepCheckpoints = 3;
  bool resume = false;
  InterruptSnapshot interruptSnapshot = InterruptSnapshot::Auto;

  // Evaluation.
  bool eval = false;
  bool evalEveryEpoch = false;

  // Prediction (predict.h): images to classify instead of training, and the
  // class names (one per line).
  std::vector<std::string> predict;
  std::string labels;

  // Learning-rate schedule: (slot or alias, value) in command-line order.
  std::vector<std::pair<std::string, double>> scheduleOverrides;
  std::optional<double> warmupEpochs;
  std::optional<double> decayEpochs;
  /// --synthetic: the steps per epoch that epoch lengths of the schedule
  /// resolve with (with --data the data gives them).
  std::optional<int64_t> stepsPerEpoch;

  // Distribution.
  CommBackend comm = CommBackend::Auto;
  double commTimeout = 300;
  AllreduceAlgorithm allreduce = AllreduceAlgorithm::Library;
  /// --torus-dims: the rank grid of --allreduce torus.
  std::vector<int> torusDims;
  /// --comm-trace: where each rank writes its steps' communication trace
  /// (comm_trace.h); "{rank}" in it becomes the rank.
  std::string commTrace;
  bool verifyReplicas = false;
};

/// Adds every flag of the training executable to `parser`, storing into
/// `o` (which must outlive the parser). The systolic executable replaces
/// some of them (runtime/simhost).
void addRunFlags(flags::Parser &parser, RunOptions &o);

/// The checks between flags once all are read (--data with --synthetic, a
/// length, ...); nothing to check with --help.
Status checkRunOptions(RunOptions &o);

/// Parses argv[1..argc). `--flag=value` and `--flag value` both work;
/// arguments after `--predict FILE` that are not flags are more files.
StatusOr<RunOptions> parseOptions(int argc, char **argv);

/// The --help text.
std::string usage(const char *program);

/// Cores of this process's affinity mask (at least 1).
int availableCores();

} // namespace kiln::rt::exec

#endif // KILN_RT_EXEC_OPTIONS_H
