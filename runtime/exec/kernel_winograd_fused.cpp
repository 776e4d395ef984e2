//===- kernel_winograd_fused.cpp - Convolutions on fused-tile Winograd -===//
//
// One of the runtime's replacements for a oneDNN kernel: 3x3 stride-1
// convolution passes on the runtime's fused-tile Winograd (winograd.h),
// bias, residual, relu and batch statistics in its epilogue.
//
//===----------------------------------------------------------------------===//

#include "kiln/rt/exec/kernel_plan.h"

#include "kiln/rt/kernel_rules.h"

#include <fmt/format.h>

#include <string_view>

namespace kiln::rt::exec {

bool hasBf16Operand(const Call &call) {
  for (const auto &[name, t] : call.operands)
    if (t.dtype == DType::BF16)
      return true;
  return false;
}

/// fusedTileWinogradApplies (kiln/rt/kernel_rules.h) on the call's
/// geometry, the operands being ones the kernel reads and the CPU one it
/// runs on.
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
  ConvGeometry geometry;
  geometry.kernelH = w.shape[0];
  geometry.kernelW = w.shape[1];
  geometry.strideH = call.strides[0];
  geometry.strideW = call.strides[1];
  geometry.dilationH = call.dilations[0];
  geometry.dilationW = call.dilations[1];
  geometry.padTop = call.padding[0];
  geometry.padBottom = call.padding[1];
  geometry.padLeft = call.padding[2];
  geometry.padRight = call.padding[3];
  geometry.inputChannels = x.shape[3];
  geometry.outputChannels = y.shape[3];
  geometry.outputPixels = y.shape[1] * y.shape[2];
  ConvPass pass = fwd       ? ConvPass::Forward
                  : bwdData ? ConvPass::InputGradient
                            : ConvPass::FilterGradient;
  KernelIsa isa = std::string_view(Winograd3x3::instructionSet()) == "avx2"
                      ? KernelIsa::Avx2
                      : KernelIsa::Avx512;
  return fusedTileWinogradApplies(pass, geometry, hasBf16Operand(call), isa) &&
         types && layouts && Winograd3x3::available();
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
  plan.impl = fmt::format("kiln_wino_4x3:{} (fused tiles{})",
                          Winograd3x3::instructionSet(),
                          kernel.streamsOutput(outView) ? ", streaming stores"
                                                        : "");
  return Status::ok();
}

} // namespace kiln::rt::exec
