//===- schedule.cpp - Learning-rate overrides -----------------------------===//

#include "kiln/rt/exec/schedule.h"

#include "kiln/rt/exec/variables.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

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

bool isStepSlot(const std::string &slot) {
  return (slot.size() > 6 && slot.compare(slot.size() - 6, 6, "_steps") == 0) ||
         slot.rfind("boundary", 0) == 0;
}

std::string flagOf(const std::string &key) {
  if (key[0] == '=')
    return "--set-schedule " + key.substr(1);
  std::string flag = "--" + key;
  std::replace(flag.begin(), flag.end(), '_', '-');
  return flag;
}

} // namespace

Status applyScheduleOverrides(
    const Manifest &manifest, uint8_t *arena,
    const std::vector<std::pair<std::string, double>> &overrides) {
  if (overrides.empty())
    return Status::ok();
  if (!manifest.schedule)
    return KILN_STATUS(kInvalidArgument,
                       fmt::format("{}: the model has no learning-rate "
                                   "schedule in its manifest",
                                   flagOf(overrides.front().first)));
  const Schedule &s = *manifest.schedule;
  const Variable &var = *manifest.findVariable(s.variable);
  for (const auto &[key, value] : overrides) {
    std::vector<std::string> candidates =
        key[0] == '=' ? std::vector<std::string>{key.substr(1)}
                      : aliasSlots(key);
    auto slot = s.slots.end();
    for (const std::string &c : candidates) {
      slot = std::find(s.slots.begin(), s.slots.end(), c);
      if (slot != s.slots.end())
        break;
    }
    if (slot == s.slots.end()) {
      std::string names;
      for (const std::string &n : s.slots)
        names += (names.empty() ? "" : ", ") + n;
      return KILN_STATUS(kInvalidArgument,
                         fmt::format("{}: the {} schedule has no such slot "
                                     "(its slots: {})",
                                     flagOf(key), s.kind, names));
    }
    if (isStepSlot(*slot) && (value < 0 || value != std::floor(value)))
      return KILN_STATUS(kInvalidArgument,
                         fmt::format("{}: {} is a step count and needs a "
                                     "non-negative integer, not {}",
                                     flagOf(key), *slot, value));
    storeElement(arena + var.tensor.offset, DType::F64,
                 slot - s.slots.begin(), value);
  }
  return Status::ok();
}

std::string describeSchedule(const Manifest &manifest, const uint8_t *arena) {
  if (!manifest.schedule)
    return "none";
  const Schedule &s = *manifest.schedule;
  const Variable &var = *manifest.findVariable(s.variable);
  std::string out = s.kind + ":";
  for (size_t i = 0; i < s.slots.size(); ++i)
    out += fmt::format(" {}={:g}", s.slots[i],
                       loadElement(arena + var.tensor.offset, DType::F64,
                                   static_cast<int64_t>(i)));
  return out;
}

} // namespace kiln::rt::exec
