//===- checkpoint.h - Saving and resuming training state --------*- C++ -*-===//
//
// A checkpoint is a safetensors file (runtime/checkpoint, written to a
// temporary file, fsynced and renamed, so a crash never leaves a torn file)
// named ckpt-<step, 10 digits>.safetensors in the model directory. It holds
// every manifest variable by name, with its dtype and shape — parameters,
// momentum, BN statistics, the schedule — except copies (derived from their
// sources, so builds with and without them share checkpoints), and
// "__metadata__" strings:
//
//   format=kiln-checkpoint  model  abi  step  epoch  batch_in_epoch
//   steps_per_epoch  seed  world_size  batch  data  rng
//
// Nothing else is needed to continue bit for bit: data order and augmentation
// are counter-based functions of (seed, epoch, rank, record position), and
// synthetic batches of (seed, rank, step), so "rng" only records that.
//
// Loading picks the newest checkpoint that reads cleanly and holds finite
// values only; a damaged one (truncated, bad header, missing step) or one
// with a NaN or Inf is skipped with a warning, and if none is left that is
// an error rather than a fresh start. A checkpoint of a different model (a
// variable missing, or of another dtype or shape) is an error, not a reason
// to fall back.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RT_EXEC_CHECKPOINT_H
#define KILN_RT_EXEC_CHECKPOINT_H

#include "kiln/base/status.h"
#include "kiln/rt/exec/manifest.h"
#include "kiln/rt/exec/variables.h"
#include "kiln/rt/safetensors.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kiln::rt::exec {

struct CheckpointInfo {
  int64_t step = 0;
  uint64_t seed = 0;
  int64_t stepsPerEpoch = 0; ///< 0 for synthetic data
  int64_t worldSize = 1;
  std::string data; ///< the --data directory, or "synthetic"
};

/// "<dir>/ckpt-0000000120.safetensors"
std::string checkpointPath(const std::string &dir, int64_t step);

/// Checkpoints in `dir`, oldest first, as (step, path).
StatusOr<std::vector<std::pair<int64_t, std::string>>>
listCheckpoints(const std::string &dir);

/// Deletes the temporaries that checkpoint writes interrupted by a crash or
/// SIGKILL left in `dir` (".ckpt-<step>.safetensors.tmp-XXXXXX", exactly
/// the names safetensors::write gives them, nothing else) and returns their
/// paths. Call it before a run writes: a writer in progress owns its
/// temporary.
StatusOr<std::vector<std::string>>
removeStaleTemporaries(const std::string &dir);

/// Writes the variables and `info`, then deletes all but the newest `keep`.
Status saveCheckpoint(const std::string &dir, const Manifest &manifest,
                      const uint8_t *arena, const CheckpointInfo &info,
                      int64_t keep);

/// saveCheckpoint in two halves, for a checkpoint kept in memory (the
/// interrupt snapshot, run_loop.h). copyCheckpointTensors copies every
/// variable a checkpoint holds from `arena` into `file`, creating its
/// tensors on the first call and reusing them after, so that a copy per step
/// allocates nothing; writeCheckpointFile adds `info`'s metadata, writes
/// `file` as the checkpoint of info.step and prunes as saveCheckpoint does.
/// Together they write exactly saveCheckpoint's bytes.
void copyCheckpointTensors(const Manifest &manifest, const uint8_t *arena,
                           safetensors::File &file);
Status writeCheckpointFile(const std::string &dir, const Manifest &manifest,
                           const CheckpointInfo &info, safetensors::File &file,
                           int64_t keep);

/// The first variable of `manifest` whose tensor in `file` holds a NaN or
/// an Inf (tensors missing or of another size are skipped).
std::optional<NonFiniteVariable> findNonFiniteTensor(const Manifest &manifest,
                                                     const safetensors::File &file);

struct LoadedCheckpoint {
  std::string path;
  CheckpointInfo info;
  std::map<std::string, std::string> metadata;
};

/// Loads the newest valid checkpoint of `dir` into the variables of
/// `arena` and refreshes the copies from them; nullopt if there is none.
/// Skipped checkpoints are described in `warnings`.
StatusOr<std::optional<LoadedCheckpoint>>
loadNewestCheckpoint(const std::string &dir, const Manifest &manifest,
                     uint8_t *arena, std::vector<std::string> &warnings);

/// --init-from: sets the variables `path` holds (a Kiln checkpoint, or
/// kiln-checkpoint from-pytorch's output) and refreshes the copies. Strict,
/// as PyTorch's load_state_dict(strict=True): every parameter must be in the
/// file, every tensor of the file must be a variable of the model, with its
/// dtype and shape, and finite; state the file lacks (momentum, the
/// schedule) keeps its initializer. Nothing is written unless all is right.
Status loadInitialValues(const std::string &path, const Manifest &manifest,
                         uint8_t *arena);

} // namespace kiln::rt::exec

#endif // KILN_RT_EXEC_CHECKPOINT_H
