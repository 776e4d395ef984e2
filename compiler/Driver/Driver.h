//===- Driver.h - kilnc: model file to training executable ------*- C++ -*-===//
//
// The compiler's policy: which pipelines run in which order for a target,
// what each --emit stage prints, and how the executable is linked. The
// kilnc tool only parses flags into CompileOptions.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_DRIVER_DRIVER_H
#define KILN_COMPILER_DRIVER_DRIVER_H

#include "compiler/Pipelines.h"

#include <cstdint>
#include <optional>
#include <string>

namespace kiln {

/// The stages --emit can write. Linalg is x86 only; Sa (the sa dialect) and
/// Program (the serialized FlatBuffers program) are systolic only.
enum class EmitStage { Kiln, Train, Linalg, Sa, Program, LLVM, Object, Executable };

struct CompileOptions {
  /// A kiln model (.mlir) or an ONNX model (.onnx, or by its first byte).
  std::string input;
  /// An ONNX model's parameters start from fresh initializers (the model
  /// builder's rules) instead of its initializers' values.
  bool onnxFreshInit = false;
  /// The seed of every kiln.dropout's mask (replacing the model's), when
  /// given; otherwise each keeps its own (0 from the ONNX importer unless
  /// the node has a seed attribute).
  std::optional<uint64_t> dropoutSeed;
  std::string output;
  /// x86, or systolic (the simulated device: docs/systolic.md).
  std::string target = "x86";
  /// The systolic target's profile the program is planned for.
  std::string systolicProfile = "tpuv3";
  std::string precision = "fp32";
  int64_t batch = 32;
  EmitStage emit = EmitStage::Executable;
  std::string cpu = "native";
  bool printStats = false;
  /// Run --kiln-fuse (on by default; off to measure what it gains).
  bool fuse = true;
  /// Its convolution + inference batch norm fusion (the eval step).
  bool fuseConvBatchNorm = true;
  bool fuseConvBatchNormTrain = false;
  /// --kiln-layout's mode on the x86 target: auto, nhwc or blocked.
  std::string layout = "auto";
  /// x86: link the executable for SimGrid's smpirun (a shared object with
  /// the runtime built against SMPI, runtime/smpi) instead of mpirun.
  bool smpi = false;
  /// Options of the training step (optimizer, schedule, buckets).
  const TrainStepPipelineOptions *trainStep = nullptr;
  /// The reference recipe those options come from, if any: the model's
  /// batch norms must have its momentum.
  const Recipe *recipe = nullptr;
};

/// Compiles as `options` say; diagnostics name the file, line and op.
/// Returns 0 on success.
int compile(const CompileOptions &options);

} // namespace kiln

#endif // KILN_COMPILER_DRIVER_DRIVER_H
