//===- conv1x1.h - 1x1 convolutions as blocked matrix products on AVX2 -*- C++ -*-===//
//
// Over NHWC f32 activations a 1x1 convolution without padding is a matrix
// product: the output's pixels times the [inputs][outputs] filter, the
// input pixels a stride picks being the rows of the left operand. oneDNN
// 2.6 runs these on AVX2 with its jit_1x1:avx2 kernel at 46-68% of the
// machine's FMA ceiling by CPU time (docs/performance.md, "1x1
// convolutions on AVX2"); this one runs the three passes as register tiles
// of 6 rows by 16 columns (12 of the 16 ymm registers accumulate, as the
// AVX2 Winograd's products do), the right operand packed into panels of 16
// columns that stay in L1 while the tiles of a block of rows stream
// through:
//   forward         output[p][k]    = sum_c input[row(p)][c] * filter[c][k]
//   input gradient  inputGrad[row(p)][c] = sum_k outputGrad[p][k] * filter[c][k]
//                   (input pixels no output reads get zeros)
//   filter gradient filterGrad[c][k] = sum_p input[row(p)][c] * outputGrad[p][k]
// where p runs over the output pixels and row(p) is the input pixel the
// stride places it on.
//
// Every result element is one chain of fused multiply-adds in a fixed
// order (channels, or pixels for the filter gradient, ascending from
// zero), whichever thread computes it and however the work is blocked, so
// the results are the same bits on any thread count. Packing the filter is
// O(inputs x outputs) per call, ~1 ms of CPU for ResNet-50's largest (2048
// x 512, 4 MiB), 1-2% of its calls at batch 32; the packed filter is not
// kept from one call to the next, so no update of the weights can be
// missed.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RT_EXEC_CONV1X1_H
#define KILN_RT_EXEC_CONV1X1_H

#include <cstddef>
#include <cstdint>

namespace kiln::rt::exec {

class Conv1x1 {
public:
  /// Whether this CPU can run the kernel (AVX2 and FMA).
  static bool available();

  /// A 1x1 convolution without padding from NHWC `images` x `height` x
  /// `width` x `inputs` to `outputs` channels, every `strideH`-th row and
  /// `strideW`-th column of the input; `outputs` and, for the input
  /// gradient, `inputs` multiples of 16.
  Conv1x1(int64_t images, int64_t height, int64_t width, int64_t inputs,
          int64_t outputs, int64_t strideH = 1, int64_t strideW = 1);

  int64_t outputHeight() const { return (height - 1) / strideH + 1; }
  int64_t outputWidth() const { return (width - 1) / strideW + 1; }

  /// Bytes of workspace any pass needs with `threads` threads.
  size_t workspaceBytes(int threads) const;

  /// The passes, on `threads` threads of the OpenMP pool (fewer if the pool
  /// gives fewer). `filter` and `filterGrad` are [inputs][outputs] (HWIO
  /// with H = W = 1); `workspace` is 64-byte aligned, workspaceBytes
  /// (threads) long. Each result is written over its buffer.
  void forward(const float *input, const float *filter, float *output,
               void *workspace, int threads) const;
  void inputGradient(const float *outputGrad, const float *filter,
                     float *inputGrad, void *workspace, int threads) const;
  void filterGradient(const float *input, const float *outputGrad,
                      float *filterGrad, void *workspace, int threads) const;

private:
  int64_t images, height, width, inputs, outputs, strideH, strideW;
};

} // namespace kiln::rt::exec

#endif // KILN_RT_EXEC_CONV1X1_H
