//===- sim_trainer.cpp - The training phases on the simulator -------------===//
#include "sim_trainer.h"

#include "program_info.h"

#include "kiln/ref/bf16.h"
#include "kiln/rt/exec/agreement.h"
#include "kiln/rt/exec/comm.h"
#include "kiln/rt/exec/input.h"
#include "kiln/rt/exec/manifest.h"
#include "kiln/rt/exec/metrics.h"
#include "kiln/rt/exec/run_loop.h"
#include "kiln/rt/exec/schedule.h"
#include "kiln/rt/exec/trainer.h"
#include "kiln/rt/exec/variables.h"
#include "kiln/sim/Isa.h"
#include "kiln/sim/Simulator.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace kiln::rt::simhost {
namespace {

using namespace kiln::rt::exec;
using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

Status fromSim(const kiln::Status &s, const std::string &context) {
  if (s.isOk())
    return Status::ok();
  return KILN_STATUS(kInternal, context + ": " + s.message());
}

class SimTrainer : public TrainingPhases {
public:
  SimTrainer(const RunOptions &options, const TargetOptions &targetOptions,
             const kiln_rt_sa_program_v1_t &embedded, Comm &comm)
      : options(options), targetOptions(targetOptions), embedded(embedded),
        comm(comm) {}

  Status load() override;
  RankFields rankFields() const override;
  Status setup() override;
  Status train(int &exitCode) override;
  Status finish(int &exitCode) override;

private:
  const RunOptions &options;
  const TargetOptions &targetOptions;
  const kiln_rt_sa_program_v1_t &embedded;
  Comm &comm;

  ProgramInfo info;
  std::unique_ptr<sim::Simulator> simulator;
  /// The host arena: variables, then the step's inputs and outputs.
  Manifest manifest;
  std::vector<uint64_t> arenaStorage; // 8-byte aligned
  uint8_t *arena = nullptr;
  const Function *trainFn = nullptr;
  std::unique_ptr<InputSource> input;
  MetricsLog metrics;

  /// The gradient buffers of each AllReduce instruction, in program order,
  /// staged contiguously in `gradients` (one f32 bucket per instruction).
  std::vector<std::vector<uint32_t>> bucketBuffers;
  std::vector<int64_t> bucketOffsets; // in floats
  std::vector<float> gradients;
  size_t nextBucket = 0;

  sim::Report device;
  RunState run;
  std::unique_ptr<Checkpointer> checkpoints;

  bool isRoot() const { return comm.rank() == 0; }
  double globalBatch() const {
    return double(manifest.batch) * double(comm.size());
  }
  double deviceImagesPerSecond() const {
    return device.seconds > 0 ? globalBatch() / device.seconds : 0;
  }

  Status loadProgram();
  Status buildManifest();
  Status setUpAllReduce();
  /// Simulator variables -> host arena, and back.
  Status variablesToArena();
  Status variablesFromArena(const std::vector<std::string> *only = nullptr);
  Status resumeAndBroadcast();
  /// The checkpoint of run.step (collective); false if the run must stop
  /// for divergence (`exitCode` set).
  StatusOr<bool> checkpoint(int &exitCode);
  Status feed(int64_t globalStep);
  StatusOr<double> readScalar(const std::string &output);
};

Status SimTrainer::loadProgram() {
  if (embedded.abi_version != KILN_RT_SA_PROGRAM_ABI_VERSION)
    return KILN_STATUS(kInvalidArgument,
                       fmt::format("the embedded program has ABI version {}; "
                                   "this runtime reads version {} (rebuild "
                                   "with a matching kilnc)",
                                   embedded.abi_version,
                                   KILN_RT_SA_PROGRAM_ABI_VERSION));
  KILN_ASSIGN_OR_RETURN(info, parseInfo(embedded.info));

  // The configuration the program was compiled for, then the command line.
  std::unique_ptr<sim::Program> program;
  KILN_RETURN_IF_ERROR(
      fromSim(sim::parseProgram(embedded.data, embedded.size, program),
              "the embedded program"));
  sim::TargetConfig target = sim::targetFromProgram(*program->target);
  if (!targetOptions.profile.empty())
    KILN_RETURN_IF_ERROR(fromSim(
        sim::getTargetProfile(targetOptions.profile, target), "--profile"));
  for (const auto &[field, value] : targetOptions.sets)
    KILN_RETURN_IF_ERROR(
        fromSim(sim::setTargetField(target, field, value), "--set"));
  KILN_RETURN_IF_ERROR(fromSim(sim::validateTarget(target), "target"));
  if (targetOptions.printConfig && isRoot())
    fmt::print("{}", sim::describeTarget(target));
  // Simulator::create verifies the program's meaning against this target
  // (unit limits, on-chip capacity, bounds, dependencies).
  return fromSim(
      sim::Simulator::create(std::move(program), target, simulator),
      fmt::format("the embedded program does not verify on target '{}'",
                  target.name));
}

Status SimTrainer::buildManifest() {
  const sim::Program &program = simulator->program();
  manifest.abi = 1;
  manifest.model = info.model;
  int64_t offset = 0;
  auto place = [&](std::vector<int64_t> shape, DType dtype) {
    TensorRef t;
    offset = (offset + 7) / 8 * 8;
    t.offset = offset;
    t.shape = std::move(shape);
    t.dtype = dtype;
    offset += t.byteSize();
    return t;
  };
  for (const auto &b : program.buffers) {
    if (b->role != sim::fb::Role::Parameter && b->role != sim::fb::Role::State)
      continue;
    Variable v;
    v.name = b->binding;
    v.kind = b->role == sim::fb::Role::Parameter ? VariableKind::Parameter
                                                 : VariableKind::State;
    // The schedule is f64 in the model (and in checkpoints), f32 on the
    // device.
    bool isSchedule = info.schedule && v.name == info.schedule->variable;
    v.tensor = place(b->shape, isSchedule ? DType::F64
                               : b->dtype == sim::fb::DType::BF16 ? DType::BF16
                                                                  : DType::F32);
    manifest.variables.push_back(std::move(v));
  }
  manifest.persistentBytes = offset;

  auto buffer = [&](const std::string &binding) -> const sim::fb::BufferT * {
    int id = simulator->findBinding(binding);
    return id < 0 ? nullptr : program.buffers[size_t(id)].get();
  };
  Function train;
  train.symbol = "kiln_sa_program_v1";
  const sim::fb::BufferT *images = buffer(info.inputs["images"]);
  const sim::fb::BufferT *labels = buffer(info.inputs["labels"]);
  const sim::fb::BufferT *logits = buffer(info.outputs["logits"]);
  if (!images || images->shape.size() != 4 || !labels ||
      labels->shape.size() != 1 || !logits || logits->shape.size() != 2)
    return KILN_STATUS(kInvalidArgument,
                       "the embedded program's inputs and outputs do not "
                       "match its info (images [N,H,W,C], labels [N], "
                       "logits [N,classes])");
  for (const char *name : {"step", "loss", "learning_rate"}) {
    const std::string &binding = std::string(name) == "step"
                                     ? info.inputs["step"]
                                     : info.outputs[name];
    if (!buffer(binding))
      return KILN_STATUS(kInvalidArgument,
                         fmt::format("the embedded program has no buffer "
                                     "'{}' for its {}",
                                     binding, name));
  }
  std::vector<int64_t> imageShape = images->shape;
  if (images->host_layout == sim::fb::HostLayout::SpaceToDepth2)
    imageShape = {imageShape[0], 2 * imageShape[1], 2 * imageShape[2],
                  imageShape[3] / 4};
  // The pipeline delivers f32 images; the simulator rounds them to the
  // input's bf16 as it stores them (the same rounding the x86 pipeline
  // applies for a bf16 input).
  train.inputs["images"] = place(imageShape, DType::F32);
  train.inputs["labels"] = place(labels->shape, DType::I32);
  train.inputs["step"] = place({}, DType::I64);
  train.outputs["loss"] = place({}, DType::F32);
  train.outputs["logits"] = place(logits->shape, DType::F32);
  train.outputs["learning_rate"] = place({}, DType::F32);
  manifest.batch = imageShape[0];
  if (program.batch != 0 && program.batch != manifest.batch)
    return KILN_STATUS(kInvalidArgument,
                       fmt::format("the embedded program's batch {} differs "
                                   "from its images' {}",
                                   program.batch, manifest.batch));
  manifest.functions["train"] = std::move(train);
  manifest.arenaBytes = offset;
  manifest.schedule = info.schedule;
  if (manifest.schedule && !manifest.findVariable(manifest.schedule->variable))
    return KILN_STATUS(kInvalidArgument,
                       "the schedule variable '" + manifest.schedule->variable +
                           "' is not a variable of the program");
  arenaStorage.assign(size_t(offset + 7) / 8, 0);
  arena = reinterpret_cast<uint8_t *>(arenaStorage.data());
  trainFn = manifest.findFunction("train");
  return Status::ok();
}

Status SimTrainer::setUpAllReduce() {
  const sim::Program &program = simulator->program();
  std::vector<Bucket> buckets;
  int64_t total = 0;
  for (const auto &instr : program.instructions) {
    const sim::fb::AllReduceT *ar = instr->kind.AsAllReduce();
    if (!ar)
      continue;
    Bucket bucket;
    bucket.id = int32_t(buckets.size());
    int64_t count = 0;
    for (uint32_t id : ar->buffers)
      count += sim::shapeElements(program.buffers[id]->shape);
    TensorRef t;
    t.offset = total * int64_t(sizeof(float));
    t.shape = {count};
    t.dtype = DType::F32;
    bucket.tensors.push_back(t);
    bucketBuffers.push_back(ar->buffers);
    bucketOffsets.push_back(total);
    total += count;
    buckets.push_back(std::move(bucket));
  }
  if (comm.size() == 1)
    return Status::ok(); // averaging over one rank is the identity
  gradients.assign(size_t(total), 0.0f);
  KILN_RETURN_IF_ERROR(comm.setBuckets(
      buckets, reinterpret_cast<uint8_t *>(gradients.data())));
  // The device reaches the host's collective through the program's
  // AllReduce instructions, in program order: one bucket each.
  simulator->setAllReduce(
      [this](std::vector<std::vector<float> *> buffers) -> kiln::Status {
        size_t id = nextBucket++;
        if (id >= bucketBuffers.size() ||
            buffers.size() != bucketBuffers[id].size())
          return kiln::invalidArgumentError("allreduce " + std::to_string(id) +
                                            " does not match the program's");
        float *staged = gradients.data() + bucketOffsets[id];
        for (std::vector<float> *b : buffers) {
          std::memcpy(staged, b->data(), b->size() * sizeof(float));
          staged += b->size();
        }
        // Errors and timeouts end the whole job inside the communicator.
        comm.allreduceStart(int32_t(id));
        comm.allreduceWait(int32_t(id));
        staged = gradients.data() + bucketOffsets[id];
        const sim::Program &program = simulator->program();
        for (size_t i = 0; i < buffers.size(); ++i) {
          std::vector<float> &b = *buffers[i];
          std::memcpy(b.data(), staged, b.size() * sizeof(float));
          staged += b.size();
          if (program.buffers[bucketBuffers[id][i]]->dtype ==
              sim::fb::DType::BF16)
            for (float &v : b)
              v = ref::roundToBf16(v);
        }
        return kiln::Status::ok();
      });
  return Status::ok();
}

Status SimTrainer::variablesToArena() {
  for (const Variable &v : manifest.variables) {
    std::vector<float> values;
    KILN_RETURN_IF_ERROR(fromSim(simulator->read(v.name, values), v.name));
    for (size_t i = 0; i < values.size(); ++i)
      storeElement(arena + v.tensor.offset, v.tensor.dtype, int64_t(i),
                   values[i]);
  }
  return Status::ok();
}

Status SimTrainer::variablesFromArena(const std::vector<std::string> *only) {
  for (const Variable &v : manifest.variables) {
    if (only && std::find(only->begin(), only->end(), v.name) == only->end())
      continue;
    std::vector<float> values(size_t(v.tensor.numElements()));
    for (size_t i = 0; i < values.size(); ++i)
      values[i] = float(
          loadElement(arena + v.tensor.offset, v.tensor.dtype, int64_t(i)));
    KILN_RETURN_IF_ERROR(
        fromSim(simulator->writeVariable(v.name, values), v.name));
  }
  return Status::ok();
}

Status SimTrainer::resumeAndBroadcast() {
  // The shared resume works on the host arena: the variables go there from
  // the simulator, and back once a checkpoint or rank 0 replaced them.
  KILN_RETURN_IF_ERROR(variablesToArena());
  KILN_ASSIGN_OR_RETURN(Resumed resumed,
                        resumeOrBroadcast(options, comm, manifest, arena, run));
  if (resumed.found || comm.size() > 1)
    KILN_RETURN_IF_ERROR(variablesFromArena());
  return Status::ok();
}

Status SimTrainer::load() {
  KILN_RETURN_IF_ERROR(loadProgram());
  return buildManifest();
}

RankFields SimTrainer::rankFields() const {
  // The host's manifest says little about the program, which holds the
  // optimizer and everything else: its bytes are the backstop.
  RankFields fields;
  const sim::TargetConfig &target = simulator->target();
  fields.push_back({"model", manifest.model, "", false});
  fields.push_back({"program ABI", std::to_string(embedded.abi_version), "",
                    false});
  fields.push_back({"batch", std::to_string(manifest.batch), "", false});
  fields.push_back({"precision", info.precision.empty() ? "?" : info.precision,
                    "", false});
  fields.push_back({"target", "systolic " + sim::describeTarget(target),
                    "systolic " + target.name, false});
  uint64_t program = fnv1a(std::string_view(
      reinterpret_cast<const char *>(embedded.data), embedded.size));
  program = fnv1a(embedded.info ? embedded.info : "", program);
  fields.push_back({"program", fmt::format("{:016x}", program),
                    fmt::format("digest {:016x}", program), true});
  RankFields flags = describeRunFlags(options);
  fields.insert(fields.end(), flags.begin(), flags.end());
  return fields;
}

Status SimTrainer::setup() {
  if (options.eval && !info.eval)
    return KILN_STATUS(kInvalidArgument,
                       "--eval: the program has no eval function (kilnc "
                       "--target=systolic compiles the training step only; "
                       "evaluate a checkpoint with the x86 executable or "
                       "kiln-run --load)");
  run.seed = options.seed;
  KILN_RETURN_IF_ERROR(fromSim(simulator->initializeVariables(run.seed),
                               "initializing variables"));
  KILN_RETURN_IF_ERROR(resumeAndBroadcast());
  KILN_RETURN_IF_ERROR(setUpAllReduce());

  KILN_ASSIGN_OR_RETURN(input, openTrainingInput(options, *trainFn, comm, run));

  // The schedule in effect after a checkpoint: the command line wins.
  KILN_ASSIGN_OR_RETURN(ScheduleSources scheduleSources,
                        applySchedule(manifest, arena, options, run, comm));
  KILN_RETURN_IF_ERROR(checkScheduleAgrees(manifest, arena, comm));
  if (manifest.schedule) {
    std::vector<std::string> only = {manifest.schedule->variable};
    KILN_RETURN_IF_ERROR(variablesFromArena(&only));
  }

  if (!options.modelDir.empty() && isRoot())
    KILN_RETURN_IF_ERROR(metrics.open(options.modelDir, options.tensorboard));
  // The variables live in the simulator: each checkpoint and snapshot reads
  // them into the host arena first.
  checkpoints = std::make_unique<Checkpointer>(
      options, comm, manifest, arena, run,
      [this] { return variablesToArena(); });

  // The device time of a step: values do not change it, so one timed run
  // serves the whole training (allreduce over the ranks' links included).
  auto timedStart = Clock::now();
  sim::TimingOptions timing;
  timing.ranks = uint32_t(comm.size());
  device = simulator->report(timing);
  double timedSeconds = secondsSince(timedStart);
  const sim::TargetConfig &target = simulator->target();

  say(comm,
      "kiln: model {} on the systolic target (simulated), batch {} x {} "
      "rank{} ({}), precision {}\n",
      manifest.model, manifest.batch, comm.size(), comm.size() == 1 ? "" : "s",
      comm.backend(), info.precision.empty() ? "?" : info.precision);
  say(comm,
      "kiln: device {}: {} MXU{} of {}x{} at {:g} MHz, {} MiB on chip; "
      "program: {} instructions, {} allreduce{}, {} variables; schedule {}\n",
      target.name, target.mxuCount, target.mxuCount == 1 ? "" : "s",
      target.arrayRows, target.arrayCols, target.clockHz / 1e6,
      target.onChipBytes >> 20, device.instructions, bucketBuffers.size(),
      bucketBuffers.size() == 1 ? "" : "s", manifest.variables.size(),
      describeSchedule(manifest, arena, scheduleSources));
  say(comm,
      "kiln: simulated step: {} cycles = {:.3f} ms at {:g} MHz -> {:.1f} "
      "img/s on {} chip{} (MXU utilization {:.1f}%; timed in {:.2f} s)\n",
      device.cycles, 1e3 * device.seconds, target.clockHz / 1e6,
      deviceImagesPerSecond(), comm.size(), comm.size() == 1 ? "" : "s",
      100 * device.mxuUtilization, timedSeconds);
  if (targetOptions.deviceReport && isRoot())
    fmt::print("{}", sim::formatReportTable(device, 20));
  if (!options.modelDir.empty() && isRoot()) {
    std::string path = options.modelDir + "/device_report.json";
    std::ofstream out(path);
    out << sim::formatReportJson(device);
    if (!out)
      return KILN_STATUS(kIoError, "cannot write " + path);
  }
  say(comm, "{}", describeTrainingData(options, run));
  return Status::ok();
}

Status SimTrainer::feed(int64_t globalStep) {
  KILN_RETURN_IF_ERROR(input->fill(globalStep, arena));
  const TensorRef &images = *trainFn->input("images");
  const TensorRef &labels = *trainFn->input("labels");
  std::vector<float> pixels(size_t(images.numElements()));
  std::memcpy(pixels.data(), arena + images.offset,
              pixels.size() * sizeof(float));
  KILN_RETURN_IF_ERROR(
      fromSim(simulator->setInput(info.inputs["images"], pixels), "images"));
  std::vector<float> classes(size_t(labels.numElements()));
  const auto *l = reinterpret_cast<const int32_t *>(arena + labels.offset);
  for (size_t i = 0; i < classes.size(); ++i)
    classes[i] = float(l[i]); // exact: classes < 2^24
  KILN_RETURN_IF_ERROR(
      fromSim(simulator->setInput(info.inputs["labels"], classes), "labels"));
  return fromSim(
      simulator->setInput(info.inputs["step"], {float(globalStep)}), "step");
}

StatusOr<double> SimTrainer::readScalar(const std::string &output) {
  std::vector<float> values;
  KILN_RETURN_IF_ERROR(
      fromSim(simulator->read(info.outputs[output], values), output));
  if (values.empty())
    return KILN_STATUS(kInternal, output + " is empty");
  return double(values[0]);
}

StatusOr<bool> SimTrainer::checkpoint(int &exitCode) {
  KILN_ASSIGN_OR_RETURN(Checkpointer::Result result, checkpoints->write());
  if (result == Checkpointer::Result::NonFinite) {
    exitCode = kExitNonFiniteLoss;
    return false;
  }
  return true;
}

Status SimTrainer::train(int &exitCode) {
  ProgressClock clock(run.step);
  while (run.step < run.totalSteps) {
    KILN_RETURN_IF_ERROR(feed(run.step));
    nextBucket = 0;
    KILN_RETURN_IF_ERROR(
        fromSim(simulator->runStep(), fmt::format("step {}", run.step)));
    ++run.step;

    // As on x86: one small reduction per step for the reported loss, a
    // non-finite loss on any rank, and a stop request on any rank.
    KILN_ASSIGN_OR_RETURN(double local, readScalar("loss"));
    KILN_ASSIGN_OR_RETURN(StepOutcome outcome,
                          reduceStepOutcome(comm, local, run));
    if (outcome.nonFiniteRanks > 0) {
      checkpoints->adoptInterruptCheckpoint();
      exitCode = reportNonFiniteLoss(comm, run, outcome, "not finite");
      return Status::ok();
    }
    if (outcome.stop) {
      KILN_ASSIGN_OR_RETURN(bool good, checkpoint(exitCode));
      if (good)
        exitCode = reportInterrupted(comm, run);
      return Status::ok();
    }
    KILN_RETURN_IF_ERROR(checkpoints->snapshot());

    if (std::optional<ProgressClock::Interval> interval =
            clock.lap(options, run, globalBatch())) {
      KILN_ASSIGN_OR_RETURN(double lr, readScalar("learning_rate"));
      Status reported = reportProgress(
          comm, run, lr,
          fmt::format("{:.1f} img/s host  {:.1f} img/s device",
                      interval->imagesPerSecond, deviceImagesPerSecond()),
          *interval, metrics,
          {JsonField::number("device_images_per_sec",
                             deviceImagesPerSecond())});
      if (!reported.isOk())
        return checkpoints->rescue(reported);
      clock.restart(run.step);
    }
    if (checkpointDue(options, run)) {
      KILN_ASSIGN_OR_RETURN(bool good, checkpoint(exitCode));
      if (!good)
        return Status::ok();
    }
  }
  run.trainSeconds = clock.elapsed();
  return Status::ok();
}

Status SimTrainer::finish(int &exitCode) {
  if (run.step > run.startStep || run.lastCheckpointStep < 0) {
    KILN_ASSIGN_OR_RETURN(bool good, checkpoint(exitCode));
    if (!good)
      return Status::ok();
  }
  if (options.verifyReplicas) {
    KILN_RETURN_IF_ERROR(variablesToArena());
    KILN_RETURN_IF_ERROR(verifyReplicas(manifest, arena, comm));
  }
  int64_t taken = run.step - run.startStep;
  double rate = run.trainSeconds > 0
                    ? double(taken) * globalBatch() / run.trainSeconds
                    : 0;
  say(comm,
      "kiln: done: {} steps in {} on the host ({:.1f} img/s); simulated "
      "device {:.1f} img/s ({:.3f} ms per step){}{}\n",
      taken, formatDuration(run.trainSeconds), rate, deviceImagesPerSecond(),
      1e3 * device.seconds,
      taken ? fmt::format(", final loss {:.4f}", run.lastLoss) : "",
      run.lastCheckpoint.empty() ? "" : "; checkpoint " + run.lastCheckpoint);
  if (std::string snapshot = checkpoints->snapshotSummary(); !snapshot.empty())
    say(comm, "{}", snapshot);
  if (metrics.isOpen())
    KILN_RETURN_IF_ERROR(checkpoints->rescue(metrics.write(
        {JsonField::text("kind", "summary"), JsonField::integer("steps", taken),
         JsonField::integer("step", run.step),
         JsonField::number("seconds", run.trainSeconds),
         JsonField::number("images_per_sec", rate),
         JsonField::number("device_images_per_sec", deviceImagesPerSecond()),
         JsonField::number("device_step_sec", device.seconds),
         JsonField::integer("device_step_cycles",
                            static_cast<long long>(device.cycles)),
         JsonField::number("final_loss", run.lastLoss),
         JsonField::text("checkpoint", run.lastCheckpoint)})));
  std::fflush(stdout);
  return Status::ok();
}

} // namespace

std::unique_ptr<exec::TrainingPhases>
makeSimTrainer(const exec::RunOptions &options, const TargetOptions &target,
               const kiln_rt_sa_program_v1_t &program, exec::Comm &comm) {
  return std::make_unique<SimTrainer>(options, target, program, comm);
}

} // namespace kiln::rt::simhost
