//===- kernel_dnnl.cpp - oneDNN primitives for the manifest's calls -------===//
//
// The library kernels: oneDNN's descriptors of arena tensors, its
// convolutions (any algorithm), matrix products, inner-product weight
// gradients and reorders, and the staging of blocked weights around them.
//
//===----------------------------------------------------------------------===//

#include "kiln/rt/exec/kernel_plan.h"

#include "kiln/rt/exec/weight_reorder.h"

#include <fmt/format.h>

namespace kiln::rt::exec {

memory::data_type toDnnl(DType dtype) {
  return dtype == DType::BF16 ? memory::data_type::bf16
                              : memory::data_type::f32;
}

memory::desc activationDesc(const TensorRef &t, DType dtype) {
  Dims dims = {t.shape[0], t.shape[3], t.shape[1], t.shape[2]};
  memory::format_tag tag = memory::format_tag::nhwc;
  if (t.layout == Layout::Nchw)
    tag = memory::format_tag::nchw;
  else if (t.layout == Layout::NChw16c)
    tag = memory::format_tag::nChw16c;
  return memory::desc(dims, toDnnl(dtype), tag);
}
memory::desc activationDesc(const TensorRef &t) {
  return activationDesc(t, t.dtype);
}

memory::desc filterDesc(const TensorRef &t, int64_t groups) {
  if (groups == 1) {
    Dims dims = {t.shape[3], t.shape[2], t.shape[0], t.shape[1]};
    return memory::desc(dims, toDnnl(t.dtype), memory::format_tag::hwio);
  }
  Dims dims = {groups, t.shape[3] / groups, t.shape[2], t.shape[0],
               t.shape[1]};
  return memory::desc(dims, toDnnl(t.dtype), memory::format_tag::hwigo);
}

memory::desc anyFormat(const memory::desc &md) {
  return memory::desc(md.dims(), md.data_type(), memory::format_tag::any);
}

memory::desc matrixDesc(const TensorRef &t, bool transposed) {
  Dims stored(t.shape.begin(), t.shape.end());
  size_t r = stored.size();
  Dims strides(r);
  int64_t s = 1;
  for (size_t i = r; i-- > 0;) {
    strides[i] = s;
    s *= stored[i];
  }
  Dims dims = stored;
  if (transposed) {
    std::swap(dims[r - 1], dims[r - 2]);
    std::swap(strides[r - 1], strides[r - 2]);
  }
  return memory::desc(dims, toDnnl(t.dtype), strides);
}

Step reorderStep(memory from, memory to) {
  Step s;
  if (auto own =
          PairBlockedWeightReorder::match(from.get_desc(), to.get_desc())) {
    // The memory objects share their handles with the ones the plan sets
    // once the staging buffer exists.
    s.custom = [own = *own, from, to] {
      own.run(from.get_data_handle(), to.get_data_handle());
    };
    return s;
  }
  s.primitive = dnnl::reorder(from, to);
  s.args = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
  return s;
}

Status Kernels::Impl::planConvWith(const Call &call, CallPlan &plan,
                                   dnnl::algorithm algorithm, bool kernelOnly) {
  bool fwd = call.kind == CallKind::Conv2dForward;
  bool bwdData = call.kind == CallKind::Conv2dBackwardData;
  const TensorRef &x = call.operand(fwd ? "input"
                                        : bwdData ? "input_grad" : "input");
  const TensorRef &w = call.operand(
      call.kind == CallKind::Conv2dBackwardFilter ? "filter_grad" : "filter");
  const TensorRef &y = call.operand(fwd ? "output" : "output_grad");
  Dims strides = {call.strides[0], call.strides[1]};
  // oneDNN counts dilation from 0 (no dilation), the manifest from 1.
  Dims dilates = {call.dilations[0] - 1, call.dilations[1] - 1};
  Dims padL = {call.padding[0], call.padding[2]};
  Dims padR = {call.padding[1], call.padding[3]};

  memory::desc xMd = activationDesc(x), yMd = activationDesc(y);
  memory::desc wUser = filterDesc(w, call.groups);
  memory::desc wMd = options.blockedWeights ? anyFormat(wUser) : wUser;
  plan.macs = double(y.numElements()) * double(w.shape[0] * w.shape[1] *
                                                w.shape[2]);
  plan.summary = fmt::format("in {} filter {} out {} stride {}x{} pad {},{},{},{}",
                             shapeString(x.shape), shapeString(w.shape),
                             shapeString(y.shape), call.strides[0],
                             call.strides[1], call.padding[0], call.padding[1],
                             call.padding[2], call.padding[3]);
  if (call.groups != 1)
    plan.summary += fmt::format(" groups {}", call.groups);

  // The forward descriptor is also the hint backward primitives need. Its
  // input and weights share a type, as in the forward pass the gradient
  // belongs to: a bf16 filter with an f32 input gradient (or a bf16 input
  // with an f32 filter gradient) came from an all-bf16 forward convolution.
  memory::desc xFwd = bwdData ? activationDesc(x, w.dtype) : xMd;
  memory::desc wFwd =
      call.kind == CallKind::Conv2dBackwardFilter
          ? memory::desc(wMd.dims(), toDnnl(x.dtype),
                         options.blockedWeights ? memory::format_tag::any
                         : call.groups == 1     ? memory::format_tag::hwio
                                                : memory::format_tag::hwigo)
          : wMd;
  dnnl::convolution_forward::desc fwdDesc(dnnl::prop_kind::forward_training,
                                          algorithm, xFwd, wFwd, yMd, strides,
                                          dilates, padL, padR);
  dnnl::convolution_forward::primitive_desc fwdPd(fwdDesc, attr, engine);

  if (fwd) {
    // A fused inference batch norm arrives as a bias; the residual is added
    // by a sum post-op, which reads the output buffer, and relu is an
    // eltwise post-op: both run on each output block while it is in cache.
    bool hasBias = call.hasOperand("bias");
    bool hasResidual = call.hasOperand("residual");
    memory::desc biasMd;
    if (hasBias || hasResidual || call.relu) {
      dnnl::post_ops postOps;
      if (hasResidual)
        postOps.append_sum(1.0f);
      if (call.relu)
        postOps.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
      dnnl::primitive_attr postAttr;
      postAttr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      postAttr.set_post_ops(postOps);
      if (hasBias) {
        biasMd = memory::desc({y.shape[3]}, memory::data_type::f32,
                              memory::format_tag::a);
        fwdDesc = dnnl::convolution_forward::desc(
            dnnl::prop_kind::forward_training, algorithm, xFwd, wFwd, biasMd,
            yMd, strides, dilates, padL, padR);
      }
      fwdPd =
          dnnl::convolution_forward::primitive_desc(fwdDesc, postAttr, engine);
      plan.summary += hasBias ? " + bias" : "";
      plan.summary += hasResidual ? " + residual" : "";
      plan.summary += call.relu ? ", relu" : "";
    }
    if (kernelOnly) {
      plan.impl = implName(fwdPd);
      return Status::ok();
    }
    // The sum post-op adds what the output holds: the residual, unless the
    // memory plan already put the output in the residual's place.
    if (hasResidual && call.operand("residual").offset != y.offset) {
      plan.steps.push_back(
          reorderStep(bind(activationDesc(call.operand("residual")),
                           call.operand("residual")),
                      bind(yMd, y)));
      plan.summary += " (copied)";
    }
    memory weights = bind(wUser, w);
    memory used = weights;
    if (fwdPd.weights_desc() != wUser) {
      used = stagingMemory(fwdPd.weights_desc());
      plan.steps.push_back(reorderStep(weights, used));
      plan.impl = " (+ reorder weights)";
    }
    Step s;
    s.primitive = dnnl::convolution_forward(fwdPd);
    s.args = {{DNNL_ARG_SRC, bind(xMd, x)},
              {DNNL_ARG_WEIGHTS, used},
              {DNNL_ARG_DST, bind(yMd, y)},
              {DNNL_ARG_SCRATCHPAD, scratchpadMemory(fwdPd.scratchpad_desc())}};
    if (hasBias)
      s.args[DNNL_ARG_BIAS] = bind(biasMd, call.operand("bias"));
    plan.steps.push_back(std::move(s));
    plan.impl = implName(fwdPd) + plan.impl;
    return Status::ok();
  }

  if (bwdData) {
    dnnl::convolution_backward_data::desc desc(algorithm, xMd, wMd, yMd,
                                               strides, dilates, padL, padR);
    dnnl::convolution_backward_data::primitive_desc pd(desc, attr, engine,
                                                       fwdPd);
    if (kernelOnly) {
      plan.impl = implName(pd);
      return Status::ok();
    }
    memory weights = bind(wUser, w);
    memory used = weights;
    if (pd.weights_desc() != wUser) {
      used = stagingMemory(pd.weights_desc());
      plan.steps.push_back(reorderStep(weights, used));
      plan.impl = " (+ reorder weights)";
    }
    Step s;
    s.primitive = dnnl::convolution_backward_data(pd);
    s.args = {{DNNL_ARG_DIFF_DST, bind(yMd, y)},
              {DNNL_ARG_WEIGHTS, used},
              {DNNL_ARG_DIFF_SRC, bind(xMd, x)},
              {DNNL_ARG_SCRATCHPAD, scratchpadMemory(pd.scratchpad_desc())}};
    plan.steps.push_back(std::move(s));
    plan.impl = implName(pd) + plan.impl;
    return Status::ok();
  }

  dnnl::convolution_backward_weights::desc desc(algorithm, xMd, wMd, yMd,
                                                strides, dilates, padL, padR);
  dnnl::convolution_backward_weights::primitive_desc pd(desc, attr, engine,
                                                        fwdPd);
  if (kernelOnly) {
    plan.impl = implName(pd);
    return Status::ok();
  }
  addWeightGradientStep(
      plan, dnnl::convolution_backward_weights(pd),
      {{DNNL_ARG_SRC, bind(xMd, x)},
       {DNNL_ARG_DIFF_DST, bind(yMd, y)},
       {DNNL_ARG_SCRATCHPAD, scratchpadMemory(pd.scratchpad_desc())}},
      pd.diff_weights_desc(), bind(wUser, w), implName(pd));
  return Status::ok();
}

Status Kernels::Impl::planMatmul(const Call &call, CallPlan &plan) {
  bool dense = call.kind == CallKind::Dense;
  const TensorRef &a = call.operand(dense ? "input" : "lhs");
  const TensorRef &b = call.operand(dense ? "weight" : "rhs");
  const TensorRef &c = call.operand("output");
  memory::desc aMd = matrixDesc(a, !dense && call.transposeLhs);
  memory::desc bMd = matrixDesc(b, !dense && call.transposeRhs);
  memory::desc cMd = matrixDesc(c, false);
  size_t r = c.shape.size();
  int64_t k = aMd.dims()[r - 1];
  plan.macs = double(c.numElements()) * double(k);
  plan.summary = fmt::format("{}{} x {}{} -> {}", shapeString(a.shape),
                             !dense && call.transposeLhs ? "^T" : "",
                             shapeString(b.shape),
                             !dense && call.transposeRhs ? "^T" : "",
                             shapeString(c.shape));
  Step s;
  s.args = {{DNNL_ARG_SRC, bind(aMd, a)},
            {DNNL_ARG_WEIGHTS, bind(bMd, b)},
            {DNNL_ARG_DST, bind(cMd, c)}};
  dnnl::matmul::primitive_desc pd;
  if (dense && call.hasOperand("bias")) {
    const TensorRef &bias = call.operand("bias");
    memory::desc biasMd({1, bias.shape[0]}, toDnnl(bias.dtype),
                        memory::format_tag::ab);
    pd = dnnl::matmul::primitive_desc(
        dnnl::matmul::desc(aMd, bMd, biasMd, cMd), attr, engine);
    s.args[DNNL_ARG_BIAS] = bind(biasMd, bias);
    plan.summary += " + bias";
  } else {
    pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(aMd, bMd, cMd), attr,
                                      engine);
  }
  s.args[DNNL_ARG_SCRATCHPAD] = scratchpadMemory(pd.scratchpad_desc());
  s.primitive = dnnl::matmul(pd);
  plan.impl = implName(pd);
  plan.steps.push_back(std::move(s));
  return Status::ok();
}

Status Kernels::Impl::planDenseBackwardWeights(const Call &call,
                                               CallPlan &plan) {
  const TensorRef &x = call.operand("input");
  const TensorRef &dy = call.operand("output_grad");
  const TensorRef &dw = call.operand("weight_grad");
  const TensorRef &db = call.operand("bias_grad");
  int64_t n = x.shape[0], k = x.shape[1], m = dy.shape[1];
  plan.macs = double(n) * double(k) * double(m);
  plan.summary = fmt::format("{}^T x {} -> {} + bias {}", shapeString(x.shape),
                             shapeString(dy.shape), shapeString(dw.shape),
                             shapeString(db.shape));
  // oneDNN's inner product has weights [out, in]; the manifest's weight
  // gradient is [in, out] row-major, i.e. that with the dims swapped (io).
  memory::desc xMd({n, k}, toDnnl(x.dtype), memory::format_tag::ab);
  memory::desc dyMd({n, m}, toDnnl(dy.dtype), memory::format_tag::ab);
  memory::desc dwUser({m, k}, toDnnl(dw.dtype), memory::format_tag::ba);
  memory::desc dbMd({m}, toDnnl(db.dtype), memory::format_tag::a);
  dnnl::inner_product_forward::primitive_desc hint(
      dnnl::inner_product_forward::desc(
          dnnl::prop_kind::forward_training, xMd,
          memory::desc({m, k}, toDnnl(x.dtype), memory::format_tag::any), dbMd,
          dyMd),
      attr, engine);
  dnnl::inner_product_backward_weights::primitive_desc pd(
      dnnl::inner_product_backward_weights::desc(xMd, anyFormat(dwUser), dbMd,
                                                 dyMd),
      attr, engine, hint);
  addWeightGradientStep(
      plan, dnnl::inner_product_backward_weights(pd),
      {{DNNL_ARG_SRC, bind(xMd, x)},
       {DNNL_ARG_DIFF_DST, bind(dyMd, dy)},
       {DNNL_ARG_DIFF_BIAS, bind(dbMd, db)},
       {DNNL_ARG_SCRATCHPAD, scratchpadMemory(pd.scratchpad_desc())}},
      pd.diff_weights_desc(), bind(dwUser, dw), implName(pd));
  return Status::ok();
}

Status Kernels::Impl::planReorder(const Call &call, CallPlan &plan) {
  const TensorRef &in = call.operand("input"), &out = call.operand("output");
  memory from = bind(activationDesc(in), in), to = bind(activationDesc(out), out);
  plan.summary = fmt::format("{} {} -> {}", shapeString(in.shape),
                             layoutName(in.layout), layoutName(out.layout));
  dnnl::reorder::primitive_desc pd(from, to);
  Step s;
  s.primitive = dnnl::reorder(pd);
  s.args = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
  plan.steps.push_back(std::move(s));
  plan.impl = implName(pd);
  return Status::ok();
}

} // namespace kiln::rt::exec
