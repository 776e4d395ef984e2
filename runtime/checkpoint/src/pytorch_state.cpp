//===- pytorch_state.cpp - Kiln checkpoints <-> PyTorch state dicts -------===//

#include "kiln/rt/pytorch_state.h"

#include <cstring>
#include <set>

namespace kiln::rt::safetensors {

namespace {

/// `t` with its dimensions permuted: result dimension d is t's dimension
/// perm[d]. Works on raw elements of any size.
Tensor permute(const Tensor &t, const std::vector<int> &perm) {
  size_t rank = t.shape.size(), element = dtypeSize(t.dtype);
  Tensor out;
  out.name = t.name;
  out.dtype = t.dtype;
  out.bytes.resize(t.bytes.size());
  std::vector<int64_t> inStrides(rank, 1);
  for (size_t d = rank; d-- > 1;)
    inStrides[d - 1] = inStrides[d] * t.shape[d];
  for (size_t d = 0; d < rank; ++d)
    out.shape.push_back(t.shape[perm[d]]);
  std::vector<int64_t> index(rank, 0);
  for (int64_t n = 0, count = t.numElements(); n < count; ++n) {
    int64_t source = 0;
    for (size_t d = 0; d < rank; ++d)
      source += index[d] * inStrides[perm[d]];
    std::memcpy(out.bytes.data() + n * element,
                t.bytes.data() + source * element, element);
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < out.shape[d])
        break;
      index[d] = 0;
    }
  }
  return out;
}

bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// HWIO <-> OIHW and [in, out] <-> [out, in].
const std::vector<int> kHwioToOihw = {3, 2, 0, 1};
const std::vector<int> kOihwToHwio = {2, 3, 1, 0};
const std::vector<int> kSwap = {1, 0};

Tensor toLayout(const Tensor &t, const std::vector<int> &conv) {
  if (t.shape.size() == 4)
    return permute(t, conv);
  if (t.shape.size() == 2)
    return permute(t, kSwap);
  return t;
}

} // namespace

StatusOr<File> toPyTorchState(const File &checkpoint,
                              const std::string &what) {
  auto meta = [&](const char *key) {
    auto it = checkpoint.metadata.find(key);
    return it == checkpoint.metadata.end() ? std::string() : it->second;
  };
  if (meta("format") != "kiln-checkpoint")
    return KILN_STATUS(kInvalidArgument,
                       what + " is not a Kiln checkpoint (its metadata has "
                              "format '" +
                           meta("format") + "', not 'kiln-checkpoint')");
  char *end = nullptr;
  std::string stepText = meta("step");
  long long step = std::strtoll(stepText.c_str(), &end, 10);
  if (stepText.empty() || *end || step < 0)
    return KILN_STATUS(kInvalidArgument,
                       what + ": the metadata's step '" + stepText +
                           "' is not a step number");
  std::set<std::string> names;
  for (const Tensor &t : checkpoint.tensors)
    names.insert(t.name);
  File state;
  state.metadata = {{"format", "pt"},
                    {"kiln_model", meta("model")},
                    {"kiln_step", stepText}};
  for (const Tensor &t : checkpoint.tensors) {
    size_t dot = t.name.rfind('.');
    bool slot = dot != std::string::npos && names.count(t.name.substr(0, dot));
    if (t.name.rfind("kiln.", 0) == 0 || slot)
      continue; // optimizer state and the schedule
    state.tensors.push_back(toLayout(t, kHwioToOihw));
    // After running_var, where PyTorch's batch norm has it.
    if (endsWith(t.name, ".running_var")) {
      std::string bn = t.name.substr(0, t.name.size() - 12);
      state.tensors.push_back(fromI64(bn + ".num_batches_tracked", {}, {step}));
    }
  }
  return state;
}

StatusOr<File> fromPyTorchState(const File &state, const std::string &what) {
  File values;
  values.metadata = {{"format", "kiln-initial-values"}, {"source", what}};
  for (const Tensor &t : state.tensors) {
    if (endsWith(t.name, ".num_batches_tracked"))
      continue; // Kiln's batch norm counts no batches
    if (t.shape.size() > 4)
      return KILN_STATUS(kInvalidArgument,
                         what + ": tensor '" + t.name + "' has rank " +
                             std::to_string(t.shape.size()) +
                             "; Kiln's variables have rank 4 at most");
    values.tensors.push_back(toLayout(t, kOihwToHwio));
  }
  return values;
}

} // namespace kiln::rt::safetensors
