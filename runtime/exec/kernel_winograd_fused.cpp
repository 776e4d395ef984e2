//===- kernel_winograd_fused.cpp - Convolutions on fused-tile Winograd -===//
//
// One of the runtime's replacements for a oneDNN kernel: 3x3 stride-1
// convolution passes on the runtime's fused-tile Winograd (winograd.h),
// bias, residual, relu and batch statistics in its epilogue.
//
//===----------------------------------------------------------------------===//

#include "kiln/rt/exec/kernel_plan.h"

#include <fmt/format.h>

namespace kiln::rt::exec {

bool hasBf16Operand(const Call &call) {
  for (const auto &[name, t] : call.operands)
    if (t.dtype == DType::BF16)
      return true;
  return false;
}

/// Whether a call is one the runtime's fused-tile Winograd (winograd.h)
/// runs faster than oneDNN: a 3x3 convolution pass, stride 1, one
/// pixel of padding on every side, NHWC or nChw16c activations, channels
/// multiples of 16 and at most 128. Per call, two threads, nChw16c, against
/// oneDNN's choice (`kiln-bench-exec-conv --conv-algorithm auto|library`;
/// forward / input gradient / filter gradient, ms):
///   128x28x28x16  0.73 / 0.74 / 0.96 against 1.09 / 1.11 / 1.16
///                 (caches evicted first: 0.98 / 0.99 / 1.19 against
///                 1.70 / 1.77 / 1.25)
///   128x14x14x32  0.64 / 0.64 / 0.71 against 1.10 / 1.07 / 1.16
///   128x7x7x64    0.60 / 0.59 / 0.68 against 0.81 / 0.81 / 1.23
///   32x56x56x64   7.2 / 7.2 / 8.6 against 10.0 / 9.4 / 14.8
///   32x28x28x128  7.1 / 6.7 / 7.8 against 9.0 / 9.6 / 18.8
/// At 256 channels the transformed filter (36 x 256 x 256 floats per
/// thread) no longer stays in cache and oneDNN's Winograd is faster (8.1
/// against 8.9 ms forward on 32x14x14x256); CPUs without AVX-512 do not run
/// the kernel.
bool isFusedTileWinograd(const Call &call) {
  bool fwd = call.kind == CallKind::Conv2dForward;
  bool bwdData = call.kind == CallKind::Conv2dBackwardData;
  bool bwdFilter = call.kind == CallKind::Conv2dBackwardFilter;
  if (!fwd && !bwdData && !bwdFilter)
    return false;
  const TensorRef &w = call.operand(bwdFilter ? "filter_grad" : "filter");
  const TensorRef &x = call.operand(bwdData ? "output_grad" : "input");
  const TensorRef &y = call.operand(fwd       ? "output"
                                    : bwdData ? "input_grad"
                                              : "output_grad");
  // Activations and the filter f32 or bf16; the bias and a filter
  // gradient f32.
  bool types = true, layouts = true;
  for (const auto &[name, t] : call.operands) {
    bool f32Only =
        name == "bias" || name == "filter_grad" || name == "statistics";
    types &= t.dtype == DType::F32 || (!f32Only && t.dtype == DType::BF16);
    if (t.shape.size() == 4 && name != "filter" && name != "filter_grad")
      layouts &= t.isRowMajor() || t.layout == Layout::NChw16c;
  }
  if (call.hasOperand("residual"))
    types &= call.operand("residual").dtype == y.dtype;
  int64_t inputs = x.shape[3], outputs = y.shape[3];
  bool bf16 = hasBf16Operand(call);
  // Against oneDNN's bf16 kernels, which multiply twice as fast per
  // instruction, it wins only on larger layers (with the caches evicted,
  // forward / input gradient / filter gradient, ms): 32x56x56x64 6.8 /
  // 6.9 / 8.7 against 9.3 / 9.3 / 14.4, 32x28x28x128 7.3 / 8.0 / 8.3
  // against 9.0 / 9.1 / 11.7; but 128x28x28x16 1.04 / 1.08 / 1.29 against
  // 1.08 / 0.68 / 1.16, and on 14x14 and 7x7 images it loses the forward
  // and input gradient (32x14x14x128 2.7 / 3.2 against 2.4 / 2.6) while
  // winning the filter gradient from 32 channels (2.7 against 3.1 ms;
  // 128x7x7x64 0.68 against 1.22).
  if (bf16 && bwdFilter && (inputs < 32 || outputs < 32))
    return false;
  if (bf16 && !bwdFilter &&
      (inputs < 64 || outputs < 64 || y.shape[1] * y.shape[2] < 28 * 28))
    return false;
  return types && layouts && w.shape[0] == 3 && w.shape[1] == 3 &&
         call.strides == std::array<int64_t, 2>{1, 1} &&
         call.dilations == std::array<int64_t, 2>{1, 1} &&
         call.padding == std::array<int64_t, 4>{1, 1, 1, 1} &&
         inputs % 16 == 0 && outputs % 16 == 0 && inputs <= 128 &&
         outputs <= 128 && Winograd3x3::available();
}

Status Kernels::Impl::planFusedTileWinograd(const Call &call, CallPlan &plan) {
  bool fwd = call.kind == CallKind::Conv2dForward;
  bool bwdFilter = call.kind == CallKind::Conv2dBackwardFilter;
  const TensorRef &w = call.operand(bwdFilter ? "filter_grad" : "filter");
  // The convolution's input and output (or their gradients).
  const TensorRef &in = call.operand(fwd || bwdFilter ? "input" : "input_grad");
  const TensorRef &out = call.operand(fwd ? "output" : "output_grad");
  plan.macs = double(out.numElements()) * double(9 * in.shape[3]);
  plan.summary = fmt::format("in {} filter {} out {} stride 1x1 pad 1,1,1,1",
                             shapeString(in.shape), shapeString(w.shape),
                             shapeString(out.shape));
  Winograd3x3::Epilogue epilogue;
  if (call.hasOperand("bias")) {
    epilogue.bias =
        reinterpret_cast<const float *>(arena + call.operand("bias").offset);
    plan.summary += " + bias";
  }
  if (call.hasOperand("residual")) {
    epilogue.residual = arena + call.operand("residual").offset;
    plan.summary += " + residual";
  }
  epilogue.relu = fwd && call.relu;
  plan.summary += epilogue.relu ? ", relu" : "";
  if (call.hasOperand("statistics")) {
    epilogue.statistics =
        reinterpret_cast<float *>(arena + call.operand("statistics").offset);
    plan.summary += " + statistics";
    plan.takesStatistics = true;
  }

  Winograd3x3::Pass pass = fwd         ? Winograd3x3::Pass::Forward
                           : bwdFilter ? Winograd3x3::Pass::FilterGradient
                                       : Winograd3x3::Pass::InputGradient;
  // The input gradient runs from the output gradient to the input gradient.
  Winograd3x3 kernel = pass == Winograd3x3::Pass::InputGradient
                           ? Winograd3x3(out.shape[3], in.shape[3], pass)
                           : Winograd3x3(in.shape[3], out.shape[3], pass);
  int threads = omp_get_max_threads();
  scratchpadBytes = std::max(scratchpadBytes, kernel.workspaceBytes(threads));
  uint8_t *filter = arena + w.offset;
  bool filterBf16 = w.dtype == DType::BF16;
  ActivationView inView = activationView(arena, in);
  ActivationView outView = activationView(arena, out);
  Step s;
  if (pass == Winograd3x3::Pass::FilterGradient)
    s.custom = [this, kernel, inView, outView, filter, threads] {
      kernel.runFilterGradient(inView, outView,
                               reinterpret_cast<float *>(filter),
                               scratchpad.get(), threads);
    };
  else if (pass == Winograd3x3::Pass::Forward)
    s.custom = [this, kernel, inView, outView, filter, filterBf16, epilogue,
                threads] {
      kernel.run(filter, filterBf16, inView, outView, epilogue,
                 scratchpad.get(), threads);
    };
  else
    s.custom = [this, kernel, inView, outView, filter, filterBf16, threads] {
      kernel.run(filter, filterBf16, outView, inView, {}, scratchpad.get(),
                 threads);
    };
  plan.steps.push_back(std::move(s));
  plan.impl = kernel.streamsOutput(outView)
                  ? "kiln_wino_4x3:avx512 (fused tiles, streaming stores)"
                  : "kiln_wino_4x3:avx512 (fused tiles)";
  return Status::ok();
}

} // namespace kiln::rt::exec
