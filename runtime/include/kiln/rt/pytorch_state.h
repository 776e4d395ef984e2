//===- pytorch_state.h - Kiln checkpoints <-> PyTorch state dicts -*- C++ -*-===//
//
// Kiln's variables already carry PyTorch's state-dict names (the model
// builder and the ONNX importer name them so); what differs is the layout
// and the extra entries:
//
//   Kiln checkpoint                      PyTorch state dict
//   4-D weight HWIO [KH, KW, I, O]       OIHW [O, I, KH, KW] (every 4-D
//                                        variable is a convolution filter:
//                                        activations are NHWC)
//   2-D weight [in, out] (dense)         [out, in] (nn.Linear)
//   <param>.<slot> (momentum, ...),      not in a state dict: dropped
//   kiln.* (the schedule)
//   <bn>.running_mean, running_var       the same, plus <bn>.num_batches_tracked
//                                        (int64 scalar: the checkpoint's step,
//                                        one batch per training step)
//
// The conversions are exact (element permutations), and to-PyTorch followed
// by from-PyTorch gives back the checkpoint's parameters and statistics.
// A file from PyTorch converts to Kiln's layouts; the executable starts
// from it with --init-from (docs/runtime.md "Checkpoints").
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RT_PYTORCH_STATE_H
#define KILN_RT_PYTORCH_STATE_H

#include "kiln/base/status.h"
#include "kiln/rt/safetensors.h"

namespace kiln::rt::safetensors {

/// `checkpoint` (a Kiln checkpoint: metadata format "kiln-checkpoint") as a
/// PyTorch state dict, metadata {"format": "pt"} plus where it came from.
/// `what` names the input in errors.
StatusOr<File> toPyTorchState(const File &checkpoint, const std::string &what);

/// A PyTorch state dict in Kiln's layouts (metadata format
/// "kiln-initial-values"): what --init-from reads.
StatusOr<File> fromPyTorchState(const File &state, const std::string &what);

} // namespace kiln::rt::safetensors

#endif // KILN_RT_PYTORCH_STATE_H
