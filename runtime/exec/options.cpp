//===- options.cpp - Command-line parsing of the training executable ------===//

#include "kiln/rt/exec/options.h"

#include "kiln/rt/exec/kernels.h"

#include "kiln/base/flags.h"

#include <fmt/format.h>

#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <map>

namespace kiln::rt::exec {
namespace {

Status bad(const std::string &message) {
  return KILN_STATUS(kInvalidArgument, message);
}

// The input pipeline's own limits (kiln_rt_dataset_config_t, checked again
// in runtime/data/pipeline.cpp), tested here so that the message names
// the flag and no value wraps around in the pipeline's 32-bit fields.
constexpr int64_t kMaxPad = 4096;
constexpr int64_t kMaxDataWorkers = 256;
constexpr int64_t kMaxPrefetch = 1024;
// Records the shuffle buffer holds in memory: 2^20 ImageNet records are
// already ~110 GB.
constexpr int64_t kMaxShuffleBuffer = int64_t(1) << 20;
// Synthetic batches are generated up front and held in memory.
constexpr int64_t kMaxSyntheticBatches = 1024;
// The deadline is kept in the steady clock's int64 nanoseconds, which a
// larger value would overflow long before 1e300; no collective legitimately
// takes 11 days.
constexpr double kMaxCommTimeout = 1e6;

/// --threads: at most 4 threads per core this process may run on. libgomp
/// gives every thread its own stack and oneDNN its share of the scratchpad,
/// so an absurd count fails inside the OpenMP runtime (100000 threads
/// segfaulted there) instead of with a message; and past the core count a
/// compute-bound step only slows down (OpenMP barriers wait for threads the
/// scheduler has parked). The factor 4 leaves room for affinity masks that
/// under-report a job's cores.
int64_t maxThreads() { return 4 * int64_t(availableCores()); }

Status parseFloatList(const std::string &flag, const std::string &text,
                      std::vector<float> &out) {
  out.clear();
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string item = text.substr(
        start, comma == std::string::npos ? std::string::npos : comma - start);
    double v;
    KILN_RETURN_IF_ERROR(flags::parseDouble(flag, item, v));
    out.push_back(static_cast<float>(v));
    if (comma == std::string::npos)
      break;
    start = comma + 1;
  }
  if (out.empty() || out.size() > 3)
    return bad(fmt::format("{} expects 1 to 3 comma-separated numbers, got "
                           "'{}'",
                           flag, text));
  return Status::ok();
}

} // namespace

int availableCores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) != 0)
    return 1;
  return std::max(1, CPU_COUNT(&set));
}

void addRunFlags(flags::Parser &parser, RunOptions &o) {
  using flags::Flag;
  using flags::intFlag;
  // Learning rates, step counts, powers and factors: none is meaningful
  // below 0; rates have no upper bound (tests force divergence with 1e30).
  auto scheduleFlag = [&o](const char *alias, double maxValue = HUGE_VAL) {
    return Flag{
        true,
        [&o, alias, maxValue](const std::string &f, const std::string &v) {
          double x;
          KILN_RETURN_IF_ERROR(flags::parseDouble(f, v, 0, maxValue, x));
          o.scheduleOverrides.emplace_back(alias, x);
          return Status::ok();
        }};
  };

  std::map<std::string, Flag> table = {
      {"--help", flags::switchFlag(o.help, true)},
      {"-h", flags::switchFlag(o.help, true)},
      {"--data", flags::stringFlag(o.dataDir)},
      {"--synthetic", flags::switchFlag(o.synthetic, true)},
      {"--synthetic-batches",
       intFlag(o.syntheticBatches, 1, kMaxSyntheticBatches)},
      {"--augment",
       {true, [&](const std::string &f, const std::string &v) {
          o.augmentSet = true;
          if (v == "random-resized-crop")
            o.augment = Augment::RandomResizedCrop;
          else if (v == "pad-crop")
            o.augment = Augment::PadCrop;
          else if (v == "none")
            o.augment = Augment::None;
          else
            return bad(fmt::format("{} expects random-resized-crop, pad-crop "
                                   "or none, got '{}'",
                                   f, v));
          return Status::ok();
        }}},
      {"--pad-crop", {true, [&](const std::string &f, const std::string &v) {
                        o.augmentSet = true;
                        o.augment = Augment::PadCrop;
                        return flags::parseInt(f, v, 0, kMaxPad, o.pad);
                      }}},
      {"--flip", flags::switchFlag(o.flip, true)},
      {"--no-flip", flags::switchFlag(o.flip, false)},
      {"--mean", {true, [&](const std::string &f, const std::string &v) {
                    return parseFloatList(f, v, o.mean);
                  }}},
      {"--std", {true, [&](const std::string &f, const std::string &v) {
                   KILN_RETURN_IF_ERROR(parseFloatList(f, v, o.stddev));
                   // Pixels are divided by it.
                   for (float x : o.stddev)
                     if (!(x > 0))
                       return bad(fmt::format(
                           "{} values must be positive, got '{}'", f, v));
                   return Status::ok();
                 }}},
      {"--data-workers", intFlag(o.dataWorkers, 1, kMaxDataWorkers)},
      {"--prefetch", intFlag(o.prefetch, 1, kMaxPrefetch)},
      {"--shuffle-buffer", intFlag(o.shuffleBuffer, 1, kMaxShuffleBuffer)},
      {"--convert-channels", flags::switchFlag(o.convertChannels, true)},
      {"--upscale", flags::switchFlag(o.upscale, true)},
      {"--skip-bad-records", flags::switchFlag(o.skipBadRecords, true)},
      // Any int32: the pipeline subtracts it from int64 stored labels.
      {"--label-offset", intFlag(o.labelOffset, INT32_MIN, INT32_MAX)},
      {"--steps", {true, [&](const std::string &f, const std::string &v) {
                     int64_t n;
                     KILN_RETURN_IF_ERROR(flags::parseInt(f, v, 0, kMaxSteps, n));
                     o.steps = n;
                     return Status::ok();
                   }}},
      {"--epochs", {true, [&](const std::string &f, const std::string &v) {
                      double e;
                      // An epoch has at least one step; the step count is checked
                      // against kMaxSteps once the data gives its length.
                      KILN_RETURN_IF_ERROR(
                          flags::parseDouble(f, v, 0, double(kMaxSteps), e));
                      o.epochs = e;
                      return Status::ok();
                    }}},
      {"--seed", {true, [&](const std::string &f, const std::string &v) {
                    int64_t s;
                    KILN_RETURN_IF_ERROR(flags::parseInt(f, v, 0, INT64_MAX, s));
                    o.seed = static_cast<uint64_t>(s);
                    o.seedSet = true;
                    return Status::ok();
                  }}},
      {"--threads", {true, [&](const std::string &f, const std::string &v) {
                       return flags::parseInt(f, v, 1, maxThreads(), o.threads);
                     }}},
      {"--weights-format",
       {true, [&](const std::string &f, const std::string &v) {
          if (v != "blocked" && v != "hwio")
            return bad(fmt::format("{} expects blocked or hwio, got '{}'", f,
                                   v));
          o.blockedWeights = v == "blocked";
          return Status::ok();
        }}},
      {"--conv-algorithm",
       {true, [&](const std::string &f, const std::string &v) {
          if (!parseConvAlgorithm(v))
            return bad(fmt::format(
                "{} expects auto, winograd, direct or library, got '{}'", f,
                v));
          o.convAlgorithm = v;
          return Status::ok();
        }}},
      {"--profile", flags::switchFlag(o.profile, true)},
      {"--model-dir", flags::stringFlag(o.modelDir)},
      {"--tensorboard", flags::enumFlag(o.tensorboard,
                                        {{"on", true}, {"off", false}})},
      {"--log-every", intFlag(o.logEvery, 0, kMaxSteps)},
      {"--checkpoint-every", intFlag(o.checkpointEvery, 0, kMaxSteps)},
      {"--keep-checkpoints", intFlag(o.keepCheckpoints, 1, kMaxSteps)},
      {"--interrupt-snapshot",
       flags::enumFlag(o.interruptSnapshot,
                       {{"auto", InterruptSnapshot::Auto},
                        {"on", InterruptSnapshot::On},
                        {"off", InterruptSnapshot::Off}})},
      {"--resume", flags::switchFlag(o.resume, true)},
      {"--init-from", flags::stringFlag(o.initFrom)},
      {"--eval", flags::switchFlag(o.eval, true)},
      {"--predict", flags::valueFlag([&o](const std::string &,
                                          const std::string &v) {
         o.predict.push_back(v);
         return Status::ok();
       })},
      {"--labels", flags::stringFlag(o.labels)},
      {"--eval-every-epoch", flags::switchFlag(o.evalEveryEpoch, true)},
      {"--lr", scheduleFlag("lr")},
      {"--warmup-init-lr", scheduleFlag("warmup_init_lr")},
      {"--warmup-steps", scheduleFlag("warmup_steps", double(kMaxSteps))},
      {"--total-steps", scheduleFlag("total_steps", double(kMaxSteps))},
      {"--end-lr", scheduleFlag("end_lr")},
      {"--power", scheduleFlag("power")},
      {"--decay-factor", scheduleFlag("decay_factor")},
      {"--warmup-epochs", {true, [&](const std::string &f,
                                     const std::string &v) {
                             double e;
                             KILN_RETURN_IF_ERROR(
                                 flags::parseDouble(f, v, 0, double(kMaxSteps), e));
                             o.warmupEpochs = e;
                             return Status::ok();
                           }}},
      {"--decay-epochs", {true, [&](const std::string &f,
                                    const std::string &v) {
                            double e;
                            KILN_RETURN_IF_ERROR(
                                flags::parseDouble(f, v, 0, double(kMaxSteps), e));
                            o.decayEpochs = e;
                            return Status::ok();
                          }}},
      {"--steps-per-epoch", {true, [&](const std::string &f,
                                       const std::string &v) {
                               int64_t n;
                               KILN_RETURN_IF_ERROR(
                                   flags::parseInt(f, v, 1, kMaxSteps, n));
                               o.stepsPerEpoch = n;
                               return Status::ok();
                             }}},
      {"--set-schedule",
       {true, [&](const std::string &f, const std::string &v) {
          size_t eq = v.find('=');
          if (eq == std::string::npos || eq == 0)
            return bad(fmt::format("{} expects slot=value, got '{}'", f, v));
          double x;
          KILN_RETURN_IF_ERROR(flags::parseDouble(f, v.substr(eq + 1), x));
          // '=' marks an exact slot name, as opposed to the aliases above.
          o.scheduleOverrides.emplace_back("=" + v.substr(0, eq), x);
          return Status::ok();
        }}},
      {"--comm", flags::enumFlag(o.comm, {{"auto", CommBackend::Auto},
                                          {"local", CommBackend::Local},
                                          {"mpi", CommBackend::Mpi}})},
      {"--comm-timeout", {true, [&](const std::string &f,
                                    const std::string &v) {
                            KILN_RETURN_IF_ERROR(flags::parseDouble(
                                f, v, 0, kMaxCommTimeout, o.commTimeout));
                            if (o.commTimeout <= 0)
                              return bad(fmt::format(
                                  "{} must be positive, got {}", f, v));
                            return Status::ok();
                          }}},
      {"--allreduce",
       flags::enumFlag(o.allreduce, {{"library", AllreduceAlgorithm::Library},
                                     {"ring", AllreduceAlgorithm::Ring},
                                     {"torus", AllreduceAlgorithm::Torus}})},
      {"--torus-dims", {true, [&](const std::string &f, const std::string &v) {
                          return parseTorusDims(f, v, o.torusDims);
                        }}},
      {"--comm-trace", flags::stringFlag(o.commTrace)},
      {"--verify-replicas", flags::switchFlag(o.verifyReplicas, true)},
  };

  for (auto &[name, flag] : table)
    parser.add(name, std::move(flag));
}

/// --predict classifies and exits: the flags of training have no meaning
/// there, and weights must come from somewhere.
Status checkPredictOptions(const RunOptions &o) {
  const std::pair<bool, const char *> training[] = {
      {!o.dataDir.empty(), "--data"},
      {o.synthetic, "--synthetic"},
      {o.steps.has_value(), "--steps"},
      {o.epochs.has_value(), "--epochs"},
      {o.eval, "--eval"},
      {o.evalEveryEpoch, "--eval-every-epoch"},
      {o.resume, "--resume"},
      {o.checkpointEvery > 0, "--checkpoint-every"},
      {o.profile, "--profile"},
      {!o.scheduleOverrides.empty(), "the schedule flags"},
  };
  for (const auto &[given, flag] : training)
    if (given)
      return bad(fmt::format("{} is for training; --predict only classifies "
                             "images",
                             flag));
  if (o.initFrom.empty() && o.modelDir.empty())
    return bad("--predict needs trained weights: --init-from FILE (a "
               "checkpoint) or --model-dir DIR (its newest checkpoint)");
  if (!o.initFrom.empty() && !o.modelDir.empty())
    return bad("--predict takes its weights from --init-from or --model-dir, "
               "not both");
  return Status::ok();
}

Status checkRunOptions(RunOptions &o) {
  if (o.help)
    return Status::ok();
  if (!o.labels.empty() && o.predict.empty())
    return bad("--labels names the classes --predict prints; it needs "
               "--predict FILE");
  if (!o.predict.empty())
    return checkPredictOptions(o);
  if (o.synthetic && !o.dataDir.empty())
    return bad("--data and --synthetic exclude each other");
  if (!o.synthetic && o.dataDir.empty())
    return bad("no input: pass --data DIR (TFRecord shards from kiln-data) or "
               "--synthetic");
  if (o.steps && o.epochs)
    return bad("--steps and --epochs exclude each other");
  if (o.synthetic && o.epochs)
    return bad("--epochs needs --data (synthetic data has no epochs); use "
               "--steps");
  if (o.synthetic && o.evalEveryEpoch)
    return bad("--eval-every-epoch needs --data (synthetic data has no "
               "epochs)");
  // Schedule lengths: one unit per slot; epochs need an epoch length.
  auto hasOverride = [&](const char *alias) {
    return std::any_of(o.scheduleOverrides.begin(), o.scheduleOverrides.end(),
                       [&](const auto &entry) { return entry.first == alias; });
  };
  if (o.warmupEpochs && hasOverride("warmup_steps"))
    return bad("--warmup-steps and --warmup-epochs exclude each other");
  if (o.decayEpochs && hasOverride("total_steps"))
    return bad("--total-steps and --decay-epochs exclude each other");
  if (o.stepsPerEpoch && !o.synthetic)
    return bad("--steps-per-epoch is for --synthetic: with --data the data "
               "set gives the steps per epoch");
  if (o.synthetic && !o.stepsPerEpoch && (o.warmupEpochs || o.decayEpochs))
    return bad(
        fmt::format("{} needs epochs: synthetic data has none unless "
                    "--steps-per-epoch N gives their length",
                    o.warmupEpochs ? "--warmup-epochs" : "--decay-epochs"));
  if (o.resume && o.modelDir.empty())
    return bad("--resume needs --model-dir");
  if (o.checkpointEvery > 0 && o.modelDir.empty())
    return bad("--checkpoint-every needs --model-dir");
  if (o.interruptSnapshot == InterruptSnapshot::On && o.modelDir.empty())
    return bad("--interrupt-snapshot on needs --model-dir");
  if (o.evalEveryEpoch)
    o.eval = true;
  if (!o.steps && !o.epochs)
    return bad("how long? pass --steps N or --epochs E");
  if ((o.allreduce == AllreduceAlgorithm::Torus) != !o.torusDims.empty())
    return bad("--allreduce torus and --torus-dims go together");
  return Status::ok();
}

StatusOr<RunOptions> parseOptions(int argc, char **argv) {
  RunOptions o;
  flags::Parser parser;
  addRunFlags(parser, o);
  // `--predict a.jpg b.jpg`: the files after the first.
  parser.setPositional([&o](const std::string &arg) {
    if (o.predict.empty())
      return bad(fmt::format("unexpected argument '{}' (images to classify "
                             "follow --predict)",
                             arg));
    o.predict.push_back(arg);
    return Status::ok();
  });
  KILN_RETURN_IF_ERROR(parser.parse(argc, argv));
  KILN_RETURN_IF_ERROR(checkRunOptions(o));
  return o;
}

std::string usage(const char *program) {
  return fmt::format(
      R"(usage: {0} (--data DIR | --synthetic) (--steps N | --epochs E) [flags]
       {0} --predict FILE... (--init-from CKPT | --model-dir DIR) [--labels FILE]

Trains the compiled model (docs/runtime.md). Under mpirun, every rank trains
on its own share of each epoch's records and gradients are averaged.

input:
  --data DIR               TFRecord shards (train-*, validation-*) from kiln-data
  --synthetic              deterministic random batches, no data needed
  --synthetic-batches K    distinct synthetic batches, cycled (default 1)
  --augment MODE           random-resized-crop (default) | pad-crop | none
  --pad-crop P             CIFAR-style: pad by P pixels, random crop (implies pad-crop)
  --flip / --no-flip       random horizontal flip (default on)
  --mean A[,B,C]           per-channel normalization on 0..255 pixels
  --std A[,B,C]            (defaults: ImageNet for RGB, Fashion-MNIST for gray)
  --data-workers N         decoding threads per rank (default 2)
  --prefetch N             batches prepared ahead (default 4)
  --shuffle-buffer N       records in the shuffle buffer (default 1024)
  --skip-bad-records       drop corrupt records instead of stopping
  --convert-channels       convert gray images to RGB (or RGB to gray) when the
                           model takes the other (default: an error)
  --upscale                enlarge images smaller than the model's input
                           (default: an error, pad-crop aside)
  --label-offset N         stored label of class 0 (default 1, as kiln-data and
                           ImageNet shards; 0 for TensorFlow's 0-based labels)

length:
  --steps N                optimizer steps (the total, counting resumed ones)
  --epochs E               E passes over the training records (may be fractional)
  --seed S                 initializers, data order, augmentation (default 0)

learning-rate schedule (written into the schedule variable's slots):
  --lr X                   lr / base_lr / peak_lr
  --warmup-init-lr X       warmup_init_lr / init_lr
  --warmup-steps N         warmup_steps        --warmup-epochs E
  --total-steps N          total_steps / train_steps
  --decay-epochs E         total_steps in epochs (round(E x steps per epoch))
  --steps-per-epoch N      --synthetic: the epoch length epochs resolve with
  --end-lr X  --power X  --decay-factor X
  --set-schedule SLOT=X    any slot by its manifest name (repeatable)

compute:
  --threads N              oneDNN threads (default: cores / ranks on this node;
                           at most 4 x the cores this process may run on)
  --weights-format F       blocked (default: oneDNN's format, reordered) | hwio
  --conv-algorithm A       auto (default) | winograd | direct | library:
                           auto runs f32 3x3 stride-1 layers of 16-128
                           channels (to 512 on AVX2) on the runtime's
                           Winograd F(4x4,3x3), f32 1x1 layers on AVX2 on
                           its own kernel (all modes but library),
                           lets oneDNN choose Winograd or direct elsewhere,
                           and runs bf16 backward passes on small images as
                           matmuls or forward convolutions; winograd takes
                           Winograd wherever supported, direct never;
                           library is oneDNN's choice alone
  --profile                per-kernel time and GFLOP/s at the end (a switch;
                           systolic-target executables take --profile NAME,
                           a device)

output:
  --model-dir DIR          metrics.jsonl and checkpoints (rank 0 writes)
  --tensorboard on|off     also write the metrics as a TensorBoard event file
                           in --model-dir (default on)
  --log-every N            progress line every N steps (default 10; 0: none)
  --checkpoint-every N     checkpoint every N steps (default: only at the end)
  --keep-checkpoints K     checkpoints kept (default 3)
  --resume                 continue from the newest valid checkpoint in --model-dir
  --init-from FILE         start from these values (a checkpoint, or a PyTorch
                           state dict after kiln-checkpoint from-pytorch);
                           --resume's checkpoint, if any, wins
  --interrupt-snapshot M   auto (default: on under mpirun) | on | off: rank 0
                           copies the variables after every step, so that
                           SIGINT/SIGTERM writes the last completed step's
                           checkpoint at once, even in the middle of a step

evaluation:
  --eval                   top-1/top-5 on the validation shards at the end
  --eval-every-epoch       ... and after every epoch

prediction (instead of training; weights from --init-from or --model-dir):
  --predict FILE...        top-5 classes of each JPEG, preprocessed as --eval
                           preprocesses records (center crop, --mean/--std,
                           --convert-channels, --upscale)
  --labels FILE            class names, one per line, in class order

distribution:
  --comm auto|local|mpi    backend (default auto: mpi under mpirun)
  --comm-timeout SEC       abort if a gradient allreduce takes longer (default 300)
  --allreduce ALG          library (MPI_Iallreduce, default) | ring: Kiln's ring
                           of point-to-point messages, the one SMPI simulates |
                           torus: rings along each dimension of --torus-dims
  --torus-dims AxB...      the ranks as a grid for --allreduce torus, the first
                           dimension fastest (its product is the world size)
  --comm-trace FILE        each rank writes its steps' compute and communication
                           calls as JSON lines ({{rank}} in FILE becomes the rank)
                           for kiln-comm-replay (docs/scaling.md)
  --verify-replicas        check at the end that every rank holds the same parameters

exit status: 0 done, 1 runtime error, 2 bad command line, 3 loss became NaN/Inf,
4 interrupted by SIGINT/SIGTERM (after writing a checkpoint)
)",
      program);
}

} // namespace kiln::rt::exec
