//===- kernel_conv1x1.cpp - 1x1 convolutions on the runtime's AVX2 kernel -===//
//
// One of the runtime's replacements for a oneDNN kernel: the three passes
// of an f32 1x1 convolution over NHWC activations as the blocked matrix
// products of conv1x1.h, where oneDNN 2.6 would run jit_1x1:avx2.
//
//===----------------------------------------------------------------------===//

#include "kiln/rt/exec/kernel_plan.h"

#include "kiln/rt/exec/conv1x1.h"

#include <fmt/format.h>

namespace kiln::rt::exec {

/// The most input channels of a forward pass the kernel takes: one block
/// of its reduction (conv1x1.cpp), whose outputs it writes once, streamed.
/// Against oneDNN's jit_1x1:avx2 on ResNet-50's layers (batch 32, CPU ms
/// per call, medians of three alternating rounds on a loaded machine;
/// docs/performance.md, "1x1 convolutions on AVX2"): 56x56x256 -> 64 60
/// against 82, 56x56x256 -> 512 stride 2 109 against 136, 14x14x256 ->
/// 1024 56 against 61; with more input channels, the packed filter read
/// again for every block of 96 rows, it loses: 14x14x1024 -> 512 156
/// against 104, 7x7x2048 -> 512 74 against 60. The input and filter
/// gradients win or are level on every layer.
constexpr int64_t kMaxForwardInputs = 256;

/// The fewest channels on either side of a layer the kernel takes. On
/// MobileNetV2's 1x1 layers (batch 32, CPU ms per call, forward / input
/// gradient / filter gradient, two alternating rounds): 112x112x32 -> 16
/// 19-18 / 23-18 / 41-36 against 16-17 / 17-16 / 27; 112x112x16 -> 96 the
/// filter gradient 78-91 against 67-79; from 32 channels it wins or is
/// level: 28x28x192 -> 32 15-14 / 13-14 / 17-16 against 20-23 / 17-19 /
/// 21-27, 7x7x160 -> 960 14-15 / 18 / 17-16 against 20-21 / 21-20 /
/// 25-24.
constexpr int64_t kMinChannels = 32;

/// Whether a convolution pass is one the runtime's 1x1 kernel computes: an
/// ungrouped 1x1 filter without padding or dilation, every operand f32,
/// activations NHWC, channels multiples of 16 and at least kMinChannels on
/// both sides, a forward pass
/// with at most kMaxForwardInputs input channels and without bias, residual
/// or relu (its statistics are taken by the pass after it, as after
/// oneDNN), on a CPU with AVX2 and FMA. Whether it runs also depends on
/// oneDNN's choice (kernel_selection.cpp).
bool isConv1x1(const Call &call) {
  bool fwd = call.kind == CallKind::Conv2dForward;
  bool bwdData = call.kind == CallKind::Conv2dBackwardData;
  bool bwdFilter = call.kind == CallKind::Conv2dBackwardFilter;
  if ((!fwd && !bwdData && !bwdFilter) || call.groups != 1)
    return false;
  const TensorRef &w = call.operand(bwdFilter ? "filter_grad" : "filter");
  const TensorRef &x = call.operand(bwdData ? "input_grad" : "input");
  const TensorRef &y = call.operand(fwd ? "output" : "output_grad");
  if (w.shape[0] != 1 || w.shape[1] != 1 ||
      call.padding != std::array<int64_t, 4>{0, 0, 0, 0} ||
      call.dilations != std::array<int64_t, 2>{1, 1})
    return false;
  if (fwd && (call.hasOperand("bias") || call.hasOperand("residual") ||
              call.relu))
    return false;
  for (const auto &[name, t] : call.operands) {
    if (t.dtype != DType::F32)
      return false;
    if (t.shape.size() == 4 && name != "filter" && name != "filter_grad" &&
        !t.isRowMajor())
      return false;
  }
  int64_t C = x.shape[3], K = y.shape[3];
  if (fwd && C > kMaxForwardInputs)
    return false;
  Conv1x1 conv(x.shape[0], x.shape[1], x.shape[2], C, K, call.strides[0],
               call.strides[1]);
  return C % 16 == 0 && K % 16 == 0 && std::min(C, K) >= kMinChannels &&
         y.shape[0] == x.shape[0] &&
         y.shape[1] == conv.outputHeight() &&
         y.shape[2] == conv.outputWidth() && Conv1x1::available();
}

Status Kernels::Impl::planConv1x1(const Call &call, CallPlan &plan) {
  bool fwd = call.kind == CallKind::Conv2dForward;
  bool bwdData = call.kind == CallKind::Conv2dBackwardData;
  const TensorRef &w = call.operand(fwd || bwdData ? "filter" : "filter_grad");
  const TensorRef &x = call.operand(bwdData ? "input_grad" : "input");
  const TensorRef &y = call.operand(fwd ? "output" : "output_grad");
  int64_t C = x.shape[3], K = y.shape[3];
  plan.macs = double(y.numElements()) * double(C);
  plan.summary = fmt::format("in {} filter {} out {} stride {}x{} pad 0,0,0,0",
                             shapeString(x.shape), shapeString(w.shape),
                             shapeString(y.shape), call.strides[0],
                             call.strides[1]);
  Conv1x1 conv(x.shape[0], x.shape[1], x.shape[2], C, K, call.strides[0],
               call.strides[1]);
  int threads = omp_get_max_threads();
  scratchpadBytes = std::max(scratchpadBytes, conv.workspaceBytes(threads));
  auto *in = reinterpret_cast<float *>(arena + x.offset);
  auto *filter = reinterpret_cast<float *>(arena + w.offset);
  auto *out = reinterpret_cast<float *>(arena + y.offset);
  Step s;
  if (fwd)
    s.custom = [this, conv, in, filter, out, threads] {
      conv.forward(in, filter, out, scratchpad.get(), threads);
    };
  else if (bwdData)
    s.custom = [this, conv, in, filter, out, threads] {
      conv.inputGradient(out, filter, in, scratchpad.get(), threads);
    };
  else
    s.custom = [this, conv, in, filter, out, threads] {
      conv.filterGradient(in, out, filter, scratchpad.get(), threads);
    };
  plan.steps.push_back(std::move(s));
  plan.impl = "kiln_1x1:avx2";
  return Status::ok();
}

} // namespace kiln::rt::exec
