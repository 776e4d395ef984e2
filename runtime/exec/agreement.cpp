//===- agreement.cpp - What the ranks of a job must agree on --------------===//

#include "kiln/rt/exec/agreement.h"

#include "kiln/rt/exec/variables.h"
#include "kiln/rt/files.h"
#include "kiln/rt/manifest_generated.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <link.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>

namespace kiln::rt::exec {
namespace {

std::string onOff(bool on) { return on ? "on" : "off"; }

std::string number(double x) { return fmt::format("{}", x); }

/// The training and validation shards of `dir` by name and size: the data
/// every rank must read the same way (file i goes to a rank by its index in
/// this list), wherever each node keeps it.
RankField describeData(const std::string &dir) {
  RankField field{"input", "", "", false};
  std::string key;
  std::vector<std::string> parts;
  for (const char *split : {"train", "validation"}) {
    StatusOr<std::vector<std::string>> paths = listShards(dir, split);
    if (!paths.isOk()) {
      if (std::string(split) == "validation")
        continue; // evaluation says so if it needs them
      field.value = "data: " + paths.status().message();
      field.shown = "--data " + dir + " (" + paths.status().message() + ")";
      return field;
    }
    int64_t bytes = 0;
    for (const std::string &path : *paths) {
      struct stat st;
      int64_t size = ::stat(path.c_str(), &st) == 0 ? int64_t(st.st_size) : -1;
      bytes += std::max<int64_t>(size, 0);
      key += path.substr(path.rfind('/') + 1) + ":" + std::to_string(size) +
             "\n";
    }
    parts.push_back(fmt::format("{} {} shard{} of {} bytes", paths->size(),
                                split, paths->size() == 1 ? "" : "s", bytes));
  }
  field.value = fmt::format("data {:016x}", fnv1a(key));
  field.shown = fmt::format("--data {} ({}; names and sizes {:08x})", dir,
                            fmt::join(parts, ", "), fnv1a(key) >> 32);
  return field;
}

/// The command-line flag of a schedule override (RunOptions's alias).
std::string scheduleFlag(const std::string &alias) {
  if (!alias.empty() && alias[0] == '=')
    return "--set-schedule " + alias.substr(1);
  std::string flag = "--" + alias;
  std::replace(flag.begin(), flag.end(), '_', '-');
  return flag;
}

std::string floatList(const std::vector<float> &values) {
  if (values.empty())
    return "default";
  return fmt::format("{}", fmt::join(values, ","));
}

/// A digest of the structure the ranks exchange raw bytes of: the variables
/// (the start-up broadcast copies [0, persistent_bytes) as it is) and the
/// allreduce buckets (every rank reduces the same counts in the same order).
std::string tensorKey(const TensorRef &t) {
  return fmt::format("{}@{}[{}]{}", dtypeInfo(t.dtype).name, t.offset,
                     fmt::join(t.shape, ","), layoutName(t.layout));
}

std::string compiledSchedule(const Manifest &manifest) {
  if (!manifest.schedule)
    return "none";
  const Schedule &s = *manifest.schedule;
  const Variable *v = manifest.findVariable(s.variable);
  std::vector<std::string> slots;
  for (size_t i = 0; i < s.slots.size(); ++i) {
    const std::string &slot = s.slots[i];
    if (auto e = s.epochs.find(slot); e != s.epochs.end())
      slots.push_back(fmt::format("{}={} epochs", slot, e->second));
    else if (slot == s.runLength)
      slots.push_back(slot + "=the run's length");
    else if (v && v->init == InitKind::Constant && i < v->value.size())
      slots.push_back(fmt::format("{}={}", slot, v->value[i]));
    else if (v && v->init == InitKind::Constant && v->value.size() == 1)
      slots.push_back(fmt::format("{}={}", slot, v->value[0]));
    else
      slots.push_back(slot);
  }
  return fmt::format("{} {}", s.kind, fmt::join(slots, " "));
}

/// A JSON number as the f32 an attribute held ("0.899999976" -> "0.9"):
/// the compiler writes f32 attributes widened to double.
std::string attributeNumber(const std::string &text) {
  char *end = nullptr;
  double d = std::strtod(text.c_str(), &end);
  if (end == text.c_str())
    return text;
  float f = static_cast<float>(d);
  return double(f) == d ? fmt::format("{}", f) : fmt::format("{}", d);
}

/// Appends `text` with its length, so that any bytes survive.
void putString(std::string &out, const std::string &text) {
  out += std::to_string(text.size());
  out += ':';
  out += text;
}

bool getString(std::string_view &in, std::string &out) {
  size_t colon = in.find(':');
  if (colon == std::string_view::npos || colon == 0 || colon > 19)
    return false;
  uint64_t n = 0;
  for (char c : in.substr(0, colon)) {
    if (c < '0' || c > '9')
      return false;
    n = n * 10 + uint64_t(c - '0');
  }
  in.remove_prefix(colon + 1);
  if (n > in.size())
    return false;
  out.assign(in.substr(0, n));
  in.remove_prefix(n);
  return true;
}

int dlCallback(dl_phdr_info *info, size_t, void *data) {
  auto *hash = static_cast<uint64_t *>(data);
  // The first object is the main program.
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr) &ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
      continue;
    const char *begin = reinterpret_cast<const char *>(info->dlpi_addr +
                                                       ph.p_vaddr);
    *hash = fnv1a(std::string_view(begin, ph.p_memsz), *hash);
  }
  return 1; // stop after the main program
}

} // namespace

uint64_t fnv1a(std::string_view bytes, uint64_t hash) {
  for (unsigned char c : bytes) {
    hash ^= c;
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

uint64_t executableCodeDigest() {
  uint64_t hash = 0xcbf29ce484222325ULL;
  dl_iterate_phdr(dlCallback, &hash);
  return hash;
}

// RunOptions, field by field. Must agree: what the job trains on, for how
// long, in which order, with which schedule, and every flag that decides
// whether a rank takes part in a collective (--model-dir given or not and
// --checkpoint-every: the checkpoint broadcasts; --eval, --eval-every-epoch:
// the evaluation's sums; --verify-replicas: its allgather; --interrupt-
// snapshot, --resume; --allreduce: the messages of the bucket reductions).
// May differ per rank, and are not compared: where
// things are (the --data and --model-dir paths: only rank 0 writes, and
// nodes may keep the data elsewhere; the data itself is compared by its
// shards' names and sizes), how a rank computes (--threads,
// --weights-format, --conv-algorithm, --data-workers, --prefetch: the
// averaged gradient is the same on every rank whatever they are), and what
// only rank 0 uses or a rank decides alone (--log-every, --profile,
// --keep-checkpoints, --comm, --comm-timeout, --comm-trace). --predict and --labels never
// get here: prediction runs on rank 0 alone, without a collective.
RankFields describeRunFlags(const RunOptions &o) {
  RankFields fields;
  auto add = [&](std::string name, std::string value, std::string shown = "") {
    fields.push_back({std::move(name), std::move(value), std::move(shown),
                      false});
  };
  if (o.synthetic)
    add("input", "synthetic", "--synthetic");
  else
    fields.push_back(describeData(o.dataDir));
  add("--synthetic-batches", std::to_string(o.syntheticBatches));
  const char *augment = o.augment == Augment::RandomResizedCrop
                            ? "random-resized-crop"
                        : o.augment == Augment::PadCrop ? "pad-crop"
                                                        : "none";
  add("--augment", augment);
  if (o.augment == Augment::PadCrop)
    add("--pad-crop", std::to_string(o.pad));
  add("--flip", onOff(o.flip));
  add("--mean", floatList(o.mean));
  add("--std", floatList(o.stddev));
  add("--shuffle-buffer", std::to_string(o.shuffleBuffer));
  add("--skip-bad-records", onOff(o.skipBadRecords));
  add("--label-offset", std::to_string(o.labelOffset));
  if (o.steps)
    add("--steps", std::to_string(*o.steps));
  if (o.epochs)
    add("--epochs", number(*o.epochs));
  add("--seed", std::to_string(o.seed));
  // The last value of each schedule flag is the one in effect.
  std::map<std::string, double> overrides;
  std::vector<std::string> order;
  for (const auto &[alias, value] : o.scheduleOverrides) {
    if (!overrides.count(alias))
      order.push_back(alias);
    overrides[alias] = value;
  }
  for (const std::string &alias : order)
    add(scheduleFlag(alias), number(overrides[alias]));
  if (o.warmupEpochs)
    add("--warmup-epochs", number(*o.warmupEpochs));
  if (o.decayEpochs)
    add("--decay-epochs", number(*o.decayEpochs));
  if (o.stepsPerEpoch)
    add("--steps-per-epoch", std::to_string(*o.stepsPerEpoch));
  add("--model-dir", o.modelDir.empty() ? "not given" : "given",
      o.modelDir.empty() ? "not given" : o.modelDir);
  add("--checkpoint-every", std::to_string(o.checkpointEvery));
  add("--resume", onOff(o.resume));
  add("--interrupt-snapshot",
      o.interruptSnapshot == InterruptSnapshot::Auto ? "auto"
      : o.interruptSnapshot == InterruptSnapshot::On ? "on"
                                                     : "off");
  add("--eval", onOff(o.eval));
  add("--eval-every-epoch", onOff(o.evalEveryEpoch));
  add("--verify-replicas", onOff(o.verifyReplicas));
  std::string dims;
  for (int d : o.torusDims)
    dims += (dims.empty() ? "" : "x") + std::to_string(d);
  add("--allreduce", o.allreduce == AllreduceAlgorithm::Ring    ? "ring"
                     : o.allreduce == AllreduceAlgorithm::Torus ? "torus " + dims
                                                                : "library");
  return fields;
}

std::string manifestPrecision(const Manifest &manifest) {
  for (const Call &call : manifest.calls)
    for (const auto &[name, t] : call.operands)
      if (t.dtype == DType::BF16)
        return "bf16";
  for (const auto &[role, function] : manifest.functions)
    for (const auto &[name, t] : function.inputs)
      if (t.dtype == DType::BF16)
        return "bf16";
  return "fp32";
}

std::string manifestOptimizer(std::string_view manifestBytes) {
  const fb::Manifest *root = verifyManifest(manifestBytes);
  if (!root || !root->optimizer())
    return "not recorded (kilnc wrote no \"optimizer\" in the manifest)";
  auto text = [](const flatbuffers::String *s) {
    return s ? s->str() : std::string("?");
  };
  std::vector<std::string> parts;
  for (const fb::OptimizerEntry *entry : *root->optimizer()) {
    std::vector<std::string> attrs;
    if (entry->attributes())
      for (const fb::OptimizerAttribute *a : *entry->attributes()) {
        std::string name = a->name()->str(), value = a->value()->str();
        if (a->kind() == fb::AttributeKind::boolean)
          attrs.push_back(value == "true" ? name : name + "=false");
        else if (a->kind() == fb::AttributeKind::number)
          attrs.push_back(name + "=" + attributeNumber(value));
        else
          attrs.push_back(name + "=" + value);
      }
    parts.push_back(fmt::format("{}({}) x{}", text(entry->update()),
                                fmt::join(attrs, " "), entry->parameters()));
  }
  return fmt::format("{}", fmt::join(parts, " + "));
}

RankFields describeModel(const Manifest &manifest,
                         std::string_view manifestBytes) {
  RankFields fields;
  auto add = [&](std::string name, std::string value, std::string shown = "",
                 bool backstop = false) {
    fields.push_back(
        {std::move(name), std::move(value), std::move(shown), backstop});
  };
  add("model", manifest.model);
  add("model ABI", std::to_string(manifest.abi));
  add("batch", std::to_string(manifest.batch));
  add("precision", manifestPrecision(manifest));
  add("optimizer", manifestOptimizer(manifestBytes));
  add("schedule", compiledSchedule(manifest));

  std::string variables;
  for (const Variable &v : manifest.variables)
    variables += fmt::format("{} {} {}\n", v.name,
                             v.kind == VariableKind::Parameter ? "p" : "s",
                             tensorKey(v.tensor));
  uint64_t variablesDigest = fnv1a(variables);
  add("variables", fmt::format("{:016x}", variablesDigest),
      fmt::format("{} variables in {} bytes (digest {:08x})",
                  manifest.variables.size(), manifest.persistentBytes,
                  variablesDigest >> 32),
      true);
  std::string buckets;
  std::vector<int64_t> counts;
  for (const Bucket &b : manifest.buckets) {
    int64_t n = 0;
    buckets += std::to_string(b.id) + ":";
    for (const TensorRef &t : b.tensors) {
      buckets += tensorKey(t) + " ";
      n += t.numElements();
    }
    buckets += "\n";
    counts.push_back(n);
  }
  uint64_t bucketsDigest = fnv1a(buckets);
  add("allreduce buckets", fmt::format("{:016x}", bucketsDigest),
      counts.size() <= 6
          ? fmt::format("{} of {} elements", counts.size(),
                        fmt::join(counts, ", "))
          : fmt::format("{} (digest {:08x})", counts.size(),
                        bucketsDigest >> 32),
      true);
  uint64_t textDigest = fnv1a(manifestBytes);
  add("manifest", fmt::format("{:016x}", textDigest),
      fmt::format("digest {:016x}", textDigest), true);
  return fields;
}

std::string serializeRankFields(const RankFields &fields) {
  std::string out;
  for (const RankField &f : fields) {
    putString(out, f.name);
    putString(out, f.value);
    putString(out, f.shown);
    out += f.backstop ? 'b' : 'n';
  }
  return out;
}

StatusOr<RankFields> parseRankFields(std::string_view text) {
  RankFields fields;
  size_t total = text.size();
  while (!text.empty()) {
    RankField f;
    if (!getString(text, f.name) || !getString(text, f.value) ||
        !getString(text, f.shown) || text.empty() ||
        (text[0] != 'b' && text[0] != 'n'))
      return KILN_STATUS(kInvalidArgument,
                         fmt::format("malformed rank description at byte {} "
                                     "of {}",
                                     total - text.size(), total));
    f.backstop = text[0] == 'b';
    text.remove_prefix(1);
    fields.push_back(std::move(f));
  }
  return fields;
}

std::string describeDisagreement(int rank, int size, const RankFields &mine,
                                 const RankFields &rankZero) {
  auto find = [](const RankFields &fields, const std::string &name) {
    return std::find_if(fields.begin(), fields.end(),
                        [&](const RankField &f) { return f.name == name; });
  };
  std::vector<std::pair<const RankField *, const RankField *>> primary,
      backstops;
  auto consider = [&](const RankField *a, const RankField *zero) {
    if (a && zero && a->value == zero->value)
      return;
    bool backstop = (a && a->backstop) || (zero && zero->backstop);
    (backstop ? backstops : primary).push_back({a, zero});
  };
  for (const RankField &zero : rankZero) {
    auto it = find(mine, zero.name);
    consider(it == mine.end() ? nullptr : &*it, &zero);
  }
  for (const RankField &f : mine)
    if (find(rankZero, f.name) == rankZero.end())
      consider(&f, nullptr);
  const auto &differing = primary.empty() ? backstops : primary;
  if (differing.empty())
    return "";
  // A few in full: a different model differs in many fields, and the
  // first ones say what matters.
  constexpr size_t kShown = 3;
  std::vector<std::string> parts, rest;
  for (const auto &[a, zero] : differing) {
    const std::string &name = a ? a->name : zero->name;
    if (parts.size() == kShown) {
      rest.push_back(name);
      continue;
    }
    parts.push_back(fmt::format("{} {} (rank 0: {})", name,
                                a ? a->display() : "not given",
                                zero ? zero->display() : "not given"));
  }
  std::string text = fmt::format("rank {} of {} differs from rank 0: {}", rank,
                                 size, fmt::join(parts, "; "));
  if (!rest.empty())
    text += fmt::format("; and in {}", fmt::join(rest, ", "));
  return text;
}

StatusOr<Agreement> checkRanksAgree(Comm &comm, const RankFields &fields) {
  Agreement agreement;
  if (comm.size() == 1)
    return agreement;
  std::string text = serializeRankFields(fields);
  uint64_t digest = fnv1a(text);
  KILN_ASSIGN_OR_RETURN(std::vector<uint64_t> digests, comm.allgather(digest));
  if (std::all_of(digests.begin(), digests.end(),
                  [&](uint64_t d) { return d == digests[0]; }))
    return agreement;

  agreement.agreed = false;
  KILN_ASSIGN_OR_RETURN(std::vector<std::string> texts,
                        comm.allgatherText(text));
  std::vector<RankFields> all;
  for (size_t r = 0; r < texts.size(); ++r) {
    StatusOr<RankFields> parsed = parseRankFields(texts[r]);
    if (!parsed.isOk())
      return KILN_STATUS(kInternal, fmt::format("rank {}'s description: {}",
                                                r, parsed.status().message()));
    all.push_back(std::move(*parsed));
  }
  // At most this many lines on rank 0: with many ranks differing alike,
  // the first say it all.
  constexpr int kLines = 8;
  int differing = 0;
  for (int r = 1; r < comm.size(); ++r) {
    std::string line =
        describeDisagreement(r, comm.size(), all[size_t(r)], all[0]);
    if (line.empty())
      continue; // differs in field order only: cannot happen with one build
    ++differing;
    if (comm.rank() == r ||
        (comm.rank() == 0 && differing <= kLines))
      agreement.messages.push_back(line);
  }
  // Digests that differ in field order alone are no disagreement.
  agreement.agreed = differing == 0;
  if (comm.rank() == 0 && differing > kLines)
    agreement.messages.push_back(
        fmt::format("{} more of the {} ranks differ from rank 0",
                    differing - kLines, comm.size()));
  return agreement;
}

Status checkScheduleAgrees(const Manifest &manifest, const uint8_t *arena,
                           Comm &comm) {
  if (!manifest.schedule)
    return Status::ok();
  const Variable *v = manifest.findVariable(manifest.schedule->variable);
  if (!v)
    return Status::ok(); // parseManifest refuses such a manifest
  RankFields fields;
  const std::vector<std::string> &slots = manifest.schedule->slots;
  for (size_t i = 0; i < slots.size() && int64_t(i) < v->tensor.numElements();
       ++i)
    fields.push_back({"schedule " + slots[i],
                      number(loadElement(arena + v->tensor.offset,
                                         v->tensor.dtype, int64_t(i))),
                      "", false});
  KILN_ASSIGN_OR_RETURN(Agreement agreement, checkRanksAgree(comm, fields));
  if (agreement.agreed)
    return Status::ok();
  return KILN_STATUS(
      kInternal,
      agreement.messages.empty()
          ? fmt::format("rank {} of {}: the ranks resolved the schedule "
                        "differently (rank 0 says how)",
                        comm.rank(), comm.size())
          : fmt::format("the schedule in effect: {}",
                        fmt::join(agreement.messages, "; ")));
}

} // namespace kiln::rt::exec
