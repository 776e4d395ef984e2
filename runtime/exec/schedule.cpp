//===- schedule.cpp - The learning-rate schedule in effect for a run ------===//

#include "kiln/rt/exec/schedule.h"

#include "kiln/rt/exec/variables.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

namespace kiln::rt::exec {
namespace {

const std::vector<std::string> &aliasSlots(const std::string &alias) {
  static const std::vector<std::pair<std::string, std::vector<std::string>>>
      kAliases = {
          {"lr", {"lr", "base_lr", "peak_lr"}},
          {"warmup_init_lr", {"warmup_init_lr", "init_lr"}},
          {"warmup_steps", {"warmup_steps"}},
          {"total_steps", {"total_steps", "train_steps"}},
          {"end_lr", {"end_lr"}},
          {"power", {"power"}},
          {"decay_factor", {"factor"}},
      };
  for (const auto &[name, slots] : kAliases)
    if (name == alias)
      return slots;
  static const std::vector<std::string> kNone;
  return kNone;
}

bool isHorizonSlot(const std::string &slot) {
  return slot == "total_steps" || slot == "train_steps";
}

/// The one step slot that may be fractional: a warmup of E epochs is E x
/// steps per epoch steps exactly (MLPerf v0.6's 25 epochs at batch 32768
/// are 977.45 steps), which every schedule formula takes (kiln.learning_rate).
bool isWarmupSlot(const std::string &slot) { return slot == "warmup_steps"; }

/// A value slot `slot` can hold: a warmup any non-negative number, other
/// step slots a non-negative integer.
bool validSteps(const std::string &slot, double v) {
  return std::isfinite(v) && v >= 0 && (isWarmupSlot(slot) || v == std::floor(v));
}

std::string flagOf(const std::string &key) {
  if (key[0] == '=')
    return "--set-schedule " + key.substr(1);
  std::string flag = "--" + key;
  std::replace(flag.begin(), flag.end(), '_', '-');
  return flag;
}

/// The flag that sets step slot `slot` in steps, for advice in messages.
std::string stepFlagOf(const std::string &slot) {
  if (slot == "warmup_steps")
    return "--warmup-steps";
  if (isHorizonSlot(slot))
    return "--total-steps";
  return "--set-schedule " + slot + "=N";
}

/// The flags that set `slot`, in steps or in epochs.
std::string flagsOf(const std::string &slot) {
  if (slot == "warmup_steps")
    return "--warmup-steps or --warmup-epochs";
  if (isHorizonSlot(slot))
    return "--total-steps or --decay-epochs";
  return stepFlagOf(slot);
}

std::string epochsText(double epochs) {
  return fmt::format("{:g} epoch{}", epochs, epochs == 1 ? "" : "s");
}

/// A slot's value the command line asks for, in steps or in epochs.
struct Request {
  bool inEpochs = false;
  double value = 0;
  std::string flag;
};

/// The slot an alias (or "=slot") names, or an error listing the slots.
StatusOr<size_t> findSlot(const Schedule &s, const std::string &key,
                          const std::string &flag) {
  std::vector<std::string> candidates =
      key[0] == '=' ? std::vector<std::string>{key.substr(1)} : aliasSlots(key);
  for (const std::string &c : candidates) {
    auto slot = std::find(s.slots.begin(), s.slots.end(), c);
    if (slot != s.slots.end())
      return static_cast<size_t>(slot - s.slots.begin());
  }
  std::string names;
  for (const std::string &n : s.slots)
    names += (names.empty() ? "" : ", ") + n;
  return KILN_STATUS(kInvalidArgument,
                     fmt::format("{}: the {} schedule has no such slot (its "
                                 "slots: {})",
                                 flag, s.kind, names));
}

/// epochs x stepsPerEpoch for slot `slot`: exact for the warmup, otherwise
/// rounded to nearest, halves away from zero, as --epochs computes the run's
/// length (run_loop.cpp), so that a horizon of E epochs ends exactly where a
/// run of --epochs E does.
StatusOr<double> epochsToSteps(double epochs, int64_t stepsPerEpoch,
                               const std::string &slot,
                               const std::string &what) {
  double steps = epochs * double(stepsPerEpoch);
  // Beyond 2^53 the f64 slot no longer holds every step count.
  if (!(steps <= 9007199254740992.0))
    return KILN_STATUS(kInvalidArgument,
                       fmt::format("{}: {} x {} steps per epoch is too many "
                                   "steps",
                                   what, epochsText(epochs), stepsPerEpoch));
  return isWarmupSlot(slot) ? steps : double(std::llround(steps));
}

} // namespace

StatusOr<ScheduleSources> applySchedule(const Manifest &manifest,
                                        uint8_t *arena,
                                        const RunOptions &options,
                                        const RunState &run, const Comm &comm) {
  std::vector<std::pair<std::string, Request>> asked;
  for (const auto &[key, value] : options.scheduleOverrides)
    asked.push_back({key, Request{false, value, flagOf(key)}});
  if (options.warmupEpochs)
    asked.push_back(
        {"warmup_steps", Request{true, *options.warmupEpochs, "--warmup-epochs"}});
  if (options.decayEpochs)
    asked.push_back(
        {"total_steps", Request{true, *options.decayEpochs, "--decay-epochs"}});
  if (!manifest.schedule) {
    if (asked.empty())
      return ScheduleSources{};
    return KILN_STATUS(kInvalidArgument,
                       fmt::format("{}: the model has no learning-rate "
                                   "schedule in its manifest",
                                   asked.front().second.flag));
  }
  const Schedule &s = *manifest.schedule;
  uint8_t *slots = arena + manifest.findVariable(s.variable)->tensor.offset;
  auto load = [&](size_t i) {
    return loadElement(slots, DType::F64, static_cast<int64_t>(i));
  };
  auto store = [&](size_t i, double value) {
    storeElement(slots, DType::F64, static_cast<int64_t>(i), value);
  };
  bool root = comm.rank() == 0;

  // The command line, per slot: a later flag for the same slot wins, as
  // long as both count in the same unit.
  std::vector<std::optional<Request>> requests(s.slots.size());
  for (const auto &[key, request] : asked) {
    KILN_ASSIGN_OR_RETURN(size_t i, findSlot(s, key, request.flag));
    const std::string &slot = s.slots[i];
    if (!request.inEpochs && isScheduleStepSlot(slot) &&
        !validSteps(slot, request.value))
      return KILN_STATUS(
          kInvalidArgument,
          fmt::format("{}: {} is a step count and needs a non-negative {}, "
                      "not {}",
                      request.flag, slot,
                      isWarmupSlot(slot) ? "number" : "integer",
                      request.value));
    if (requests[i] && requests[i]->inEpochs != request.inEpochs)
      return KILN_STATUS(kInvalidArgument,
                         fmt::format("{} and {} both set {}; pass one",
                                     requests[i]->flag, request.flag, slot));
    requests[i] = request;
  }

  // Synthetic data has no epochs unless --steps-per-epoch gives them.
  int64_t stepsPerEpoch = run.stepsPerEpoch > 0
                              ? run.stepsPerEpoch
                              : options.stepsPerEpoch.value_or(0);
  std::string perEpoch =
      fmt::format("{} steps per epoch{}", stepsPerEpoch,
                  run.stepsPerEpoch > 0 ? "" : " (--steps-per-epoch)");
  std::string runLength =
      options.steps ? fmt::format("--steps {}", *options.steps)
                    : fmt::format("--epochs {:g}", options.epochs.value_or(0));
  // Steps were taken with the checkpoint's values: keeping them keeps the
  // curve continuous (a resume on as many ranks resolves the same anyway).
  bool resumed = run.startStep > 0;

  ScheduleSources sources(s.slots.size());
  for (size_t i = 0; i < s.slots.size(); ++i) {
    const std::string &slot = s.slots[i];
    if (const std::optional<Request> &r = requests[i]) {
      if (!r->inEpochs) {
        store(i, r->value);
        sources[i] = r->flag;
        continue;
      }
      if (stepsPerEpoch == 0)
        return KILN_STATUS(
            kInvalidArgument,
            fmt::format("{}: {} needs the steps per epoch, which synthetic "
                        "data does not have: pass --steps-per-epoch N, or {}",
                        r->flag, slot, stepFlagOf(slot)));
      KILN_ASSIGN_OR_RETURN(
          double steps, epochsToSteps(r->value, stepsPerEpoch, slot, r->flag));
      store(i, steps);
      sources[i] = fmt::format("{} {:g} x {}", r->flag, r->value, perEpoch);
      continue;
    }

    auto epochs = s.epochs.find(slot);
    bool fromRun = slot == s.runLength;
    if (epochs == s.epochs.end() && !fromRun)
      continue;
    std::string what = "schedule slot " + slot;
    std::optional<double> fresh;
    std::string how;
    if (fromRun) {
      fresh = double(run.totalSteps);
      how = fmt::format("the run's length ({})", runLength);
    } else if (stepsPerEpoch > 0) {
      KILN_ASSIGN_OR_RETURN(
          fresh, epochsToSteps(epochs->second, stepsPerEpoch, slot, what));
      how = fmt::format("{} x {}", epochsText(epochs->second), perEpoch);
    }
    double held = load(i);
    if (resumed && validSteps(slot, held)) {
      sources[i] = "kept from the checkpoint";
      if (root && fresh && *fresh != held)
        fmt::print(stderr,
                   "kiln: warning: schedule {}: keeping the checkpoint's {:g} "
                   "steps; this run would resolve {} = {:g} (another world "
                   "size or data set?); pass {} to change it\n",
                   slot, held, how, *fresh, flagsOf(slot));
      continue;
    }
    if (!fresh)
      return KILN_STATUS(
          kInvalidArgument,
          fmt::format("{} was compiled as {} and needs the steps per epoch, "
                      "which synthetic data does not have: pass "
                      "--steps-per-epoch N, or {}",
                      what, epochsText(epochs->second), stepFlagOf(slot)));
    store(i, *fresh);
    sources[i] = how;
  }

  // What the generated code divides by must hold now that all is known.
  auto valueText = [&](size_t i) {
    return fmt::format("{} {:g}{}", s.slots[i], load(i),
                       sources[i].empty() ? "" : " (" + sources[i] + ")");
  };
  std::optional<size_t> warmup, horizon;
  for (size_t i = 0; i < s.slots.size(); ++i) {
    const std::string &slot = s.slots[i];
    if (!isScheduleStepSlot(slot))
      continue;
    double v = load(i);
    if (!validSteps(slot, v))
      return KILN_STATUS(
          kInvalidArgument,
          fmt::format("schedule slot {} is {:g}, not a step count (a "
                      "non-negative {})",
                      slot, v, isWarmupSlot(slot) ? "number" : "integer"));
    if (slot == "warmup_steps")
      warmup = i;
    if (isHorizonSlot(slot))
      horizon = i;
    if (slot.rfind("boundary", 0) == 0 && i > 0 &&
        s.slots[i - 1].rfind("boundary", 0) == 0 && v <= load(i - 1))
      return KILN_STATUS(kInvalidArgument,
                         fmt::format("schedule {}: {} must exceed {}", s.kind,
                                     valueText(i), valueText(i - 1)));
  }
  if (warmup && horizon) {
    // MLPerf's polynomial decay divides by total - warmup + 1, the others
    // by total - warmup.
    bool equalOk = s.kind == "warmup_polynomial_decay";
    double w = load(*warmup), t = load(*horizon);
    if (t < w || (t == w && !equalOk))
      return KILN_STATUS(kInvalidArgument,
                         fmt::format("schedule {}: {} must {} {}", s.kind,
                                     valueText(*horizon),
                                     equalOk ? "be at least" : "exceed",
                                     valueText(*warmup)));
  }
  if (horizon && root && run.totalSteps > run.startStep &&
      load(*horizon) != double(run.totalSteps))
    fmt::print(stderr,
               "kiln: warning: schedule {} {:g} but the run ends at step {}"
               "{}\n",
               s.slots[*horizon], load(*horizon), run.totalSteps,
               sources[*horizon].empty()
                   ? ""
                   : " (" + s.slots[*horizon] + ": " + sources[*horizon] + ")");
  return sources;
}

std::string describeSchedule(const Manifest &manifest, const uint8_t *arena,
                             const ScheduleSources &sources) {
  if (!manifest.schedule)
    return "none";
  const Schedule &s = *manifest.schedule;
  const Variable &var = *manifest.findVariable(s.variable);
  std::string out = s.kind + ":";
  for (size_t i = 0; i < s.slots.size(); ++i)
    out += fmt::format(" {}={:g}", s.slots[i],
                       loadElement(arena + var.tensor.offset, DType::F64,
                                   static_cast<int64_t>(i)));
  std::string explained;
  for (size_t i = 0; i < sources.size() && i < s.slots.size(); ++i)
    if (!sources[i].empty())
      explained += fmt::format("{}{}: {}", explained.empty() ? "" : "; ",
                               s.slots[i], sources[i]);
  if (!explained.empty())
    out += " (" + explained + ")";
  return out;
}

} // namespace kiln::rt::exec
