//===- HostData.h - Step inputs for simulated training ---------*- C++ -*-===//
//
// Part of Kiln. What a host feeds a simulated step: IDX datasets (MNIST,
// Fashion-MNIST; gzip or raw) and deterministic synthetic batches. Enough
// for kiln-sim to train small models; the full input pipeline is the
// runtime's (runtime/data), which kilnc --target=systolic executables use.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_SIM_HOSTDATA_H
#define KILN_SIM_HOSTDATA_H

#include "kiln/sim/Simulator.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::sim {

struct IdxDataset {
  int64_t count = 0, rows = 0, cols = 0;
  /// count x rows x cols pixels scaled to [0, 1].
  std::vector<float> images;
  std::vector<int32_t> labels;
};

/// Reads an IDX image file and its label file (plain or gzip-compressed)
/// with the runtime's IDX reader (kiln/rt/idx.h).
Status loadIdx(const std::string &imagesPath, const std::string &labelsPath,
               IdxDataset &data);

/// The inputs of a training-step program, found by shape: images (rank 4,
/// float), labels (rank 1, i32) and the step counter (rank 0, i32).
struct StepInputs {
  std::string images, labels, step;
  std::vector<int64_t> imageShape;
  int64_t numClasses = 0;
};
Status findStepInputs(const Simulator &sim, StepInputs &inputs);

/// Sets the inputs for step `step` from batch `step` of `data` (wrapping
/// around), or, when `data` is null, kiln-run's synthetic inputs for `seed`
/// (normal images and uniform labels, the same every step), so that both
/// tools see the same batch.
Status feedStep(Simulator &sim, const StepInputs &inputs,
                const IdxDataset *data, int64_t step, uint64_t seed);

} // namespace kiln::sim

#endif // KILN_SIM_HOSTDATA_H
