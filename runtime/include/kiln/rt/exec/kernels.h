//===- kernels.h - The library kernels behind kiln_rt_kernel_call -*- C++
//-*-===//
//
// For every manifest "calls" entry the runtime creates its oneDNN primitives
// once, at start-up, with memory objects bound to arena + offset; a call is
// then a few primitive executions and nothing is allocated.
//
// Formats. Activations are used in the layout the manifest names (NHWC by
// default), so the generated code's elementwise loops see what they expect.
// Filters are stored HWIO in the arena, but oneDNN's fast convolution kernels
// (brgconv on AVX-512) want blocked weights. With `blockedWeights` (the
// default) each convolution asks oneDNN for its preferred weight format
// (format_tag::any) and the call reorders HWIO -> blocked before a forward or
// backward-data pass, and blocked -> HWIO after a backward-filter pass. The
// reorder is O(weights) against O(N*H*W*weights) for the convolution. One
// staging buffer serves all calls (calls run one after another), as does one
// user-mode scratchpad (each thread its own part of both where a call's
// threads run primitives of their own).
//
// Algorithm. f32 3x3 stride-1 convolutions may run as Winograd F(4x4, 3x3):
// about half the time of the direct kernels, with rounding a little
// different (docs/performance.md). On layers of 16-128 channels (NHWC or
// nChw16c, padding 1) the runtime's own fused-tile Winograd (winograd.h)
// runs all three passes, and the larger such bf16 layers too; on others
// oneDNN's may (f32, nChw16c activations, channels a multiple of 16). `Auto`
// (the default) takes the runtime's kernel where it applies and lets oneDNN's
// heuristic choose elsewhere, `Winograd` forces oneDNN's Winograd where the
// runtime's does not apply, `Direct` never uses Winograd, and `Library` is
// oneDNN's heuristic alone, none of the runtime's kernels (to measure them
// against). `Auto` also replaces two of oneDNN's bf16 backward kernels where
// they are slow: on small NHWC images, a filter gradient is im2col and a
// matrix product per thread over its share of the batch
// (kernel_filter_grad_matmuls.cpp), and a stride-1 input gradient is a
// forward convolution with the flipped filter (kernel_data_grad_forward.cpp).
// On AVX2 CPUs (oneDNN's jit_1x1:avx2) f32 1x1 convolutions over NHWC
// activations run on the runtime's own kernel, all three passes as blocked
// matrix products (conv1x1.h, kernel_conv1x1.cpp); every mode but `Library`.
// kernel_selection.cpp holds the policy, kernel_dnnl.cpp oneDNN's kernels.
// Both replace only oneDNN 2.6's older bf16 jit kernels (isOlderBf16JitKernel),
// which their rules were measured against; newer kernels (brgemm-based, AMX)
// are kept.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RT_EXEC_KERNELS_H
#define KILN_RT_EXEC_KERNELS_H

#include "kiln/base/status.h"
#include "kiln/rt/exec/manifest.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace kiln::rt::exec {

enum class ConvAlgorithm { Direct, Winograd, Auto, Library };

/// The algorithm named `name` on command lines (auto, winograd, direct,
/// library); nullopt for any other name.
std::optional<ConvAlgorithm> parseConvAlgorithm(std::string_view name);

/// Whether oneDNN's implementation name `impl` is one of its older bf16 jit
/// convolution kernels (jit_bf16, jit_bf16_1x1), the ones the runtime's bf16
/// backward forms replace.
bool isOlderBf16JitKernel(std::string_view impl);

struct KernelOptions {
  /// Let oneDNN choose the weight format of convolutions (see above);
  /// otherwise convolutions read and write HWIO directly.
  bool blockedWeights = true;
  /// Whether eligible f32 3x3 convolutions may run as Winograd (above).
  ConvAlgorithm convAlgorithm = ConvAlgorithm::Auto;
  /// Time every call (steady clock around the execution).
  bool profile = false;
};

class Kernels {
public:
  static StatusOr<std::unique_ptr<Kernels>>
  create(const Manifest &manifest, uint8_t *arena,
         const KernelOptions &options);
  ~Kernels();

  /// Runs call `id`. A failure is a bug in the runtime or the compiler: it
  /// prints the call and aborts.
  void execute(int32_t id);

  size_t numCalls() const;
  /// oneDNN's implementation names for call `id`, e.g.
  /// "brgconv:avx512_core (+ reorder weights)".
  std::string implementation(int32_t id) const;
  /// Calls made and seconds spent in call `id` (profile only).
  uint64_t callCount(int32_t id) const;
  double callSeconds(int32_t id) const;
  /// The call's shapes and post-ops, e.g. "in [32x56x56x64] filter
  /// [1x1x64x64] out [32x56x56x64] stride 1x1 pad 0,0,0,0 + bias, relu".
  std::string summary(int32_t id) const;
  /// Multiply-adds of one execution of call `id`.
  double multiplyAdds(int32_t id) const;

  struct Impl;

private:
  explicit Kernels(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// Sets the threads oneDNN's OpenMP runtime uses from now on. oneDNN reads
/// the thread count when it creates a primitive, so call this first.
Status setComputeThreads(int threads);

} // namespace kiln::rt::exec

#endif // KILN_RT_EXEC_KERNELS_H
