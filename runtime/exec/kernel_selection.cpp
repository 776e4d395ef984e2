//===- kernel_selection.cpp - Which kernel a convolution runs on ----------===//
//
// The selection policy of kernels.h's "Algorithm": the runtime's own
// kernels where their rules say they are faster than the one oneDNN picks
// (and that one is the kind they were measured against), oneDNN's Winograd
// or direct kernels elsewhere, as --conv-algorithm asks; and a forward
// call's batch statistics after a kernel that does not take them.
//
//===----------------------------------------------------------------------===//

#include "kiln/rt/exec/kernel_plan.h"

#include "kiln/rt/exec/channel_statistics.h"

namespace kiln::rt::exec {

std::optional<ConvAlgorithm> parseConvAlgorithm(std::string_view name) {
  if (name == "auto")
    return ConvAlgorithm::Auto;
  if (name == "winograd")
    return ConvAlgorithm::Winograd;
  if (name == "direct")
    return ConvAlgorithm::Direct;
  if (name == "library")
    return ConvAlgorithm::Library;
  return std::nullopt;
}

bool isOlderBf16JitKernel(std::string_view impl) {
  return impl.substr(0, 8) == "jit_bf16";
}

Status Kernels::Impl::planConv(const Call &call, CallPlan &plan) {
  KILN_RETURN_IF_ERROR(planConvPasses(call, plan));
  // The fused-tile Winograd takes the statistics in its epilogue; after a
  // oneDNN convolution a pass over the output does.
  if (!call.hasOperand("statistics") || plan.takesStatistics)
    return Status::ok();
  const TensorRef &y = call.operand("output");
  int threads = omp_get_max_threads();
  scratchpadBytes = std::max(
      scratchpadBytes, channelStatisticsWorkspaceBytes(y.shape[3], threads));
  Step s;
  s.custom = [this, view = activationView(arena, y),
              statistics = reinterpret_cast<float *>(
                  arena + call.operand("statistics").offset),
              threads] {
    channelStatistics(view, statistics, scratchpad.get(), threads);
  };
  plan.steps.push_back(std::move(s));
  plan.summary += " + statistics";
  plan.impl += " (+ statistics pass)";
  return Status::ok();
}

Status Kernels::Impl::planConvPasses(const Call &call, CallPlan &plan) {
  // The runtime's own kernels and oneDNN's Winograd take ungrouped
  // convolutions only; oneDNN's direct kernels cover grouped and depthwise.
  if (call.groups != 1)
    return planConvWith(call, plan, dnnl::algorithm::convolution_direct);
  if ((options.convAlgorithm == ConvAlgorithm::Auto ||
       options.convAlgorithm == ConvAlgorithm::Winograd) &&
      isFusedTileWinograd(call)) {
    // In bf16 the kernel was measured against oneDNN's AVX-512 kernels; its
    // AMX kernels, on CPUs that have them, are kept. Without AVX-512 oneDNN
    // has no bf16 convolution at all.
    CallPlan library;
    if (hasBf16Operand(call) &&
        dnnl::get_effective_cpu_isa() >= dnnl::cpu_isa::avx512_core)
      KILN_RETURN_IF_ERROR(planConvWith(call, library,
                                        dnnl::algorithm::convolution_direct,
                                        /*kernelOnly=*/true));
    if (library.impl.find("amx") == std::string::npos)
      return planFusedTileWinograd(call, plan);
  }
  if (options.convAlgorithm != ConvAlgorithm::Library && isConv1x1(call)) {
    // The runtime's 1x1 kernel replaces oneDNN's AVX2 one, which it was
    // measured against; on CPUs with AVX-512 oneDNN's own kernels are kept.
    CallPlan library;
    KILN_RETURN_IF_ERROR(planConvWith(call, library,
                                      dnnl::algorithm::convolution_direct,
                                      /*kernelOnly=*/true));
    if (library.impl.rfind("jit_1x1:avx2", 0) == 0)
      return planConv1x1(call, plan);
  }
  bool asMatmuls = isBf16FilterGradientAsMatmuls(call),
       asForward = isBf16BackwardDataAsForward(call);
  if (options.convAlgorithm == ConvAlgorithm::Auto &&
      (asMatmuls || asForward)) {
    // The runtime's forms replace oneDNN's older bf16 jit kernels only,
    // which its rules were measured against; a newer kernel oneDNN picks
    // instead (brgemm-based, or AMX on CPUs that have it) is kept.
    CallPlan library;
    KILN_RETURN_IF_ERROR(planConvWith(call, library,
                                      dnnl::algorithm::convolution_direct,
                                      /*kernelOnly=*/true));
    if (isOlderBf16JitKernel(library.impl))
      return asMatmuls ? planFilterGradientAsMatmuls(call, plan)
                       : planBackwardDataAsForward(call, plan);
  }
  const TensorRef &w = call.operand(
      call.kind == CallKind::Conv2dBackwardFilter ? "filter_grad" : "filter");
  bool eligible = options.convAlgorithm != ConvAlgorithm::Direct &&
                  w.dtype == DType::F32 && w.shape[0] == 3 && w.shape[1] == 3 &&
                  call.strides == std::array<int64_t, 2>{1, 1} &&
                  call.dilations == std::array<int64_t, 2>{1, 1};
  for (const auto &[name, t] : call.operands)
    eligible &= t.dtype == DType::F32;
  if (eligible) {
    // oneDNN refuses shapes and layouts its Winograd kernels do not cover
    // (NHWC, channels not a multiple of 16); those stay direct.
    try {
      CallPlan chosen;
      Status s = planConvWith(call, chosen,
                              options.convAlgorithm == ConvAlgorithm::Winograd
                                  ? dnnl::algorithm::convolution_winograd
                                  : dnnl::algorithm::convolution_auto);
      if (s.isOk()) {
        plan = std::move(chosen);
        return s;
      }
    } catch (const dnnl::error &) {
    }
  }
  return planConvWith(call, plan, dnnl::algorithm::convolution_direct);
}

} // namespace kiln::rt::exec
