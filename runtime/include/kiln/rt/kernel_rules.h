//===- kernel_rules.h - Where the x86 runtime's kernels apply -*- C++ -*-===//
//
// Rules the compiler and the runtime must agree on, as functions of plain
// integers: the runtime decides with them which kernel runs a call
// (runtime/exec/kernel_selection.cpp), the compiler what to fuse because of
// that (passes/Fusion: a convolution whose kernel takes the batch
// statistics as it writes its output). Plain C++17, no dependencies.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RT_KERNEL_RULES_H
#define KILN_RT_KERNEL_RULES_H

#include <cstdint>

namespace kiln::rt {

/// The three passes of a convolution, each a convolution of its own: the
/// input gradient runs from the output gradient to the input gradient.
enum class ConvPass { Forward, InputGradient, FilterGradient };

/// A convolution pass's geometry. Channels and pixels are those of the
/// pass's own input and output (for the input gradient: the output
/// gradient's channels in, the input gradient's channels and pixels out).
struct ConvGeometry {
  int64_t kernelH = 0, kernelW = 0;
  int64_t strideH = 0, strideW = 0;
  int64_t dilationH = 0, dilationW = 0; // 1: none
  int64_t padTop = 0, padBottom = 0, padLeft = 0, padRight = 0;
  int64_t inputChannels = 0, outputChannels = 0;
  /// Height times width of the output; 0 when not known.
  int64_t outputPixels = 0;
};

/// The vector instruction set the runtime's own kernels run on.
enum class KernelIsa { Avx2, Avx512 };

/// The most input or output channels the runtime's fused-tile Winograd
/// takes on `isa` (fusedTileWinogradApplies).
constexpr int64_t fusedTileWinogradMaxChannels(KernelIsa isa) {
  return isa == KernelIsa::Avx2 ? 512 : 128;
}

/// Whether the runtime's fused-tile Winograd (kiln/rt/exec/winograd.h) runs
/// a pass of this geometry faster than oneDNN: 3x3, stride 1, one pixel of
/// padding on every side, channels multiples of 16 and at most
/// fusedTileWinogradMaxChannels. On AVX-512, per
/// call, two threads, nChw16c, f32, against oneDNN's choice
/// (`kiln-bench-exec-conv --conv-algorithm auto|library`; forward / input
/// gradient / filter gradient, ms):
///   128x28x28x16  0.73 / 0.74 / 0.96 against 1.09 / 1.11 / 1.16
///                 (caches evicted first: 0.98 / 0.99 / 1.19 against
///                 1.70 / 1.77 / 1.25)
///   128x14x14x32  0.64 / 0.64 / 0.71 against 1.10 / 1.07 / 1.16
///   128x7x7x64    0.60 / 0.59 / 0.68 against 0.81 / 0.81 / 1.23
///   32x56x56x64   7.2 / 7.2 / 8.6 against 10.0 / 9.4 / 14.8
///   32x28x28x128  7.1 / 6.7 / 7.8 against 9.0 / 9.6 / 18.8
/// At 256 channels the kernel of that time, each thread multiplying 12
/// tiles at a time by its own copy of the transformed filter (36 x 256 x
/// 256 floats), lost to oneDNN's Winograd (8.9 against 8.1 ms forward on
/// 32x14x14x256); the wide layers' sweeps (winograd.cpp) are not measured
/// on AVX-512, so the bound there stays at 128.
///
/// On AVX2 (Zen 3; oneDNN 2.6 has no Winograd there, its choice is the
/// direct `jit:avx2` kernel): medians of three interleaved rounds on a
/// shared, oversubscribed machine (ms, forward / input gradient / filter
/// gradient) 32x56x56x64 429 / 419 / 501 against 1510 / 1418 / 2385,
/// 32x28x28x128 573 / 500 / 618 against 1316 / 1096 / 1564; with the wide
/// layers' sweeps (winograd.cpp) also at 256 and 512 channels, load 8-9:
/// 32x14x14x256 246 / 274 / 365 against 461 / 376 / 729, 32x7x7x512 306 /
/// 344 / 371 against 604 / 532 / 854 (docs/performance.md, "The runtime's
/// Winograd on AVX2").
///
/// With `bf16` operands it is measured against oneDNN's bf16 kernels, which
/// multiply twice as fast per instruction, and wins only on larger layers
/// (with the caches evicted, forward / input gradient / filter gradient,
/// ms): 32x56x56x64 6.8 / 6.9 / 8.7 against 9.3 / 9.3 / 14.4, 32x28x28x128
/// 7.3 / 8.0 / 8.3 against 9.0 / 9.1 / 11.7; but 128x28x28x16 1.04 / 1.08 /
/// 1.29 against 1.08 / 0.68 / 1.16, and on 14x14 and 7x7 images it loses
/// the forward and input gradient (32x14x14x128 2.7 / 3.2 against 2.4 /
/// 2.6) while winning the filter gradient from 32 channels (2.7 against 3.1
/// ms; 128x7x7x64 0.68 against 1.22).
///
/// The runtime also needs the operands' types and layouts to be ones the
/// kernel reads, and a CPU with AVX-512, or AVX2 and FMA
/// (kernel_winograd_fused.cpp). The compiler's fusion asks with the
/// AVX-512 bound, not knowing the CPU an executable will run on: on AVX2 it
/// then leaves the batch norms after wider layers unfused, which costs only
/// that fusion's gain (none measured, docs/design.md).
constexpr bool fusedTileWinogradApplies(ConvPass pass, const ConvGeometry &g,
                                        bool bf16,
                                        KernelIsa isa = KernelIsa::Avx512) {
  int64_t inputs = g.inputChannels, outputs = g.outputChannels;
  if (bf16 && pass == ConvPass::FilterGradient &&
      (inputs < 32 || outputs < 32))
    return false;
  if (bf16 && pass != ConvPass::FilterGradient &&
      (inputs < 64 || outputs < 64 || g.outputPixels < 28 * 28))
    return false;
  return g.kernelH == 3 && g.kernelW == 3 && g.strideH == 1 &&
         g.strideW == 1 && g.dilationH == 1 && g.dilationW == 1 &&
         g.padTop == 1 && g.padBottom == 1 && g.padLeft == 1 &&
         g.padRight == 1 && inputs % 16 == 0 && outputs % 16 == 0 &&
         inputs <= fusedTileWinogradMaxChannels(isa) &&
         outputs <= fusedTileWinogradMaxChannels(isa);
}

} // namespace kiln::rt

#endif // KILN_RT_KERNEL_RULES_H
