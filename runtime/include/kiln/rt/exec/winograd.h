//===- winograd.h - Fused-tile Winograd F(4x4,3x3) for narrow layers ------===//
//
// oneDNN 2.6's Winograd (jit_wino_4x3) transforms the whole input into
// memory, multiplies, and transforms the whole product back. On layers of
// 16-64 channels the matrix products are too small to hide those passes: on
// Fashion-MNIST's ResNet-20 it runs at the speed of the direct kernels
// (~1.1 ms per 128x28x28x16 call, docs/performance.md). This one works on
// kTilesPerGroup output tiles at a time: their inputs are transformed into
// a buffer that stays in cache, multiplied by the transformed filter, and
// transformed back into the output, so each activation is read and written
// once.
//
// It computes a 3x3, stride-1 convolution with one pixel of zero padding on
// every side (the output has the input's size), channels in multiples of
// 16, in f32 whether activations and filter are f32 or bf16 (widened as
// they are loaded, bf16 results rounded to nearest even as VCVTNEPS2BF16
// does), and serves the forward pass, the input gradient (the
// forward convolution of the output gradient with the filter flipped in
// space and its channel axes swapped) and the filter gradient (the sum over
// tiles of the transformed inputs times the transformed output gradients,
// transformed back). On AVX-512F, or on AVX2 with FMA at half the vector
// width (the same transforms, winograd.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RT_EXEC_WINOGRAD_H
#define KILN_RT_EXEC_WINOGRAD_H

#include <cstddef>
#include <cstdint>

namespace kiln::rt::exec {

/// A 4-D f32 or bf16 activation in 16-channel blocks, addressed by strides
/// in elements.
struct ActivationView {
  void *data = nullptr;
  bool bf16 = false;
  int64_t images = 0, height = 0, width = 0, channels = 0;
  int64_t imageStride = 0, blockStride = 0, rowStride = 0, pixelStride = 0;

  /// NHWC storage (channels a multiple of 16 for the kernel below).
  static ActivationView nhwc(void *data, bool bf16, int64_t n, int64_t h,
                             int64_t w, int64_t c);
  /// nChw16c storage: [N][C/16][H][W][16].
  static ActivationView nChw16c(void *data, bool bf16, int64_t n, int64_t h,
                                int64_t w, int64_t c);

  /// Elements from `data` to channel block `block` of pixel (n, h, w).
  int64_t offset(int64_t n, int64_t block, int64_t h, int64_t w) const {
    return n * imageStride + block * blockStride + h * rowStride +
           w * pixelStride;
  }
  const char *address(int64_t offset) const {
    return static_cast<const char *>(data) + offset * (bf16 ? 2 : 4);
  }
};

class Winograd3x3 {
public:
  /// Whether this CPU can run the kernel (AVX-512F, or AVX2 and FMA).
  static bool available();

  /// The instruction set the kernel runs on here: "avx512" or "avx2".
  static const char *instructionSet();

  enum class Pass {
    /// run(): output = conv(input, filter [3,3,inputs,outputs]).
    Forward,
    /// run(): the input gradient of a forward convolution whose filter is
    /// [3,3,outputs,inputs]; run()'s `input` is that convolution's output
    /// gradient.
    InputGradient,
    /// runFilterGradient(): the gradient of filter [3,3,inputs,outputs].
    FilterGradient,
  };

  /// A pass over a convolution from `inputs` to `outputs` channels
  /// (multiples of 16).
  Winograd3x3(int64_t inputs, int64_t outputs, Pass pass);

  /// Bytes of workspace a pass needs with `threads` threads.
  size_t workspaceBytes(int threads) const;

  /// Optional epilogue of a forward pass: output = [relu](conv + bias
  /// [+ residual]); the residual may be the output's own storage.
  struct Epilogue {
    const float *bias = nullptr;
    const void *residual = nullptr; // laid out and typed like the output
    bool relu = false;
    /// If set, [2][outputs]: each output channel's mean and biased variance
    /// over every image and pixel, of the output as stored (in bf16,
    /// rounded), for the training batch norm that follows: its statistics
    /// without a pass over the output. Each tile is summed as it is written
    /// (channel_statistics.h).
    float *statistics = nullptr;
  };

  /// The Forward or InputGradient pass, on `threads` threads of the OpenMP
  /// pool (fewer if the pool gives fewer). `filter` is HWIO, f32 or bf16
  /// (`filterBf16`): [3,3,inputs,outputs], or for InputGradient the forward
  /// filter [3,3,outputs,inputs]. `workspace` is 64-byte aligned,
  /// workspaceBytes(threads) long.
  void run(const void *filter, bool filterBf16, const ActivationView &input,
           const ActivationView &output, const Epilogue &epilogue,
           void *workspace, int threads) const;

  /// Whether run() writes `output` with streaming stores, which neither read
  /// its cache lines first nor keep them: large f32 outputs of the forward
  /// pass.
  bool streamsOutput(const ActivationView &output) const;

  /// The filter gradient [3,3,inputs,outputs] of a forward convolution from
  /// `input` (the forward's) and `outputGrad`, written over `filterGrad`
  /// (f32):
  /// each thread sums its tiles' products in the transformed domain, then
  /// the threads add up the sums and transform them back, each for its
  /// share of the input channels.
  void runFilterGradient(const ActivationView &input,
                         const ActivationView &outputGrad, float *filterGrad,
                         void *workspace, int threads) const;

  /// Tiles transformed and multiplied together (a thread's unit of work):
  /// 12 x 2 accumulators for the products, 12 to 16 measured best.
  static constexpr int64_t kTilesPerGroup = 12;

private:
  int64_t inputs, outputs;
  Pass pass;
};

} // namespace kiln::rt::exec

#endif // KILN_RT_EXEC_WINOGRAD_H
