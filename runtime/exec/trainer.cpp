//===- trainer.cpp - The training loop and the executable's main ----------===//

#include "kiln/rt/exec/trainer.h"

#include "kiln/rt/exec/arena.h"
#include "kiln/rt/exec/checkpoint.h"
#include "kiln/rt/exec/comm.h"
#include "kiln/rt/exec/context.h"
#include "kiln/rt/exec/eval.h"
#include "kiln/rt/exec/input.h"
#include "kiln/rt/exec/kernels.h"
#include "kiln/rt/exec/manifest.h"
#include "kiln/rt/exec/metrics.h"
#include "kiln/rt/exec/options.h"
#include "kiln/rt/exec/schedule.h"
#include "kiln/rt/exec/variables.h"
#include "kiln/rt/files.h"
#include "kiln/rt/pipeline.h"

#include <fmt/format.h>

#include <sched.h>
#include <signal.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace kiln::rt::exec {
namespace {

using Clock = std::chrono::steady_clock;

/// Set by SIGINT/SIGTERM; the loop stops at the next step boundary.
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

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// Cores this process may run on, shared among the ranks of this node.
int defaultThreads() {
  cpu_set_t set;
  int cores = 1;
  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    cores = CPU_COUNT(&set);
  int local = 1;
  if (const char *s = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE"))
    local = std::max(1, std::atoi(s));
  return std::max(1, cores / local);
}

std::string formatLr(double lr) {
  return (lr >= 1e-3 && lr < 1e4) || lr == 0 ? fmt::format("{:.4f}", lr)
                                             : fmt::format("{:.3e}", lr);
}

std::string formatBytes(double bytes) {
  if (bytes >= double(1ull << 30))
    return fmt::format("{:.2f} GiB", bytes / double(1ull << 30));
  if (bytes >= double(1ull << 20))
    return fmt::format("{:.1f} MiB", bytes / double(1ull << 20));
  return fmt::format("{:.1f} KiB", bytes / 1024.0);
}

class Trainer {
public:
  Trainer(const RunOptions &options, const ModelEntryPoints &model, Comm &comm)
      : options(options), model(model), comm(comm) {}

  /// Everything before the first step. Collective: all ranks call it.
  Status setup();
  /// The loop; sets `exitCode` to kExitNonFiniteLoss on NaN/Inf.
  Status train(int &exitCode);
  /// Evaluation over the validation data (or the synthetic batches).
  Status evaluate();
  /// Final checkpoint, replica check, summary.
  Status finish();

private:
  const RunOptions &options;
  const ModelEntryPoints &model;
  Comm &comm;

  Manifest manifest;
  std::unique_ptr<Arena> arena;
  std::unique_ptr<Kernels> kernels;
  kiln_rt_context_t context;
  kiln_rt_arena_ref_t arenaRef{};
  std::unique_ptr<InputSource> input;
  MetricsLog metrics;
  const Function *trainFn = nullptr;
  const Function *evalFn = nullptr;

  uint64_t seed = 0;
  int64_t startStep = 0;   ///< steps already taken (resume)
  int64_t totalSteps = 0;  ///< the step count to reach
  int64_t stepsPerEpoch = 0;
  int64_t step = 0;        ///< steps taken so far
  int64_t lastCheckpointStep = -1;
  int64_t checkpointStepsPerEpoch = -1; ///< of the resumed checkpoint
  std::string lastCheckpoint;
  double lastLoss = NAN;
  double trainSeconds = 0;
  bool haveEval = false;
  EvalTotals lastEval;

  bool isRoot() const { return comm.rank() == 0; }
  double globalBatch() const {
    return double(manifest.batch) * double(comm.size());
  }

  template <typename... Args>
  void say(fmt::format_string<Args...> format, Args &&...args) {
    if (!isRoot())
      return;
    fmt::print(format, std::forward<Args>(args)...);
    std::fflush(stdout);
  }

  Status resumeAndBroadcast();
  Status checkpoint();
  double readScalar(const TensorRef &t) const {
    return loadElement(arena->data() + t.offset, t.dtype, 0);
  }
};

Status Trainer::setup() {
  // The manifest: a broken one is a compiler bug or a stale object file.
  if (!model.manifest || !model.train)
    return KILN_STATUS(kInternal, "the model provides no manifest or train "
                                  "step");
  KILN_ASSIGN_OR_RETURN(manifest, parseManifest(model.manifest()));
  trainFn = manifest.findFunction("train");
  evalFn = manifest.findFunction("eval");
  if (options.eval && (!evalFn || !model.eval))
    return KILN_STATUS(kInvalidArgument,
                       "--eval: the model has no eval function (compile it "
                       "with one)");

  // oneDNN sizes its kernels for the thread count it sees at creation.
  int threads = options.threads ? static_cast<int>(options.threads)
                                : defaultThreads();
  KILN_RETURN_IF_ERROR(setComputeThreads(threads));

  KILN_ASSIGN_OR_RETURN(arena, Arena::allocate(manifest.arenaBytes));
  seed = options.seed;
  KILN_RETURN_IF_ERROR(initializeVariables(manifest, arena->data(), seed));
  KILN_RETURN_IF_ERROR(resumeAndBroadcast());

  KernelOptions kernelOptions;
  kernelOptions.blockedWeights = options.blockedWeights;
  kernelOptions.profile = options.profile;
  KILN_ASSIGN_OR_RETURN(kernels,
                        Kernels::create(manifest, arena->data(), kernelOptions));
  KILN_RETURN_IF_ERROR(comm.setBuckets(manifest.buckets, arena->data()));
  context.kernels = kernels.get();
  context.comm = &comm;
  arenaRef = arena->ref();

  if (options.synthetic) {
    input = openSyntheticInput(*trainFn, comm.rank(), seed,
                               options.syntheticBatches);
  } else {
    KILN_ASSIGN_OR_RETURN(
        input, openDatasetInput(options, *trainFn, comm, seed, startStep));
  }
  stepsPerEpoch = input->stepsPerEpoch();
  if (checkpointStepsPerEpoch >= 0 && checkpointStepsPerEpoch != stepsPerEpoch)
    fmt::print(stderr,
               "kiln: warning: the checkpoint was written with {} steps per "
               "epoch, this data gives {}: the data order from here on "
               "differs from an uninterrupted run\n",
               checkpointStepsPerEpoch, stepsPerEpoch);

  totalSteps = options.steps
                   ? *options.steps
                   : static_cast<int64_t>(
                         std::llround(*options.epochs * double(stepsPerEpoch)));

  // Schedule overrides go in after a checkpoint is loaded: the command line
  // wins over the schedule the checkpoint carries.
  auto overrides = options.scheduleOverrides;
  if (options.warmupEpochs)
    overrides.emplace_back(
        "warmup_steps",
        double(std::llround(*options.warmupEpochs * double(stepsPerEpoch))));
  KILN_RETURN_IF_ERROR(
      applyScheduleOverrides(manifest, arena->data(), overrides));

  if (!options.modelDir.empty() && isRoot())
    KILN_RETURN_IF_ERROR(metrics.open(options.modelDir));

  say("kiln: model {} (model ABI {}), batch {} x {} rank{} ({}), {} "
      "thread{}/rank, arena {}\n",
      manifest.model, manifest.abi, manifest.batch, comm.size(),
      comm.size() == 1 ? "" : "s", comm.backend(), threads,
      threads == 1 ? "" : "s", formatBytes(double(manifest.arenaBytes)));
  say("kiln: {} library calls, {} allreduce buckets, {} variables; schedule "
      "{}\n",
      manifest.calls.size(), manifest.buckets.size(),
      manifest.variables.size(), describeSchedule(manifest, arena->data()));
  if (stepsPerEpoch)
    say("kiln: data {}: {} steps per epoch; training to step {} ({:.2f} "
        "epochs){}\n",
        options.dataDir, stepsPerEpoch, totalSteps,
        double(totalSteps) / double(stepsPerEpoch),
        startStep ? fmt::format(", resuming at step {}", startStep) : "");
  else
    say("kiln: synthetic data ({} batch{}); training to step {}{}\n",
        options.syntheticBatches, options.syntheticBatches == 1 ? "" : "es",
        totalSteps,
        startStep ? fmt::format(", resuming at step {}", startStep) : "");
  return Status::ok();
}

Status Trainer::resumeAndBroadcast() {
  // Rank 0 reads the checkpoint (the model directory may be on its disk
  // only) and every rank receives the variables from it, so all replicas
  // start identical even if initialization differed somewhere.
  int64_t header[3] = {0, 0, 0}; // found, step, seed
  if (options.resume && isRoot()) {
    std::vector<std::string> warnings;
    auto loaded = loadNewestCheckpoint(options.modelDir, manifest,
                                       arena->data(), warnings);
    for (const std::string &w : warnings)
      fmt::print(stderr, "kiln: warning: {}\n", w);
    KILN_RETURN_IF_ERROR(loaded.status());
    if (*loaded) {
      const LoadedCheckpoint &c = **loaded;
      header[0] = 1;
      header[1] = c.info.step;
      header[2] = static_cast<int64_t>(c.info.seed);
      lastCheckpoint = c.path;
      lastCheckpointStep = c.info.step;
      checkpointStepsPerEpoch = c.info.stepsPerEpoch;
      if (options.seedSet && c.info.seed != options.seed)
        fmt::print(stderr,
                   "kiln: warning: --seed {} ignored: the checkpoint was "
                   "trained with seed {}, which fixes the data order\n",
                   options.seed, c.info.seed);
      if (c.info.worldSize != comm.size())
        fmt::print(stderr,
                   "kiln: warning: the checkpoint was written by {} ranks, "
                   "this run has {}: the data order from here on differs "
                   "from an uninterrupted run\n",
                   c.info.worldSize, comm.size());
      fmt::print("kiln: resuming from {} (step {})\n", c.path, c.info.step);
    } else {
      fmt::print("kiln: --resume: no checkpoint in {}; starting fresh\n",
                 options.modelDir);
    }
  }
  if (comm.size() > 1) {
    KILN_RETURN_IF_ERROR(comm.broadcast(header, sizeof(header), 0));
    KILN_RETURN_IF_ERROR(comm.broadcast(
        arena->data(), static_cast<size_t>(manifest.persistentBytes), 0));
  }
  if (header[0]) {
    startStep = header[1];
    seed = static_cast<uint64_t>(header[2]);
  }
  step = startStep;
  return Status::ok();
}

Status Trainer::checkpoint() {
  if (options.modelDir.empty() || step == lastCheckpointStep)
    return Status::ok();
  if (isRoot()) {
    CheckpointInfo info;
    info.step = step;
    info.seed = seed;
    info.stepsPerEpoch = stepsPerEpoch;
    info.worldSize = comm.size();
    info.data = options.synthetic ? "synthetic" : options.dataDir;
    KILN_RETURN_IF_ERROR(saveCheckpoint(options.modelDir, manifest,
                                        arena->data(), info,
                                        options.keepCheckpoints));
  }
  lastCheckpointStep = step;
  lastCheckpoint = checkpointPath(options.modelDir, step);
  return Status::ok();
}

Status Trainer::train(int &exitCode) {
  const TensorRef &stepSlot = *trainFn->input("step");
  const TensorRef &lossSlot = *trainFn->output("loss");
  const TensorRef &lrSlot = *trainFn->output("learning_rate");
  auto loopStart = Clock::now();
  auto intervalStart = loopStart;
  int64_t intervalFirst = step;

  while (step < totalSteps) {
    KILN_RETURN_IF_ERROR(input->fill(step, arena->data()));
    storeElement(arena->data() + stepSlot.offset, DType::I64, 0,
                 double(step));
    model.train(&context, &arenaRef);
    ++step;

    // One small reduction per step: the loss every rank reports, whether
    // any rank's loss is not finite and whether any rank was asked to stop,
    // so that all ranks stop at the same step.
    double local = readScalar(lossSlot);
    double sums[3] = {std::isfinite(local) ? local : 0.0,
                      std::isfinite(local) ? 0.0 : 1.0,
                      stopSignal ? 1.0 : 0.0};
    bool nan = std::isnan(local);
    KILN_RETURN_IF_ERROR(comm.allreduceSum(sums, 3));
    if (sums[1] > 0) {
      double nans = nan ? 1 : 0;
      KILN_RETURN_IF_ERROR(comm.allreduceSum(&nans, 1));
      if (isRoot())
        fmt::print(stderr,
                   "kiln: step {}: loss is {}{}; stopping (last checkpoint: "
                   "{})\n",
                   step, nans > 0 ? "NaN" : "Inf",
                   comm.size() > 1
                       ? fmt::format(" on {} of {} ranks", sums[1], comm.size())
                       : "",
                   lastCheckpoint.empty() ? "none" : lastCheckpoint);
      exitCode = kExitNonFiniteLoss;
      return Status::ok();
    }
    if (sums[2] > 0) {
      lastLoss = sums[0] / comm.size();
      KILN_RETURN_IF_ERROR(checkpoint());
      if (isRoot())
        fmt::print(stderr,
                   "kiln: step {}: interrupted; stopping (checkpoint: {})\n",
                   step, lastCheckpoint.empty() ? "none (no --model-dir)"
                                                : lastCheckpoint);
      exitCode = kExitInterrupted;
      return Status::ok();
    }
    lastLoss = sums[0] / comm.size();

    bool last = step == totalSteps;
    if (options.logEvery > 0 && (step % options.logEvery == 0 || last)) {
      double interval = secondsSince(intervalStart);
      double rate = double(step - intervalFirst) * globalBatch() /
                    std::max(interval, 1e-9);
      double elapsed = secondsSince(loopStart);
      double eta = elapsed / double(step - startStep) *
                   double(totalSteps - step);
      double lr = readScalar(lrSlot);
      std::string epoch =
          stepsPerEpoch
              ? fmt::format("  epoch {:.2f}", double(step) / double(stepsPerEpoch))
              : "";
      say("step {}/{}{}  loss {:.4f}  lr {}  {:.1f} img/s  ETA {}\n", step,
          totalSteps, epoch, lastLoss, formatLr(lr), rate,
          formatDuration(eta));
      if (metrics.isOpen())
        KILN_RETURN_IF_ERROR(metrics.write(
            {JsonField::text("kind", "train"), JsonField::integer("step", step),
             JsonField::number("epoch", stepsPerEpoch ? double(step) /
                                                            double(stepsPerEpoch)
                                                      : 0.0),
             JsonField::number("loss", lastLoss), JsonField::number("lr", lr),
             JsonField::number("images_per_sec", rate),
             JsonField::number("elapsed_sec", elapsed)}));
      intervalStart = Clock::now();
      intervalFirst = step;
    }
    if (options.checkpointEvery > 0 && step % options.checkpointEvery == 0)
      KILN_RETURN_IF_ERROR(checkpoint());
    if (options.evalEveryEpoch && stepsPerEpoch && step % stepsPerEpoch == 0 &&
        !last)
      KILN_RETURN_IF_ERROR(evaluate());
  }
  trainSeconds = secondsSince(loopStart);
  return Status::ok();
}

Status Trainer::evaluate() {
  if (!evalFn || !model.eval)
    return KILN_STATUS(kInvalidArgument, "the model has no eval function");
  EvalTotals totals;
  auto start = Clock::now();
  const TensorRef &labels = *evalFn->input("labels");
  if (options.synthetic) {
    auto source = openSyntheticInput(*evalFn, comm.rank(), seed,
                                     options.syntheticBatches);
    for (int64_t b = 0; b < options.syntheticBatches; ++b) {
      KILN_RETURN_IF_ERROR(source->fill(b, arena->data()));
      model.eval(&context, &arenaRef);
      scoreBatch(*evalFn, arena->data(), manifest.batch, totals);
    }
  } else {
    KILN_ASSIGN_OR_RETURN(
        kiln_rt_dataset_config_t config,
        datasetConfig(options, *evalFn->input("images"), "validation", comm,
                      seed));
    auto files = listShards(options.dataDir, "validation");
    KILN_RETURN_IF_ERROR(files.status());
    // Ranks beyond the shard count have nothing to evaluate but still join
    // the reduction below.
    if (static_cast<size_t>(comm.rank()) < files->size()) {
      KILN_ASSIGN_OR_RETURN(std::unique_ptr<Dataset> dataset,
                            Dataset::open(config));
      const TensorRef &images = *evalFn->input("images");
      for (;;) {
        kiln_rt_batch_t batch;
        KILN_RETURN_IF_ERROR(dataset->nextBatch(batch));
        if (batch.size == 0)
          break;
        std::memcpy(arena->data() + images.offset, batch.images,
                    batch.image_bytes);
        auto *dst = reinterpret_cast<int32_t *>(arena->data() + labels.offset);
        // Padding examples of a partial batch carry label -1; the model
        // gets a valid class for them and scoring ignores them.
        for (int64_t i = 0; i < manifest.batch; ++i)
          dst[i] = i < int64_t(batch.size) ? batch.labels[i] : 0;
        model.eval(&context, &arenaRef);
        scoreBatch(*evalFn, arena->data(), batch.size, totals);
      }
    }
  }
  double sums[4] = {totals.examples, totals.top1, totals.top5, totals.lossSum};
  KILN_RETURN_IF_ERROR(comm.allreduceSum(sums, 4));
  if (sums[0] == 0)
    return KILN_STATUS(kNotFound, "evaluation found no validation examples");
  lastEval = {sums[0], sums[1] / sums[0], sums[2] / sums[0], sums[3] / sums[0]};
  haveEval = true;
  double epoch = stepsPerEpoch ? double(step) / double(stepsPerEpoch) : 0;
  say("eval at step {}{}: top-1 {:.2f}%  top-5 {:.2f}%  loss {:.4f}  ({} "
      "examples, {})\n",
      step, stepsPerEpoch ? fmt::format(" (epoch {:.2f})", epoch) : "",
      100 * lastEval.top1, 100 * lastEval.top5, lastEval.lossSum,
      static_cast<long long>(sums[0]), formatDuration(secondsSince(start)));
  if (metrics.isOpen())
    KILN_RETURN_IF_ERROR(metrics.write(
        {JsonField::text("kind", "eval"), JsonField::integer("step", step),
         JsonField::number("epoch", epoch),
         JsonField::number("top1", lastEval.top1),
         JsonField::number("top5", lastEval.top5),
         JsonField::number("loss", lastEval.lossSum),
         JsonField::integer("examples", static_cast<long long>(sums[0]))}));
  return Status::ok();
}

Status Trainer::finish() {
  if (step > startStep || lastCheckpointStep < 0)
    KILN_RETURN_IF_ERROR(checkpoint());
  if (options.eval)
    KILN_RETURN_IF_ERROR(evaluate());

  if (options.verifyReplicas) {
    VariableKind parameters = VariableKind::Parameter;
    uint64_t hash = hashVariables(manifest, arena->data(), &parameters);
    KILN_ASSIGN_OR_RETURN(std::vector<uint64_t> all, comm.allgather(hash));
    for (size_t r = 1; r < all.size(); ++r)
      if (all[r] != all[0])
        return KILN_STATUS(kInternal,
                           fmt::format("replicas diverged: the parameters of "
                                       "rank {} (hash {:016x}) differ from "
                                       "rank 0's ({:016x})",
                                       r, all[r], all[0]));
    say("kiln: parameters identical on all {} ranks (hash {:016x})\n",
        all.size(), all[0]);
  }

  int64_t taken = step - startStep;
  double rate = trainSeconds > 0 ? double(taken) * globalBatch() / trainSeconds
                                 : 0;
  std::string wait =
      input && input->waitSeconds() > 0.05 * trainSeconds && trainSeconds > 0
          ? fmt::format(" ({:.0f}% of it waiting for data)",
                        100 * input->waitSeconds() / trainSeconds)
          : "";
  say("kiln: done: {} steps in {}{}, {:.1f} img/s{}{}{}\n", taken,
      formatDuration(trainSeconds), wait, rate,
      taken ? fmt::format(", final loss {:.4f}", lastLoss) : "",
      haveEval ? fmt::format(", top-1 {:.2f}%", 100 * lastEval.top1) : "",
      lastCheckpoint.empty() ? "" : "; checkpoint " + lastCheckpoint);
  OverlapStats overlap = comm.overlapStats();
  if (overlap.reductions > 0 && overlap.inFlightSeconds > 0)
    say("kiln: gradient allreduce: {} reductions, {:.1f} ms in flight per "
        "step, {:.1f} ms exposed: {:.0f}% hidden behind the backward pass\n",
        overlap.reductions, 1000 * overlap.inFlightSeconds / double(taken),
        1000 * overlap.exposedSeconds / double(taken),
        100 * (1 - overlap.exposedSeconds / overlap.inFlightSeconds));
  if (metrics.isOpen()) {
    std::vector<JsonField> fields = {
        JsonField::text("kind", "summary"), JsonField::integer("steps", taken),
        JsonField::integer("step", step),
        JsonField::number("seconds", trainSeconds),
        JsonField::number("images_per_sec", rate),
        JsonField::number("final_loss", lastLoss),
        JsonField::text("checkpoint", lastCheckpoint)};
    if (haveEval) {
      fields.push_back(JsonField::number("top1", lastEval.top1));
      fields.push_back(JsonField::number("top5", lastEval.top5));
    }
    KILN_RETURN_IF_ERROR(metrics.write(fields));
  }
  if (options.profile && isRoot())
    fmt::print("kiln: library calls (rank 0):\n{}", kernels->profileReport());
  std::fflush(stdout);
  return Status::ok();
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

} // namespace

int runMain(int argc, char **argv, const ModelEntryPoints &model) {
  const char *program = argc > 0 ? argv[0] : "kiln-train";
  auto parsed = parseOptions(argc, argv);
  if (!parsed.isOk()) {
    fmt::print(stderr, "{}: {}\n(see {} --help)\n", program,
               parsed.status().message(), program);
    return kExitUsage;
  }
  const RunOptions &options = *parsed;
  if (options.help) {
    fmt::print("{}", usage(program));
    return kExitOk;
  }

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
    StopSignals signals;
    Trainer trainer(options, model, *comm);
    Status status = trainer.setup();
    if (status.isOk())
      status = trainer.train(exitCode);
    if (status.isOk() && exitCode == kExitOk)
      status = trainer.finish();
    if (!status.isOk())
      return fail(status, comm.get());
  }
  comm->finalize();
  return exitCode;
}

} // namespace kiln::rt::exec
