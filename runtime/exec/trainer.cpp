//===- trainer.cpp - The training loop and the executable's main ----------===//

#include "kiln/rt/exec/trainer.h"

#include "kiln/base/json.h"
#include "kiln/rt/exec/agreement.h"
#include "kiln/rt/exec/arena.h"
#include "kiln/rt/exec/clock.h"
#include "kiln/rt/exec/comm.h"
#include "kiln/rt/exec/context.h"
#include "kiln/rt/exec/cpu_check.h"
#include "kiln/rt/exec/eval.h"
#include "kiln/rt/exec/input.h"
#include "kiln/rt/exec/kernels.h"
#include "kiln/rt/exec/manifest.h"
#include "kiln/rt/exec/metrics.h"
#include "kiln/rt/exec/options.h"
#include "kiln/rt/exec/predict.h"
#include "kiln/rt/exec/profile.h"
#include "kiln/rt/exec/run_loop.h"
#include "kiln/rt/exec/schedule.h"
#include "kiln/rt/exec/variables.h"
#include "kiln/rt/files.h"
#include "kiln/rt/pipeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace kiln::rt::exec {
namespace {

using Clock = RunClock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// Cores this process may run on, shared among the ranks of this node.
int defaultThreads() {
#ifdef KILN_SMPI
  return 1; // see setup()
#else
  int cores = availableCores();
  int local = 1;
  if (const char *s = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE"))
    local = std::max(1, std::atoi(s));
  return std::max(1, cores / local);
#endif
}

std::string formatBytes(double bytes) {
  if (bytes >= double(1ull << 30))
    return fmt::format("{:.2f} GiB", bytes / double(1ull << 30));
  if (bytes >= double(1ull << 20))
    return fmt::format("{:.1f} MiB", bytes / double(1ull << 20));
  return fmt::format("{:.1f} KiB", bytes / 1024.0);
}

class Trainer : public TrainingPhases {
public:
  Trainer(const RunOptions &options, const ModelEntryPoints &model, Comm &comm)
      : options(options), model(model), comm(comm) {}

  /// The manifest; nothing collective.
  Status load() override;
  /// The model's fields, the code's digest and the run flags.
  RankFields rankFields() const override;
  /// Everything before the first step. Collective: all ranks call it.
  Status setup() override;
  /// The loop; sets `exitCode` to kExitNonFiniteLoss on NaN/Inf.
  Status train(int &exitCode) override;
  /// Evaluation over the validation data (or the synthetic batches).
  Status evaluate();
  /// Final checkpoint, replica check, summary.
  Status finish(int &exitCode) override;

private:
  const RunOptions &options;
  const ModelEntryPoints &model;
  Comm &comm;

  Manifest manifest;
  /// The bytes of kiln_model_manifest() (the object keeps them).
  std::string_view manifestData;
  std::unique_ptr<Arena> arena;
  std::unique_ptr<Kernels> kernels;
  /// --profile: time per call site of generated code, and in the step,
  /// from the end of the warm-up step on.
  std::unique_ptr<SiteProfile> sites;
  StepTimes profiled;
  Clock::time_point profileStart;
  kiln_rt_context_t context;
  kiln_rt_arena_ref_t arenaRef{};
  std::unique_ptr<InputSource> input;
  MetricsLog metrics;
  const Function *trainFn = nullptr;
  const Function *evalFn = nullptr;

  RunState run;
  std::unique_ptr<Checkpointer> checkpoints;
  int64_t checkpointStepsPerEpoch = -1; ///< of the resumed checkpoint
  bool haveEval = false;
  EvalTotals lastEval;

  bool isRoot() const { return comm.rank() == 0; }
  double globalBatch() const {
    return double(manifest.batch) * double(comm.size());
  }

  Status resumeAndBroadcast();
  /// The checkpoint of run.step (collective); false if the run must stop
  /// for divergence (`exitCode` set).
  StatusOr<bool> checkpoint(int &exitCode);
  /// A metrics row; a failure stops the run after a checkpoint attempt.
  Status writeMetrics(const std::vector<JsonField> &row);
  /// One train step, timed with --profile.
  void trainStep();
  /// --profile: restarts the count after the first step of several.
  void endWarmUp();
  Status reportProfile();
  double readScalar(const TensorRef &t) const {
    return loadElement(arena->data() + t.offset, t.dtype, 0);
  }
};

Status Trainer::load() {
  // The manifest: a broken one is a compiler bug or a stale object file.
  if (!model.manifest || !model.train)
    return KILN_STATUS(kInternal, "the model provides no manifest or train "
                                  "step");
  size_t size = 0;
  const uint8_t *data = model.manifest(&size);
  manifestData = manifestBytes(data, size);
  KILN_ASSIGN_OR_RETURN(manifest, parseManifest(manifestData));
  return Status::ok();
}

RankFields Trainer::rankFields() const {
  RankFields fields = describeModel(manifest, manifestData);
  // Before the backstops: the CPU the code was generated for.
  std::string target = "x86";
  if (model.target) {
    json::Value root;
    const json::Value *cpu = nullptr;
    if (json::parse(model.target(), root).isOk())
      cpu = root.member("cpu");
    target += " " + (cpu && cpu->kind == json::Value::Kind::String
                         ? cpu->text
                         : std::string(model.target()));
  }
  auto firstBackstop =
      std::find_if(fields.begin(), fields.end(),
                   [](const RankField &f) { return f.backstop; });
  fields.insert(firstBackstop,
                {"target", model.target ? model.target() : "x86", target,
                 false});
  uint64_t code = executableCodeDigest();
  fields.push_back({"compiled code", fmt::format("{:016x}", code),
                    fmt::format("digest {:016x}", code), true});
  RankFields flags = describeRunFlags(options);
  fields.insert(fields.end(), flags.begin(), flags.end());
  return fields;
}

Status Trainer::setup() {
  // After the ranks agreed on the model: a rank whose CPU cannot run the
  // code it was built with says so on its own.
  if (model.target)
    KILN_RETURN_IF_ERROR(checkTargetCpu(model.target()));
  trainFn = manifest.findFunction("train");
  evalFn = manifest.findFunction("eval");
  if (options.eval && (!evalFn || !model.eval))
    return KILN_STATUS(kInvalidArgument,
                       "--eval: the model has no eval function (compile it "
                       "with one)");

  // oneDNN sizes its kernels for the thread count it sees at creation.
#ifdef KILN_SMPI
  // SMPI times a simulated rank's compute by the CPU time of the one thread
  // that runs the ranks: a pool's other threads would compute untimed
  // (docs/scaling.md).
  if (options.threads > 1)
    return KILN_STATUS(kInvalidArgument,
                       fmt::format("--threads {}: an executable built for "
                                   "SMPI (kilnc --smpi) computes on 1 thread "
                                   "per rank, which SMPI times",
                                   options.threads));
#endif
  int threads = options.threads ? static_cast<int>(options.threads)
                                : defaultThreads();
  KILN_RETURN_IF_ERROR(setComputeThreads(threads));

  KILN_ASSIGN_OR_RETURN(arena, Arena::allocate(manifest.arenaBytes));
  run.seed = options.seed;
  KILN_RETURN_IF_ERROR(initializeVariables(manifest, arena->data(), run.seed));
  KILN_RETURN_IF_ERROR(resumeAndBroadcast());

  KernelOptions kernelOptions;
  kernelOptions.blockedWeights = options.blockedWeights;
  // parseOptions accepted the name.
  kernelOptions.convAlgorithm =
      parseConvAlgorithm(options.convAlgorithm).value_or(ConvAlgorithm::Auto);
  kernelOptions.profile = options.profile;
  KILN_ASSIGN_OR_RETURN(kernels,
                        Kernels::create(manifest, arena->data(), kernelOptions));
  KILN_RETURN_IF_ERROR(comm.setBuckets(manifest.buckets, arena->data()));
  context.kernels = kernels.get();
  context.comm = &comm;
  if (options.profile) {
    KILN_ASSIGN_OR_RETURN(sites, SiteProfile::create(manifestData));
    context.sites = sites.get();
  }
  arenaRef = arena->ref();

  KILN_ASSIGN_OR_RETURN(input, openTrainingInput(options, *trainFn, comm, run));
  if (checkpointStepsPerEpoch >= 0 &&
      checkpointStepsPerEpoch != run.stepsPerEpoch)
    fmt::print(stderr,
               "kiln: warning: the checkpoint was written with {} steps per "
               "epoch, this data gives {}: the data order from here on "
               "differs from an uninterrupted run\n",
               checkpointStepsPerEpoch, run.stepsPerEpoch);

  KILN_ASSIGN_OR_RETURN(
      ScheduleSources scheduleSources,
      applySchedule(manifest, arena->data(), options, run, comm));
  KILN_RETURN_IF_ERROR(checkScheduleAgrees(manifest, arena->data(), comm));

  if (!options.modelDir.empty() && isRoot())
    KILN_RETURN_IF_ERROR(metrics.open(options.modelDir, options.tensorboard));
  checkpoints = std::make_unique<Checkpointer>(options, comm, manifest,
                                               arena->data(), run);

  say(comm,
      "kiln: model {} (model ABI {}), batch {} x {} rank{} ({}), {} "
      "thread{}/rank, arena {}\n",
      manifest.model, manifest.abi, manifest.batch, comm.size(),
      comm.size() == 1 ? "" : "s", comm.backend(), threads,
      threads == 1 ? "" : "s", formatBytes(double(manifest.arenaBytes)));
  say(comm,
      "kiln: {} library calls, {} allreduce buckets, {} variables; schedule "
      "{}\n",
      manifest.calls.size(), manifest.buckets.size(), manifest.variables.size(),
      describeSchedule(manifest, arena->data(), scheduleSources));
  say(comm, "{}", describeTrainingData(options, run));
  return Status::ok();
}

Status Trainer::resumeAndBroadcast() {
  KILN_ASSIGN_OR_RETURN(
      Resumed resumed,
      resumeOrBroadcast(options, comm, manifest, arena->data(), run));
  // What the x86 data order depends on besides the seed and the world size
  // (resumeOrBroadcast warns about that one): steps per epoch, compared
  // once the input is open.
  if (resumed.info)
    checkpointStepsPerEpoch = resumed.info->stepsPerEpoch;
  return Status::ok();
}

StatusOr<bool> Trainer::checkpoint(int &exitCode) {
  KILN_ASSIGN_OR_RETURN(Checkpointer::Result result, checkpoints->write());
  if (result == Checkpointer::Result::NonFinite) {
    exitCode = kExitNonFiniteLoss;
    return false;
  }
  return true;
}

Status Trainer::writeMetrics(const std::vector<JsonField> &row) {
  Status status = metrics.write(row);
  return status.isOk() ? status : checkpoints->rescue(status);
}

void Trainer::trainStep() {
  if (!sites) {
    model.train(&context, &arenaRef);
    return;
  }
  auto start = Clock::now();
  model.train(&context, &arenaRef);
  profiled.stepSeconds += secondsSince(start);
  ++profiled.steps;
}

void Trainer::endWarmUp() {
  if (!sites || run.step != run.startStep + 1 || run.step >= run.totalSteps)
    return;
  sites->startAfterWarmUp(*kernels);
  profiled = StepTimes{};
  profiled.warmUpSteps = 1;
  profileStart = Clock::now();
}

Status Trainer::train(int &exitCode) {
  const TensorRef &stepSlot = *trainFn->input("step");
  const TensorRef &lossSlot = *trainFn->output("loss");
  const TensorRef &lrSlot = *trainFn->output("learning_rate");
  ProgressClock clock(run.step);
  profileStart = Clock::now();

  while (run.step < run.totalSteps) {
    comm.traceStepBegin(run.step);
    KILN_RETURN_IF_ERROR(input->fill(run.step, arena->data()));
    if (std::string note = input->takeEpochNote(); !note.empty())
      std::fputs(note.c_str(), stderr); // each rank's own files
    storeElement(arena->data() + stepSlot.offset, DType::I64, 0,
                 double(run.step));
    trainStep();
    ++run.step;

    // One small reduction per step: the loss every rank reports, whether
    // any rank's loss is not finite and whether any rank was asked to stop,
    // so that all ranks stop at the same step.
    double local = readScalar(lossSlot);
    KILN_ASSIGN_OR_RETURN(StepOutcome outcome,
                          reduceStepOutcome(comm, local, run));
    if (outcome.nonFiniteRanks > 0) {
      // Telling NaN from Inf takes a second reduction: paid only when the
      // run stops.
      double nans = std::isnan(local) ? 1 : 0;
      KILN_RETURN_IF_ERROR(comm.allreduceSum(&nans, 1));
      checkpoints->adoptInterruptCheckpoint();
      exitCode =
          reportNonFiniteLoss(comm, run, outcome, nans > 0 ? "NaN" : "Inf");
      return Status::ok();
    }
    if (outcome.stop) {
      KILN_ASSIGN_OR_RETURN(bool good, checkpoint(exitCode));
      if (good)
        exitCode = reportInterrupted(comm, run);
      return Status::ok();
    }
    KILN_RETURN_IF_ERROR(checkpoints->snapshot());
    // Progress reports, checkpoints and evaluations are not steps.
    KILN_RETURN_IF_ERROR(comm.traceStepEnd());

    if (std::optional<ProgressClock::Interval> interval =
            clock.lap(options, run, globalBatch())) {
      Status reported =
          reportProgress(comm, run, readScalar(lrSlot),
                         fmt::format("{:.1f} img/s", interval->imagesPerSecond),
                         *interval, metrics);
      if (!reported.isOk())
        return checkpoints->rescue(reported);
      clock.restart(run.step);
    }
    if (checkpointDue(options, run)) {
      KILN_ASSIGN_OR_RETURN(bool good, checkpoint(exitCode));
      if (!good)
        return Status::ok();
    }
    if (options.evalEveryEpoch && run.stepsPerEpoch &&
        run.step % run.stepsPerEpoch == 0 && run.step != run.totalSteps)
      KILN_RETURN_IF_ERROR(evaluate());
    endWarmUp();
  }
  run.trainSeconds = clock.elapsed();
  profiled.loopSeconds = secondsSince(profileStart);
  return Status::ok();
}

Status Trainer::evaluate() {
  if (!evalFn || !model.eval)
    return KILN_STATUS(kInvalidArgument, "the model has no eval function");
  EvalTotals totals;
  auto start = Clock::now();
  const TensorRef &labels = *evalFn->input("labels");
  if (options.synthetic) {
    auto source = openSyntheticInput(*evalFn, comm.rank(), run.seed,
                                     options.syntheticBatches);
    for (int64_t b = 0; b < options.syntheticBatches; ++b) {
      KILN_RETURN_IF_ERROR(source->fill(b, arena->data()));
      model.eval(&context, &arenaRef);
      KILN_RETURN_IF_ERROR(
          scoreBatch(*evalFn, arena->data(), manifest.batch, totals));
    }
  } else {
    KILN_ASSIGN_OR_RETURN(kiln_rt_dataset_config_t config,
                          datasetConfig(options, *evalFn, "validation", comm,
                                        run.seed));
    // Each rank evaluates its range of the validation records (a rank
    // whose range is empty, with fewer records than ranks, reads nothing
    // but still joins the reduction below).
    {
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
        // gets a valid class for them and scoring counts only batch.size.
        for (int64_t i = 0; i < manifest.batch; ++i)
          dst[i] = i < int64_t(batch.size) ? batch.labels[i] : 0;
        model.eval(&context, &arenaRef);
        KILN_RETURN_IF_ERROR(
            scoreBatch(*evalFn, arena->data(), batch.size, totals));
      }
    }
  }
  double sums[4] = {totals.examples, totals.top1, totals.top5, totals.lossSum};
  KILN_RETURN_IF_ERROR(comm.allreduceSum(sums, 4));
  if (sums[0] == 0)
    return KILN_STATUS(kNotFound, "evaluation found no validation examples");
  double seconds = secondsSince(start);
  lastEval = {sums[0], sums[1] / sums[0], sums[2] / sums[0], sums[3] / sums[0]};
  haveEval = true;
  double epoch = run.epoch();
  say(comm,
      "eval at step {}{}: top-1 {:.2f}%  top-5 {:.2f}%  loss {:.4f}  ({} "
      "examples, {})\n",
      run.step, run.stepsPerEpoch ? fmt::format(" (epoch {:.2f})", epoch) : "",
      100 * lastEval.top1, 100 * lastEval.top5, lastEval.lossSum,
      static_cast<long long>(sums[0]), formatDuration(seconds));
  if (metrics.isOpen())
    KILN_RETURN_IF_ERROR(writeMetrics(
        {JsonField::text("kind", "eval"), JsonField::integer("step", run.step),
         JsonField::number("epoch", epoch),
         JsonField::number("top1", lastEval.top1),
         JsonField::number("top5", lastEval.top5),
         JsonField::number("loss", lastEval.lossSum),
         JsonField::integer("examples", static_cast<long long>(sums[0])),
         JsonField::number("seconds", seconds)}));
  return Status::ok();
}

Status Trainer::finish(int &exitCode) {
  if (run.step > run.startStep || run.lastCheckpointStep < 0) {
    KILN_ASSIGN_OR_RETURN(bool good, checkpoint(exitCode));
    if (!good)
      return Status::ok();
  }
  if (options.eval)
    KILN_RETURN_IF_ERROR(evaluate());

  if (options.verifyReplicas)
    KILN_RETURN_IF_ERROR(verifyReplicas(manifest, arena->data(), comm));

  int64_t taken = run.step - run.startStep;
  double rate = run.trainSeconds > 0
                    ? double(taken) * globalBatch() / run.trainSeconds
                    : 0;
  std::string wait =
      input && input->waitSeconds() > 0.05 * run.trainSeconds &&
              run.trainSeconds > 0
          ? fmt::format(" ({:.0f}% of it waiting for data)",
                        100 * input->waitSeconds() / run.trainSeconds)
          : "";
  say(comm, "kiln: done: {} steps in {}{}, {:.1f} img/s{}{}{}\n", taken,
      formatDuration(run.trainSeconds), wait, rate,
      taken ? fmt::format(", final loss {:.4f}", run.lastLoss) : "",
      haveEval ? fmt::format(", top-1 {:.2f}%", 100 * lastEval.top1) : "",
      run.lastCheckpoint.empty() ? "" : "; checkpoint " + run.lastCheckpoint);
  KILN_RETURN_IF_ERROR(reportCommunication(comm, run));
  if (std::string snapshot = checkpoints->snapshotSummary(); !snapshot.empty())
    say(comm, "{}", snapshot);
  if (metrics.isOpen()) {
    std::vector<JsonField> fields = {
        JsonField::text("kind", "summary"),
        JsonField::integer("steps", taken),
        JsonField::integer("step", run.step),
        JsonField::number("seconds", run.trainSeconds),
        JsonField::number("images_per_sec", rate),
        JsonField::number("final_loss", run.lastLoss),
        JsonField::text("checkpoint", run.lastCheckpoint)};
    if (haveEval) {
      fields.push_back(JsonField::number("top1", lastEval.top1));
      fields.push_back(JsonField::number("top5", lastEval.top5));
    }
    KILN_RETURN_IF_ERROR(writeMetrics(fields));
  }
  if (options.profile && isRoot())
    KILN_RETURN_IF_ERROR(reportProfile());
  std::fflush(stdout);
  return Status::ok();
}

Status Trainer::reportProfile() {
  fmt::print("{}", profileReport(*sites, *kernels, manifest, profiled));
  if (metrics.isOpen())
    for (const std::vector<JsonField> &row :
         profileMetrics(*sites, *kernels, manifest, profiled))
      KILN_RETURN_IF_ERROR(writeMetrics(row));
  return Status::ok();
}

} // namespace

int runMain(int argc, char **argv, const ModelEntryPoints &model) {
  const char *program = argc > 0 ? argv[0] : "kiln-train";
  auto parsed = parseOptions(argc, argv);
  if (!parsed.isOk())
    return usageError(program, parsed.status().message());
  const RunOptions &options = *parsed;
  if (options.help) {
    fmt::print("{}", usage(program));
    return kExitOk;
  }
  if (!options.predict.empty())
    return runPredict(options, model);
  return runTraining(options, [&](Comm &comm) {
    return std::make_unique<Trainer>(options, model, comm);
  });
}

} // namespace kiln::rt::exec
