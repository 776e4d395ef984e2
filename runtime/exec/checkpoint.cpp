//===- checkpoint.cpp - Checkpoints as safetensors files ------------------===//

#include "kiln/rt/exec/checkpoint.h"

#include "kiln/rt/exec/variables.h"
#include "kiln/rt/safetensors.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <string_view>

namespace kiln::rt::exec {

namespace st = safetensors;

namespace {

constexpr const char *kPrefix = "ckpt-";
constexpr const char *kSuffix = ".safetensors";

bool parseCheckpointName(const std::string &name, int64_t &step) {
  size_t p = std::strlen(kPrefix), s = std::strlen(kSuffix);
  if (name.size() <= p + s || name.compare(0, p, kPrefix) != 0 ||
      name.compare(name.size() - s, s, kSuffix) != 0)
    return false;
  std::string digits = name.substr(p, name.size() - p - s);
  if (digits.empty() || digits.size() > 18 ||
      digits.find_first_not_of("0123456789") != std::string::npos)
    return false;
  step = std::stoll(digits);
  return true;
}

bool parseInt(const std::map<std::string, std::string> &m, const char *key,
              int64_t &out) {
  auto it = m.find(key);
  if (it == m.end() || it->second.empty() ||
      it->second.find_first_not_of("0123456789") != std::string::npos ||
      it->second.size() > 18)
    return false;
  out = std::stoll(it->second);
  return true;
}

/// Whether `name` is a temporary that safetensors::write left behind for a
/// checkpoint: "." + the checkpoint's name + ".tmp-" + mkstemp's six
/// letters or digits (runtime/checkpoint/src/safetensors.cpp).
bool isCheckpointTemporary(const std::string &name) {
  static constexpr std::string_view kTmp = ".tmp-";
  constexpr size_t kRandom = 6;
  if (name.size() < 1 + kTmp.size() + kRandom || name[0] != '.')
    return false;
  size_t tmp = name.size() - kRandom - kTmp.size();
  if (name.compare(tmp, kTmp.size(), kTmp) != 0)
    return false;
  for (size_t i = name.size() - kRandom; i < name.size(); ++i)
    if (!std::isalnum(static_cast<unsigned char>(name[i])))
      return false;
  // Exactly the names checkpointPath gives (10 digits at least).
  std::string checkpoint = name.substr(1, tmp - 1);
  int64_t step;
  return parseCheckpointName(checkpoint, step) &&
         checkpointPath("", step) == "/" + checkpoint;
}

} // namespace

std::string checkpointPath(const std::string &dir, int64_t step) {
  return fmt::format("{}/{}{:010}{}", dir, kPrefix, step, kSuffix);
}

StatusOr<std::vector<std::pair<int64_t, std::string>>>
listCheckpoints(const std::string &dir) {
  DIR *d = ::opendir(dir.c_str());
  if (!d && errno == ENOENT)
    return std::vector<std::pair<int64_t, std::string>>{};
  KILN_CHECK_LIBC_PTR(d, "open model directory " + dir);
  std::vector<std::pair<int64_t, std::string>> out;
  while (dirent *e = ::readdir(d)) {
    int64_t step;
    if (parseCheckpointName(e->d_name, step))
      out.emplace_back(step, dir + "/" + e->d_name);
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

StatusOr<std::vector<std::string>>
removeStaleTemporaries(const std::string &dir) {
  std::vector<std::string> removed;
  DIR *d = ::opendir(dir.c_str());
  if (!d && errno == ENOENT)
    return removed;
  KILN_CHECK_LIBC_PTR(d, "open model directory " + dir);
  std::vector<std::string> names;
  while (dirent *e = ::readdir(d))
    if (isCheckpointTemporary(e->d_name))
      names.push_back(e->d_name);
  ::closedir(d);
  std::sort(names.begin(), names.end());
  for (const std::string &name : names) {
    std::string path = dir + "/" + name;
    // Gone already: another start-up cleaned it; nothing to report.
    if (::unlink(path.c_str()) != 0 && errno != ENOENT)
      KILN_CHECK_LIBC(-1, "remove stale temporary checkpoint " + path);
    removed.push_back(path);
  }
  return removed;
}

void copyCheckpointTensors(const Manifest &manifest, const uint8_t *arena,
                           st::File &file) {
  size_t i = 0;
  for (const Variable &v : manifest.variables) {
    // Copies are derived, so bf16 and f32 builds of a model share
    // checkpoints.
    if (v.isCopy())
      continue;
    if (i == file.tensors.size()) {
      st::Tensor t;
      t.name = v.name;
      t.dtype = st::fromKilnDType(v.tensor.dtype);
      t.shape = v.tensor.shape;
      file.tensors.push_back(std::move(t));
    }
    const uint8_t *p = arena + v.tensor.offset;
    file.tensors[i++].bytes.assign(p, p + v.tensor.byteSize());
  }
}

Status writeCheckpointFile(const std::string &dir, const Manifest &manifest,
                           const CheckpointInfo &info, st::File &file,
                           int64_t keep) {
  int64_t spe = info.stepsPerEpoch;
  file.metadata = {
      {"format", "kiln-checkpoint"},
      {"model", manifest.model},
      {"abi", std::to_string(manifest.abi)},
      {"step", std::to_string(info.step)},
      {"epoch", spe ? fmt::format("{:.6f}", double(info.step) / double(spe))
                    : "0"},
      {"batch_in_epoch", std::to_string(spe ? info.step % spe : info.step)},
      {"steps_per_epoch", std::to_string(spe)},
      {"seed", std::to_string(info.seed)},
      {"world_size", std::to_string(info.worldSize)},
      {"batch", std::to_string(manifest.batch)},
      {"data", info.data},
      {"rng", "counter-based: data order and augmentation from (seed, epoch, "
              "rank, record position), synthetic batches from (seed, rank, "
              "step)"},
  };
  std::string path = checkpointPath(dir, info.step);
  if (Status s = st::write(path, file); !s.isOk())
    return KILN_STATUS(kIoError, "writing checkpoint: " + s.message());

  KILN_ASSIGN_OR_RETURN(auto existing, listCheckpoints(dir));
  for (size_t i = 0; i + static_cast<size_t>(keep) < existing.size(); ++i)
    KILN_CHECK_LIBC(::unlink(existing[i].second.c_str()),
                    "delete old checkpoint " + existing[i].second);
  return Status::ok();
}

Status saveCheckpoint(const std::string &dir, const Manifest &manifest,
                      const uint8_t *arena, const CheckpointInfo &info,
                      int64_t keep) {
  st::File file;
  copyCheckpointTensors(manifest, arena, file);
  return writeCheckpointFile(dir, manifest, info, file, keep);
}

std::optional<NonFiniteVariable> findNonFiniteTensor(const Manifest &manifest,
                                                     const st::File &file) {
  for (const Variable &v : manifest.variables) {
    if (v.isCopy())
      continue;
    const st::Tensor *t = file.find(v.name);
    if (!t || int64_t(t->bytes.size()) != v.tensor.byteSize())
      continue; // not this model's: the loader says so
    if (std::optional<NonFinite> bad =
            findNonFinite(t->bytes.data(), v.tensor.dtype,
                          v.tensor.numElements()))
      return NonFiniteVariable{&v, *bad};
  }
  return std::nullopt;
}

StatusOr<std::optional<LoadedCheckpoint>>
loadNewestCheckpoint(const std::string &dir, const Manifest &manifest,
                     uint8_t *arena, std::vector<std::string> &warnings) {
  KILN_ASSIGN_OR_RETURN(auto existing, listCheckpoints(dir));
  for (auto it = existing.rbegin(); it != existing.rend(); ++it) {
    const std::string &path = it->second;
    st::File file;
    if (Status s = st::read(path, file); !s.isOk()) {
      warnings.push_back(fmt::format("skipping damaged checkpoint {}: {}",
                                     path, s.message()));
      continue;
    }
    LoadedCheckpoint loaded;
    loaded.path = path;
    loaded.metadata = file.metadata;
    int64_t seed = 0, spe = 0, world = 1;
    if (file.metadata["format"] != "kiln-checkpoint" ||
        !parseInt(file.metadata, "step", loaded.info.step) ||
        !parseInt(file.metadata, "seed", seed) ||
        !parseInt(file.metadata, "steps_per_epoch", spe) ||
        !parseInt(file.metadata, "world_size", world)) {
      warnings.push_back(fmt::format(
          "skipping checkpoint {}: its metadata lacks format=kiln-checkpoint "
          "or a valid step, seed, steps_per_epoch or world_size",
          path));
      continue;
    }
    loaded.info.seed = static_cast<uint64_t>(seed);
    loaded.info.stepsPerEpoch = spe;
    loaded.info.worldSize = world;
    loaded.info.data = file.metadata["data"];

    // All-or-nothing: check every variable before writing any. Copies are
    // not in checkpoints; they are refilled from their sources below.
    size_t saved = 0;
    for (const Variable &v : manifest.variables) {
      if (v.isCopy())
        continue;
      ++saved;
      const st::Tensor *t = file.find(v.name);
      if (!t)
        return KILN_STATUS(kInvalidArgument,
                           fmt::format("checkpoint {} has no variable '{}': "
                                       "it belongs to another model ({})",
                                       path, v.name, file.metadata["model"]));
      if (t->dtype != st::fromKilnDType(v.tensor.dtype) ||
          t->shape != v.tensor.shape)
        return KILN_STATUS(
            kInvalidArgument,
            fmt::format("checkpoint {}: variable '{}' is {}{} there but {}{} "
                        "in the model",
                        path, v.name, st::dtypeName(t->dtype),
                        fmt::format("[{}]", fmt::join(t->shape, ",")),
                        dtypeInfo(v.tensor.dtype).name,
                        fmt::format("[{}]", fmt::join(v.tensor.shape, ","))));
    }
    if (file.tensors.size() != saved)
      return KILN_STATUS(kInvalidArgument,
                         fmt::format("checkpoint {} holds {} tensors, the "
                                     "model {} variables (not counting "
                                     "copies)",
                                     path, file.tensors.size(), saved));
    // Checkpoints are checked before they are written, but one written by
    // an older runtime, or changed since, may hold the values that ended a
    // diverged run; resuming from it would diverge again at once.
    if (std::optional<NonFiniteVariable> bad =
            findNonFiniteTensor(manifest, file)) {
      warnings.push_back(fmt::format(
          "skipping checkpoint {}: tensor '{}' holds {} (element {}); it was "
          "written after the run diverged",
          path, bad->variable->name, nonFiniteName(bad->element.value),
          bad->element.index));
      continue;
    }
    for (const Variable &v : manifest.variables) {
      if (v.isCopy())
        continue;
      const st::Tensor *t = file.find(v.name);
      std::memcpy(arena + v.tensor.offset, t->bytes.data(), t->bytes.size());
    }
    KILN_RETURN_IF_ERROR(refreshCopies(manifest, arena));
    return std::optional<LoadedCheckpoint>(std::move(loaded));
  }
  // Starting afresh would silently throw the run away, and the first
  // checkpoints of the new run would prune the old ones.
  if (!existing.empty())
    return KILN_STATUS(
        kDataLoss,
        fmt::format("none of the {} checkpoint{} in {} can be resumed (the "
                    "warnings say why); move {} away to start afresh",
                    existing.size(), existing.size() == 1 ? "" : "s", dir,
                    existing.size() == 1 ? "it" : "them"));
  return std::optional<LoadedCheckpoint>();
}

Status loadInitialValues(const std::string &path, const Manifest &manifest,
                         uint8_t *arena) {
  st::File file;
  KILN_RETURN_IF_ERROR(st::read(path, file));
  // PyTorch's safetensors files say format "pt", or nothing at all.
  const std::string &format = file.metadata["format"];
  if (format != "kiln-initial-values" && format != "kiln-checkpoint")
    return KILN_STATUS(
        kInvalidArgument,
        fmt::format("--init-from {}: not in Kiln's layouts (its metadata has "
                    "format '{}', not kiln-checkpoint or "
                    "kiln-initial-values); a PyTorch state dict must be "
                    "converted first: kiln-checkpoint from-pytorch {} -o FILE",
                    path, format, path));
  std::map<std::string, const Variable *> variables;
  for (const Variable &v : manifest.variables)
    if (!v.isCopy())
      variables[v.name] = &v;
  for (const st::Tensor &t : file.tensors) {
    auto it = variables.find(t.name);
    if (it == variables.end())
      return KILN_STATUS(kInvalidArgument,
                         fmt::format("--init-from {}: tensor '{}' is not a "
                                     "variable of the model",
                                     path, t.name));
    const Variable &v = *it->second;
    if (t.dtype != st::fromKilnDType(v.tensor.dtype) ||
        t.shape != v.tensor.shape)
      return KILN_STATUS(
          kInvalidArgument,
          fmt::format("--init-from {}: tensor '{}' is {}[{}] there but {}[{}] "
                      "in the model",
                      path, t.name, st::dtypeName(t.dtype),
                      fmt::join(t.shape, ","), dtypeInfo(v.tensor.dtype).name,
                      fmt::join(v.tensor.shape, ",")));
  }
  for (const auto &[name, v] : variables)
    if (v->kind == VariableKind::Parameter && !file.find(name))
      return KILN_STATUS(kInvalidArgument,
                         fmt::format("--init-from {}: it has no value for "
                                     "the parameter '{}'",
                                     path, name));
  if (std::optional<NonFiniteVariable> bad =
          findNonFiniteTensor(manifest, file))
    return KILN_STATUS(kInvalidArgument,
                       fmt::format("--init-from {}: tensor '{}' holds {} "
                                   "(element {})",
                                   path, bad->variable->name,
                                   nonFiniteName(bad->element.value),
                                   bad->element.index));
  for (const st::Tensor &t : file.tensors)
    std::memcpy(arena + variables[t.name]->tensor.offset, t.bytes.data(),
                t.bytes.size());
  return refreshCopies(manifest, arena);
}

} // namespace kiln::rt::exec
