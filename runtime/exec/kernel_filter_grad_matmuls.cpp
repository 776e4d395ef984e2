//===- kernel_filter_grad_matmuls.cpp - bf16 filter gradients as matmuls -===//
//
// One of the runtime's replacements for a oneDNN kernel: a bf16 filter
// gradient on small NHWC images as im2col and one matrix product per
// thread over its share of the batch, the partial gradients summed after.
//
//===----------------------------------------------------------------------===//

#include "kiln/rt/exec/kernel_plan.h"

#include <fmt/format.h>

#include <cstring>

namespace kiln::rt::exec {


/// Whether a backward-filter call is a bf16 convolution over NHWC
/// activations, without dilation, whose filter gradient is faster as matrix
/// products than in oneDNN 2.6's bf16 backward-weights kernels (older jit
/// kernels): 1x1 filters with at least 64 channels in and out on output
/// images of at most 28x28 pixels, and larger filters with at least 128
/// columns (KH*KW*Cin) and 32 output channels on 7x7 outputs, or on 14x14
/// outputs when strided. The gradient is columns^T x output_grad, the
/// columns being the input pixels each output pixel reads (im2col; for an
/// unpadded stride-1 1x1 filter the input itself). One oneDNN matmul per
/// thread over its share of the batch, each planned for one thread, plus a
/// sum of the partial gradients, against oneDNN's kernel in a step (ResNet-50
/// bf16, batch 32, and Fashion-MNIST's ResNet-20, batch 128; the last
/// columns of kiln-bench-conv-layout):
///   14x14, 256 -> 1024, 1x1: 6.6 -> 5.1 ms per call
///   28x28x512 -> 14x14x1024, 1x1 stride 2: 12.7 -> 10.3
///   ResNet-50's nine 1x1 layers on 28x28 outputs: 65.3 -> 61.9 ms per step
///   14x14x512 -> 7x7x512, 3x3 stride 2: 18.7 -> 10.4
///   7x7x512, 3x3: 13.5 -> 10.2
///   28x28x256 -> 14x14x256, 3x3 stride 2: 13.5 -> 11.7
///   Fashion-MNIST 14x14x32 -> 7x7x64, 3x3 stride 2: 1.3 -> 0.5;
///   7x7x64, 3x3: 1.3 -> 0.9; 28x28x16 -> 14x14x32, 3x3 stride 2: 1.1 -> 0.9
/// One matmul across both threads splits the long pixel reduction between
/// them and is slower than the convolution. On larger outputs (1x1 on
/// 56x56; 3x3 stride 1 on 14x14: 9.6 against 10.6 ms; 56x56x128 ->
/// 28x28x128, 3x3 stride 2: 15.9 against 18.0 ms per step), with fewer channels
/// (Fashion-MNIST's 1x1 shortcuts) or in f32 (blocked layouts) the
/// convolution kernel is as fast or faster.
bool isBf16FilterGradientAsMatmuls(const Call &call) {
  if (call.kind != CallKind::Conv2dBackwardFilter)
    return false;
  const TensorRef &x = call.operand("input");
  const TensorRef &dy = call.operand("output_grad");
  const TensorRef &dw = call.operand("filter_grad");
  if (call.dilations != std::array<int64_t, 2>{1, 1} ||
      x.dtype != DType::BF16 || dy.dtype != DType::BF16 ||
      dw.dtype != DType::F32 || !x.isRowMajor() || !dy.isRowMajor())
    return false;
  int64_t taps = dw.shape[0] * dw.shape[1], cin = x.shape[3],
          cout = dy.shape[3];
  int64_t pixels = dy.shape[1] * dy.shape[2];
  bool strided = call.strides != std::array<int64_t, 2>{1, 1};
  if (taps == 1)
    return cin >= 64 && cout >= 64 && pixels <= 28 * 28;
  return taps * cin >= 128 && cout >= 32 &&
         (pixels <= 7 * 7 || (strided && pixels <= 14 * 14));
}

Status Kernels::Impl::planFilterGradientAsMatmuls(const Call &call,
                                                  CallPlan &plan) {
  const TensorRef &x = call.operand("input");
  const TensorRef &dy = call.operand("output_grad");
  const TensorRef &dw = call.operand("filter_grad");
  int64_t n = dy.shape[0], ho = dy.shape[1], wo = dy.shape[2];
  int64_t kh = dw.shape[0], kw = dw.shape[1];
  int64_t cin = x.shape[3], cout = dy.shape[3];
  // Columns per output pixel: the filter's taps, Cin each, in HWIO order,
  // so the product is the HWIO gradient.
  int64_t columns = kh * kw * cin;
  bool direct = kh * kw == 1 && call.strides == std::array<int64_t, 2>{1, 1} &&
                call.padding == std::array<int64_t, 4>{0, 0, 0, 0};
  plan.macs = double(n * ho * wo) * double(columns) * double(cout);
  plan.summary = fmt::format(
      "in {} filter {} out {} stride {}x{} pad {},{},{},{}",
      shapeString(x.shape), shapeString(dw.shape), shapeString(dy.shape),
      call.strides[0], call.strides[1], call.padding[0], call.padding[1],
      call.padding[2], call.padding[3]);
  memory::data_type xType = toDnnl(x.dtype), dyType = toDnnl(dy.dtype);
  int64_t xElement = int64_t(dtypeInfo(x.dtype).bytes);
  int64_t dyElement = int64_t(dtypeInfo(dy.dtype).bytes);
  memory::desc dwMd({columns, cout}, toDnnl(dw.dtype), {cout, 1});
  // Staging holds every part's columns, then the partial gradients of parts
  // 1.. (part 0's goes to dw itself), 64-byte aligned.
  int64_t columnBytes = direct ? 0 : n * ho * wo * columns * xElement;
  int64_t partialBytes = (int64_t(dwMd.get_size()) + 63) / 64 * 64;
  int64_t partialsAt = (columnBytes + 63) / 64 * 64;
  int64_t parts = std::min<int64_t>(n, int64_t(partStreams.size()));
  auto firstImage = [&](int64_t p) { return n * p / parts; };
  // Row-major [pixels, columns] read transposed, and [pixels, Cout].
  auto columnsMd = [&](int64_t pixels) {
    return memory::desc({columns, pixels}, xType, {1, columns});
  };
  auto outputGradMd = [&](int64_t pixels) {
    return memory::desc({pixels, cout}, dyType, {cout, 1});
  };
  std::vector<dnnl::matmul::primitive_desc> pds;
  size_t scratchpadStride = 0;
  {
    OneThreadPlanning oneThread;
    for (int64_t p = 0; p < parts; ++p) {
      int64_t pixels = (firstImage(p + 1) - firstImage(p)) * ho * wo;
      pds.emplace_back(
          dnnl::matmul::desc(columnsMd(pixels), outputGradMd(pixels), dwMd),
          attr, engine);
      scratchpadStride =
          std::max(scratchpadStride,
                   (pds.back().scratchpad_desc().get_size() + 63) / 64 * 64);
    }
  }
  plan.impl = "matmul " + implName(pds[0]);
  for (int64_t p = 0; p < parts; ++p) {
    int64_t first = firstImage(p), images = firstImage(p + 1) - first;
    int64_t pixels = images * ho * wo;
    std::vector<Step> steps;
    memory input;
    if (direct) {
      input = bind(columnsMd(pixels), x, first * ho * wo * cin * xElement);
    } else {
      size_t at = size_t(first * ho * wo * columns * xElement);
      Step im2col;
      im2col.custom = [this, call, first, images, at] {
        writeColumns(call, first, images, staging.get() + at);
      };
      steps.push_back(std::move(im2col));
      input = stagingMemory(columnsMd(pixels), at);
    }
    memory partial = bind(dwMd, dw);
    if (p > 0) {
      int64_t at = partialsAt + (p - 1) * partialBytes;
      partial = stagingMemory(dwMd, size_t(at));
      plan.split.partialOffsets.push_back(at);
    }
    const dnnl::matmul::primitive_desc &pd = pds[size_t(p)];
    Step s;
    s.primitive = dnnl::matmul(pd);
    s.args = {
        {DNNL_ARG_SRC, input},
        {DNNL_ARG_WEIGHTS,
         bind(outputGradMd(pixels), dy, first * ho * wo * cout * dyElement)},
        {DNNL_ARG_DST, partial},
        {DNNL_ARG_SCRATCHPAD,
         scratchpadMemory(pd.scratchpad_desc(), size_t(p) * scratchpadStride)}};
    steps.push_back(std::move(s));
    plan.split.parts.push_back(std::move(steps));
  }
  plan.split.sumOffset = dw.offset;
  plan.split.elements = columns * cout;
  plan.impl += fmt::format(" per thread over {} parts of the batch", parts);
  if (!direct)
    plan.impl += " (+ im2col)";
  return Status::ok();
}

void Kernels::Impl::writeColumns(const Call &call, int64_t firstImage,
                                 int64_t images, uint8_t *out) const {
  const TensorRef &x = call.operand("input");
  const TensorRef &dy = call.operand("output_grad");
  const TensorRef &dw = call.operand("filter_grad");
  int64_t h = x.shape[1], w = x.shape[2], cin = x.shape[3];
  int64_t ho = dy.shape[1], wo = dy.shape[2];
  int64_t kh = dw.shape[0], kw = dw.shape[1];
  size_t rowBytes = size_t(cin) * dtypeInfo(x.dtype).bytes;
  const uint8_t *in = arena + x.offset;
  for (int64_t b = firstImage; b < firstImage + images; ++b)
    for (int64_t i = 0; i < ho; ++i)
      for (int64_t j = 0; j < wo; ++j)
        for (int64_t a = 0; a < kh; ++a) {
          int64_t r = i * call.strides[0] - call.padding[0] + a;
          for (int64_t c = 0; c < kw; ++c, out += rowBytes) {
            int64_t q = j * call.strides[1] - call.padding[2] + c;
            if (r < 0 || r >= h || q < 0 || q >= w)
              std::memset(out, 0, rowBytes);
            else
              std::memcpy(out, in + ((b * h + r) * w + q) * rowBytes, rowBytes);
          }
        }
}

} // namespace kiln::rt::exec
