//===- host.cpp - main() of a systolic-target training executable ---------===//
//
// The host side of the simulated device (kiln/rt/simhost/host.h). The host
// keeps a small arena in the x86 runtime's terms (kiln/rt/exec/manifest.h):
// the program's variables and the step's inputs and outputs, described by a
// Manifest built here from the program and kilnc's info JSON. That lets the
// x86 runtime's pieces work unchanged: the synthetic and TFRecord inputs
// write the batch into the arena, schedule overrides, checkpoints and the
// replica hash read and write the variables there. Variables live in the
// simulator during training and are copied to the arena only when one of
// those needs them.
//
//===----------------------------------------------------------------------===//

#include "kiln/rt/simhost/host.h"

#include "json.h" // kiln_safetensors' minimal JSON reader (runtime/checkpoint)
#include "kiln/ref/bf16.h"
#include "kiln/rt/exec/checkpoint.h"
#include "kiln/rt/exec/comm.h"
#include "kiln/rt/exec/input.h"
#include "kiln/rt/exec/manifest.h"
#include "kiln/rt/exec/metrics.h"
#include "kiln/rt/exec/options.h"
#include "kiln/rt/exec/schedule.h"
#include "kiln/rt/exec/trainer.h"
#include "kiln/rt/exec/variables.h"
#include "kiln/sim/Isa.h"
#include "kiln/sim/Simulator.h"

#include <fmt/format.h>

#include <signal.h>

#include <chrono>
#include <cmath>
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

std::string formatLr(double lr) {
  return (lr >= 1e-3 && lr < 1e4) || lr == 0 ? fmt::format("{:.4f}", lr)
                                             : fmt::format("{:.3e}", lr);
}

Status fromSim(const sim::Status &s, const std::string &context) {
  if (s.ok())
    return Status::ok();
  return KILN_STATUS(kInternal, context + ": " + s.message());
}

volatile sig_atomic_t stopSignal = 0;
void onStopSignal(int signal) { stopSignal = signal; }

/// SIGINT/SIGTERM ask for an orderly stop at the next step boundary (with a
/// checkpoint), as in the x86 executable; a second signal kills.
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

//===----------------------------------------------------------------------===//
// The command line: the x86 executable's flags plus the target's.
//===----------------------------------------------------------------------===//

struct TargetOptions {
  std::string profile;
  std::vector<std::pair<std::string, std::string>> sets;
  bool listFields = false;
  bool printConfig = false;
  bool deviceReport = false;
};

/// Takes the target's flags out of argv (the rest goes to the x86 parser)
/// and rejects the x86 flags that mean nothing on the device.
Status splitTargetFlags(int argc, char **argv, TargetOptions &target,
                        std::vector<char *> &rest) {
  rest.push_back(argv[0]);
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string name = arg.substr(0, arg.find('='));
    bool inlineValue = name.size() != arg.size();
    auto value = [&](std::string &out) -> Status {
      if (inlineValue) {
        out = arg.substr(name.size() + 1);
      } else if (i + 1 < argc && std::strncmp(argv[i + 1], "--", 2) != 0) {
        out = argv[++i];
      } else {
        return KILN_STATUS(kInvalidArgument,
                           name == "--profile"
                               ? "--profile needs a target profile name "
                                 "(tpuv3, tpuv2, tpuv1)"
                               : name + " needs a value");
      }
      return Status::ok();
    };
    if (name == "--profile") {
      KILN_RETURN_IF_ERROR(value(target.profile));
    } else if (name == "--set") {
      std::string v;
      KILN_RETURN_IF_ERROR(value(v));
      size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0)
        return KILN_STATUS(kInvalidArgument,
                           fmt::format("--set expects FIELD=VALUE, got '{}' "
                                       "(--list-fields shows the fields)",
                                       v));
      target.sets.emplace_back(v.substr(0, eq), v.substr(eq + 1));
    } else if (arg == "--list-fields") {
      target.listFields = true;
    } else if (arg == "--print-config") {
      target.printConfig = true;
    } else if (arg == "--device-report") {
      target.deviceReport = true;
    } else if (name == "--threads" || name == "--weights-format") {
      return KILN_STATUS(kInvalidArgument,
                         fmt::format("{} does not apply to the systolic "
                                     "target (it sets up x86 kernels)",
                                     name));
    } else {
      rest.push_back(argv[i]);
    }
  }
  return Status::ok();
}

std::string targetUsage() {
  return R"(
systolic target (the program runs on a simulated device, docs/systolic.md):
  --profile NAME           tpuv3 (default: the profile kilnc compiled for), tpuv2, tpuv1
  --set FIELD=VALUE        override one field of the target (repeatable)
  --list-fields            print the fields with their sources, then exit
  --print-config           print the target configuration used
  --device-report          print the simulated step's per-op cycle table at start
  Progress lines show the host's img/s and the device's simulated img/s at the
  target clock (a step's device time does not depend on the data: it is
  simulated once). --threads, --weights-format and --profile (x86 kernel
  profile) do not apply; there is no --eval on this target yet.
)";
}

//===----------------------------------------------------------------------===//
// What kilnc says about the program (the info JSON of sa_program.h).
//===----------------------------------------------------------------------===//

struct ProgramInfo {
  std::string model = "model";
  std::string precision;
  std::string profile;
  std::map<std::string, std::string> inputs, outputs;
  std::optional<Schedule> schedule;
  bool eval = false;
};

StatusOr<ProgramInfo> parseInfo(const char *text) {
  if (!text)
    return KILN_STATUS(kInvalidArgument, "the embedded program has no info");
  json::Value root;
  std::string error;
  if (!json::parse(text, root, error) || root.kind != json::Value::Kind::Object)
    return KILN_STATUS(kInvalidArgument,
                       "the embedded program's info is not a JSON object: " +
                           error);
  ProgramInfo info;
  auto string = [](const json::Value *v) {
    return v && v->kind == json::Value::Kind::String ? v->text : std::string();
  };
  if (std::string m = string(root.member("model")); !m.empty())
    info.model = m;
  info.precision = string(root.member("precision"));
  info.profile = string(root.member("profile"));
  for (auto [key, map] : {std::pair{"inputs", &info.inputs},
                          std::pair{"outputs", &info.outputs}}) {
    const json::Value *o = root.member(key);
    if (!o || o->kind != json::Value::Kind::Object)
      return KILN_STATUS(kInvalidArgument,
                         fmt::format("the embedded program's info has no "
                                     "'{}'",
                                     key));
    for (const auto &[name, v] : o->members)
      (*map)[name] = string(&v);
  }
  for (const char *name : {"images", "labels", "step"})
    if (info.inputs[name].empty())
      return KILN_STATUS(kInvalidArgument,
                         fmt::format("info.inputs.{} is missing", name));
  for (const char *name : {"loss", "logits", "learning_rate"})
    if (info.outputs[name].empty())
      return KILN_STATUS(kInvalidArgument,
                         fmt::format("info.outputs.{} is missing", name));
  if (const json::Value *s = root.member("schedule");
      s && s->kind == json::Value::Kind::Object) {
    Schedule schedule;
    schedule.kind = string(s->member("kind"));
    schedule.variable = string(s->member("variable"));
    if (const json::Value *slots = s->member("slots"))
      for (const json::Value &slot : slots->elements)
        schedule.slots.push_back(string(&slot));
    info.schedule = schedule;
  }
  if (const json::Value *e = root.member("eval"))
    info.eval = e->kind == json::Value::Kind::Bool && e->boolean;
  return info;
}

//===----------------------------------------------------------------------===//
// The trainer.
//===----------------------------------------------------------------------===//

class SimTrainer {
public:
  SimTrainer(const RunOptions &options, const TargetOptions &targetOptions,
             const kiln_rt_sa_program_v1_t &embedded, Comm &comm)
      : options(options), targetOptions(targetOptions), embedded(embedded),
        comm(comm) {}

  Status setup();
  Status train(int &exitCode);
  Status finish();

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
  uint64_t seed = 0;
  int64_t startStep = 0, totalSteps = 0, stepsPerEpoch = 0, step = 0;
  int64_t lastCheckpointStep = -1;
  std::string lastCheckpoint;
  double lastLoss = NAN;
  double trainSeconds = 0;

  bool isRoot() const { return comm.rank() == 0; }
  double globalBatch() const {
    return double(manifest.batch) * double(comm.size());
  }
  double deviceImagesPerSecond() const {
    return device.seconds > 0 ? globalBatch() / device.seconds : 0;
  }

  template <typename... Args>
  void say(fmt::format_string<Args...> format, Args &&...args) {
    if (!isRoot())
      return;
    fmt::print(format, std::forward<Args>(args)...);
    std::fflush(stdout);
  }

  Status loadProgram();
  Status buildManifest();
  Status setUpAllReduce();
  /// Simulator variables -> host arena, and back.
  Status variablesToArena();
  Status variablesFromArena(const std::vector<std::string> *only = nullptr);
  Status resumeAndBroadcast();
  Status checkpoint();
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
      [this](std::vector<std::vector<float> *> buffers) -> sim::Status {
        size_t id = nextBucket++;
        if (id >= bucketBuffers.size() ||
            buffers.size() != bucketBuffers[id].size())
          return sim::Status::error("allreduce " + std::to_string(id) +
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
        return sim::Status::success();
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
  // As the x86 runtime: rank 0 reads the checkpoint and every rank takes
  // the variables from it, so all replicas start identical.
  KILN_RETURN_IF_ERROR(variablesToArena());
  int64_t header[3] = {0, 0, 0}; // found, step, seed
  if (options.resume && isRoot()) {
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
      lastCheckpoint = c.path;
      lastCheckpointStep = c.info.step;
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
  }
  if (header[0]) {
    startStep = header[1];
    seed = static_cast<uint64_t>(header[2]);
  }
  if (header[0] || comm.size() > 1)
    KILN_RETURN_IF_ERROR(variablesFromArena());
  step = startStep;
  return Status::ok();
}

Status SimTrainer::setup() {
  KILN_RETURN_IF_ERROR(loadProgram());
  if (options.eval && !info.eval)
    return KILN_STATUS(kInvalidArgument,
                       "--eval: the program has no eval function (kilnc "
                       "--target=systolic compiles the training step only; "
                       "evaluate a checkpoint with the x86 executable or "
                       "kiln-run --load)");
  KILN_RETURN_IF_ERROR(buildManifest());
  seed = options.seed;
  KILN_RETURN_IF_ERROR(
      fromSim(simulator->initializeVariables(seed), "initializing variables"));
  KILN_RETURN_IF_ERROR(resumeAndBroadcast());
  KILN_RETURN_IF_ERROR(setUpAllReduce());

  if (options.synthetic) {
    input = openSyntheticInput(*trainFn, comm.rank(), seed,
                               options.syntheticBatches);
  } else {
    KILN_ASSIGN_OR_RETURN(
        input, openDatasetInput(options, *trainFn, comm, seed, startStep));
  }
  stepsPerEpoch = input->stepsPerEpoch();
  totalSteps = options.steps
                   ? *options.steps
                   : static_cast<int64_t>(
                         std::llround(*options.epochs * double(stepsPerEpoch)));

  // Schedule overrides after a checkpoint: the command line wins.
  auto overrides = options.scheduleOverrides;
  if (options.warmupEpochs)
    overrides.emplace_back(
        "warmup_steps",
        double(std::llround(*options.warmupEpochs * double(stepsPerEpoch))));
  if (!overrides.empty()) {
    KILN_RETURN_IF_ERROR(applyScheduleOverrides(manifest, arena, overrides));
    std::vector<std::string> only = {manifest.schedule->variable};
    KILN_RETURN_IF_ERROR(variablesFromArena(&only));
  }

  if (!options.modelDir.empty() && isRoot())
    KILN_RETURN_IF_ERROR(metrics.open(options.modelDir));

  // The device time of a step: values do not change it, so one timed run
  // serves the whole training (allreduce over the ranks' links included).
  auto timedStart = Clock::now();
  sim::TimingOptions timing;
  timing.ranks = uint32_t(comm.size());
  device = simulator->report(timing);
  double timedSeconds = secondsSince(timedStart);
  const sim::TargetConfig &target = simulator->target();

  say("kiln: model {} on the systolic target (simulated), batch {} x {} "
      "rank{} ({}), precision {}\n",
      manifest.model, manifest.batch, comm.size(), comm.size() == 1 ? "" : "s",
      comm.backend(), info.precision.empty() ? "?" : info.precision);
  say("kiln: device {}: {} MXU{} of {}x{} at {:g} MHz, {} MiB on chip; "
      "program: {} instructions, {} allreduce{}, {} variables; schedule {}\n",
      target.name, target.mxuCount, target.mxuCount == 1 ? "" : "s",
      target.arrayRows, target.arrayCols, target.clockHz / 1e6,
      target.onChipBytes >> 20, device.instructions, bucketBuffers.size(),
      bucketBuffers.size() == 1 ? "" : "s", manifest.variables.size(),
      describeSchedule(manifest, arena));
  say("kiln: simulated step: {} cycles = {:.3f} ms at {:g} MHz -> {:.1f} "
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

Status SimTrainer::checkpoint() {
  if (options.modelDir.empty() || step == lastCheckpointStep)
    return Status::ok();
  if (isRoot()) {
    KILN_RETURN_IF_ERROR(variablesToArena());
    CheckpointInfo c;
    c.step = step;
    c.seed = seed;
    c.stepsPerEpoch = stepsPerEpoch;
    c.worldSize = comm.size();
    c.data = options.synthetic ? "synthetic" : options.dataDir;
    KILN_RETURN_IF_ERROR(saveCheckpoint(options.modelDir, manifest, arena, c,
                                        options.keepCheckpoints));
  }
  lastCheckpointStep = step;
  lastCheckpoint = checkpointPath(options.modelDir, step);
  return Status::ok();
}

Status SimTrainer::train(int &exitCode) {
  auto loopStart = Clock::now();
  auto intervalStart = loopStart;
  int64_t intervalFirst = step;
  while (step < totalSteps) {
    KILN_RETURN_IF_ERROR(feed(step));
    nextBucket = 0;
    KILN_RETURN_IF_ERROR(fromSim(simulator->runStep(),
                                 fmt::format("step {}", step)));
    ++step;

    // As on x86: one small reduction per step for the reported loss, a
    // non-finite loss on any rank, and a stop request on any rank.
    KILN_ASSIGN_OR_RETURN(double local, readScalar("loss"));
    double sums[3] = {std::isfinite(local) ? local : 0.0,
                      std::isfinite(local) ? 0.0 : 1.0,
                      stopSignal ? 1.0 : 0.0};
    KILN_RETURN_IF_ERROR(comm.allreduceSum(sums, 3));
    if (sums[1] > 0) {
      if (isRoot())
        fmt::print(stderr,
                   "kiln: step {}: loss is not finite{}; stopping (last "
                   "checkpoint: {})\n",
                   step,
                   comm.size() > 1
                       ? fmt::format(" on {} of {} ranks", sums[1], comm.size())
                       : "",
                   lastCheckpoint.empty() ? "none" : lastCheckpoint);
      exitCode = kExitNonFiniteLoss;
      return Status::ok();
    }
    lastLoss = sums[0] / comm.size();
    if (sums[2] > 0) {
      KILN_RETURN_IF_ERROR(checkpoint());
      if (isRoot())
        fmt::print(stderr,
                   "kiln: step {}: interrupted; stopping (checkpoint: {})\n",
                   step, lastCheckpoint.empty() ? "none (no --model-dir)"
                                                : lastCheckpoint);
      exitCode = kExitInterrupted;
      return Status::ok();
    }

    bool last = step == totalSteps;
    if (options.logEvery > 0 && (step % options.logEvery == 0 || last)) {
      double interval = secondsSince(intervalStart);
      double rate = double(step - intervalFirst) * globalBatch() /
                    std::max(interval, 1e-9);
      double elapsed = secondsSince(loopStart);
      double eta =
          elapsed / double(step - startStep) * double(totalSteps - step);
      KILN_ASSIGN_OR_RETURN(double lr, readScalar("learning_rate"));
      std::string epoch =
          stepsPerEpoch ? fmt::format("  epoch {:.2f}",
                                      double(step) / double(stepsPerEpoch))
                        : "";
      say("step {}/{}{}  loss {:.4f}  lr {}  {:.1f} img/s host  {:.1f} img/s "
          "device  ETA {}\n",
          step, totalSteps, epoch, lastLoss, formatLr(lr), rate,
          deviceImagesPerSecond(), formatDuration(eta));
      if (metrics.isOpen())
        KILN_RETURN_IF_ERROR(metrics.write(
            {JsonField::text("kind", "train"), JsonField::integer("step", step),
             JsonField::number("epoch", stepsPerEpoch ? double(step) /
                                                            double(stepsPerEpoch)
                                                      : 0.0),
             JsonField::number("loss", lastLoss), JsonField::number("lr", lr),
             JsonField::number("images_per_sec", rate),
             JsonField::number("device_images_per_sec",
                               deviceImagesPerSecond()),
             JsonField::number("elapsed_sec", elapsed)}));
      intervalStart = Clock::now();
      intervalFirst = step;
    }
    if (options.checkpointEvery > 0 && step % options.checkpointEvery == 0)
      KILN_RETURN_IF_ERROR(checkpoint());
  }
  trainSeconds = secondsSince(loopStart);
  return Status::ok();
}

Status SimTrainer::finish() {
  if (step > startStep || lastCheckpointStep < 0)
    KILN_RETURN_IF_ERROR(checkpoint());
  if (options.verifyReplicas) {
    KILN_RETURN_IF_ERROR(variablesToArena());
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
    say("kiln: parameters identical on all {} ranks (hash {:016x})\n",
        all.size(), all[0]);
  }
  int64_t taken = step - startStep;
  double rate = trainSeconds > 0 ? double(taken) * globalBatch() / trainSeconds
                                 : 0;
  say("kiln: done: {} steps in {} on the host ({:.1f} img/s); simulated "
      "device {:.1f} img/s ({:.3f} ms per step){}{}\n",
      taken, formatDuration(trainSeconds), rate, deviceImagesPerSecond(),
      1e3 * device.seconds,
      taken ? fmt::format(", final loss {:.4f}", lastLoss) : "",
      lastCheckpoint.empty() ? "" : "; checkpoint " + lastCheckpoint);
  if (metrics.isOpen())
    KILN_RETURN_IF_ERROR(metrics.write(
        {JsonField::text("kind", "summary"), JsonField::integer("steps", taken),
         JsonField::integer("step", step),
         JsonField::number("seconds", trainSeconds),
         JsonField::number("images_per_sec", rate),
         JsonField::number("device_images_per_sec", deviceImagesPerSecond()),
         JsonField::number("device_step_sec", device.seconds),
         JsonField::integer("device_step_cycles",
                            static_cast<long long>(device.cycles)),
         JsonField::number("final_loss", lastLoss),
         JsonField::text("checkpoint", lastCheckpoint)}));
  std::fflush(stdout);
  return Status::ok();
}

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

int runSimHost(int argc, char **argv, const kiln_rt_sa_program_v1_t &program) {
  const char *name = argc > 0 ? argv[0] : "kiln-train";
  TargetOptions target;
  std::vector<char *> rest;
  Status split = splitTargetFlags(argc, argv, target, rest);
  if (!split.isOk()) {
    fmt::print(stderr, "{}: {}\n(see {} --help)\n", name, split.message(),
               name);
    return kExitUsage;
  }
  if (target.listFields) {
    for (const sim::TargetField &f : sim::targetFields())
      fmt::print("{:<16} {} [source: {}]\n", f.name, f.meaning, f.source);
    return kExitOk;
  }
  auto parsed = parseOptions(int(rest.size()), rest.data());
  if (!parsed.isOk()) {
    fmt::print(stderr, "{}: {}\n(see {} --help)\n", name,
               parsed.status().message(), name);
    return kExitUsage;
  }
  const RunOptions &options = *parsed;
  if (options.help) {
    fmt::print("{}{}", usage(name), targetUsage());
    return kExitOk;
  }
  if (options.profile) // unreachable: --profile is taken above
    return kExitUsage;

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
    SimTrainer trainer(options, target, program, *comm);
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

} // namespace kiln::rt::simhost
