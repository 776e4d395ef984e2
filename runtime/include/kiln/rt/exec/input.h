//===- input.h - Batches for the step functions -----------------*- C++ -*-===//
//
// An InputSource writes the images and labels of a global step into the
// function's arena slots, in the dtype and layout the manifest names.
//
// Dataset input: the TFRecord pipeline (kiln/rt/pipeline.h). Every rank
// counts the records of every train file (from the framing), and each epoch
// the pipeline cuts the files, concatenated in the epoch's shuffled order,
// into one contiguous range of floor or ceil(N / R) records per rank. Ranks
// must take the same number of steps per epoch or their allreduces would
// stop matching, so an epoch is E = floor(floor(N / R) / batch) steps and the
// pipeline delivers exactly E batches per epoch (batches_per_epoch): the
// N - E * batch * R records left (fewer than R * batch + R) are the tail of
// each rank's shuffled range, so they differ from epoch to epoch, and a rank
// left short by bad records skipped under --skip-bad-records repeats its
// last good examples. The batch of global step s is batch s % E of epoch
// s / E, which makes a resumed run read exactly what the uninterrupted run
// read at that step (the pipeline's order is a function of seed and epoch).
//
// Synthetic input: K fixed batches (K = --synthetic-batches) cycled: step s
// uses batch s % K. Images are standard normal, labels uniform classes, all
// as kiln/ref/synthetic.h draws them. Each global batch is one stream split
// over the ranks (rank r takes elements [r*B, (r+1)*B)), so R ranks x batch
// B train on exactly the data of 1 rank x batch R*B. Batch 0 of rank 0 is
// exactly the batch `kiln-run --synthetic-inputs` feeds, so the compiled
// model and the interpreter can be compared step for step.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RT_EXEC_INPUT_H
#define KILN_RT_EXEC_INPUT_H

#include "kiln/base/status.h"
#include "kiln/rt/data.h"
#include "kiln/rt/exec/comm.h"
#include "kiln/rt/exec/manifest.h"
#include "kiln/rt/exec/options.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kiln::rt::exec {

class InputSource {
public:
  virtual ~InputSource() = default;
  /// Writes the batch of global step `step` (called with consecutive steps)
  /// into the images and labels slots of `function`.
  virtual Status fill(int64_t step, uint8_t *arena) = 0;
  /// Training steps per epoch; 0 for synthetic data.
  virtual int64_t stepsPerEpoch() const = 0;
  /// Dataset input: "N records over R ranks: S steps per epoch of G global
  /// batch; K records per epoch not trained on (the remainder), different
  /// ones each epoch" (or "...; every record trained on once per epoch").
  virtual std::string describe() const { return {}; }
  /// Seconds spent waiting for the pipeline so far.
  virtual double waitSeconds() const { return 0; }
  /// After a fill() that completed an epoch in which bad records were
  /// skipped: a line for the log ("kiln: epoch 0: skipped 3 bad records
  /// (first: ...)\n"); otherwise empty.
  virtual std::string takeEpochNote() { return {}; }
};

std::unique_ptr<InputSource> openSyntheticInput(const Function &function,
                                                int rank, uint64_t seed,
                                                int64_t batches);

/// The pipeline configuration for `split` feeding `function`'s images
/// (layout, dtype, size), with labels checked against its logits' classes
/// under --label-offset, and the command line's normalization. "train" takes
/// the command line's augmentation; any other split the eval recipe the
/// data implies (KILN_RT_AUGMENT_EVAL), whatever the training flags. `seed`
/// is the run's (a resumed run's comes from its checkpoint, not --seed).
StatusOr<kiln_rt_dataset_config_t>
datasetConfig(const RunOptions &options, const Function &function,
              const std::string &split, const Comm &comm, uint64_t seed);

/// Training input from `options.dataDir`, positioned at `firstStep`.
StatusOr<std::unique_ptr<InputSource>>
openDatasetInput(const RunOptions &options, const Function &function,
                 Comm &comm, uint64_t seed, int64_t firstStep);

/// Writes a logical NHWC f32 batch into `slot` (its dtype and layout).
void storeImages(const float *nhwc, const TensorRef &slot, uint8_t *arena);

} // namespace kiln::rt::exec

#endif // KILN_RT_EXEC_INPUT_H
