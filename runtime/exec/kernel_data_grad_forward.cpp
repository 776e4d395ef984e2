//===- kernel_data_grad_forward.cpp - bf16 input gradients as forwards ----===//
//
// One of the runtime's replacements for a oneDNN kernel: a bf16 stride-1
// input gradient on small images as oneDNN's forward convolution of the
// output gradient with the filter flipped.
//
//===----------------------------------------------------------------------===//

#include "kiln/rt/exec/kernel_plan.h"

#include <fmt/format.h>

namespace kiln::rt::exec {


/// Whether a backward-data call is a bf16 stride-1 convolution with a
/// filter larger than 1x1 over NHWC activations, with at least 64 channels
/// in and out and an image of at most 14x14 pixels (ResNet-50's 3x3 layers
/// of its last two stages). Its input gradient is then computed as what it
/// is, a forward convolution of the output gradient with the filter flipped
/// in space and its channel axes swapped: oneDNN 2.6 runs bf16
/// backward-data on its older jit kernels, the forward on brgconv, which is
/// faster there (7x7x512: 11.1 -> 9.0 ms; 14x14x256: 9.1 -> 8.4 ms, the
/// filter's rearrangement included). On larger images the two are even or
/// the backward kernel wins.
bool isBf16BackwardDataAsForward(const Call &call) {
  if (call.kind != CallKind::Conv2dBackwardData)
    return false;
  const TensorRef &w = call.operand("filter");
  const TensorRef &dy = call.operand("output_grad");
  const TensorRef &dx = call.operand("input_grad");
  // The forward convolution pads by what the filter reaches past the
  // backward one's padding.
  bool padsFit = call.padding[0] < w.shape[0] && call.padding[1] < w.shape[0] &&
                 call.padding[2] < w.shape[1] && call.padding[3] < w.shape[1];
  return w.shape[0] * w.shape[1] > 1 && padsFit &&
         call.strides == std::array<int64_t, 2>{1, 1} &&
         call.dilations == std::array<int64_t, 2>{1, 1} &&
         w.dtype == DType::BF16 && dy.dtype == DType::BF16 && dy.isRowMajor() &&
         dx.isRowMajor() && w.shape[2] >= 64 && w.shape[3] >= 64 &&
         dy.shape[1] * dy.shape[2] <= 14 * 14;
}

Status Kernels::Impl::planBackwardDataAsForward(const Call &call,
                                                CallPlan &plan) {
  const TensorRef &w = call.operand("filter");
  const TensorRef &dy = call.operand("output_grad");
  const TensorRef &dx = call.operand("input_grad");
  int64_t kh = w.shape[0], kw = w.shape[1], cin = w.shape[2], cout = w.shape[3];
  plan.macs = double(dy.numElements()) * double(kh * kw * cin);
  plan.summary = fmt::format(
      "in {} filter {} out {} stride 1x1 pad {},{},{},{}",
      shapeString(dx.shape), shapeString(w.shape), shapeString(dy.shape),
      call.padding[0], call.padding[1], call.padding[2], call.padding[3]);
  // dx = conv(dy, w') with w'[o = c, i = k, a, b] = w[kh-1-a, kw-1-b, c, k]:
  // each output-gradient pixel reaches the input pixels under the filter.
  memory::desc dyMd = activationDesc(dy), dxMd = activationDesc(dx);
  memory::desc flippedAny({cin, cout, kh, kw}, toDnnl(w.dtype),
                          memory::format_tag::any);
  Dims padL = {kh - 1 - call.padding[0], kw - 1 - call.padding[2]};
  Dims padR = {kh - 1 - call.padding[1], kw - 1 - call.padding[3]};
  dnnl::convolution_forward::primitive_desc pd(
      dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training,
                                      dnnl::algorithm::convolution_direct, dyMd,
                                      flippedAny, dxMd, {1, 1}, padL, padR),
      attr, engine);
  // The flip has no strided form (oneDNN takes no negative strides), so
  // each tap is its own reorder: a [Cin, Cout] slice of the HWIO filter into
  // its place in the primitive's (blocked) weights.
  memory::desc flipped = pd.weights_desc();
  int64_t tapBytes = cin * cout * int64_t(dtypeInfo(w.dtype).bytes);
  memory::desc tap({cin, cout, 1, 1}, toDnnl(w.dtype), {cout, 1, 1, 1});
  for (int64_t a = 0; a < kh; ++a)
    for (int64_t b = 0; b < kw; ++b)
      plan.steps.push_back(reorderStep(
          bind(tap, w, ((kh - 1 - a) * kw + (kw - 1 - b)) * tapBytes),
          stagingMemory(
              flipped.submemory_desc({cin, cout, 1, 1}, {0, 0, a, b}))));
  Step s;
  s.primitive = dnnl::convolution_forward(pd);
  s.args = {{DNNL_ARG_SRC, bind(dyMd, dy)},
            {DNNL_ARG_WEIGHTS, stagingMemory(flipped)},
            {DNNL_ARG_DST, bind(dxMd, dx)},
            {DNNL_ARG_SCRATCHPAD, scratchpadMemory(pd.scratchpad_desc())}};
  plan.steps.push_back(std::move(s));
  plan.impl = implName(pd) + " forward on the flipped filter (+ reorder "
                             "weights)";
  return Status::ok();
}

} // namespace kiln::rt::exec
