//===- PlanPool.cpp - Pooling on the vector unit --------------------------===//
//
// Window pooling (max, average, their gradients, ceil mode) and global
// average pooling stream images through double-buffered staging slots.
//
//===----------------------------------------------------------------------===//

#include "PlannerImpl.h"

#include <algorithm>

namespace kiln::sa {

using Op = fb::VectorOp;

Status Planner::lowerPool(const Node &n) {
  bool grad = n.kind == NodeKind::MaxPoolBackward ||
              n.kind == NodeKind::AvgPoolBackward;
  // The full-resolution tensor: the forward input (or the gradient's result).
  int big = grad ? n.outputs[0] : n.inputs[0];
  int small = grad ? n.inputs[0] : n.outputs[0];
  const Tensor &bt = tensor(big), &st = tensor(small);
  int64_t N = bt.shape[0], perBig = bt.numElements() / N,
          perSmall = st.numElements() / N;
  std::vector<int> all = n.inputs;
  all.push_back(n.outputs[0]);
  int64_t perImage = 0;
  for (int id : all)
    perImage +=
        (id == big || (n.kind == NodeKind::MaxPoolBackward && id == n.inputs[1])
             ? perBig
             : perSmall) *
        bytes(dtype(id));
  int copies = 2 * perImage <= budget() ? 2 : 1;
  int64_t nb =
      std::max<int64_t>(1, std::min(N, budget() / (copies * perImage)));
  if (nb * perImage > budget())
    return invalidArgumentError("one image does not fit in staging memory");
  auto perOf = [&](int id) {
    return id == big ||
                   (n.kind == NodeKind::MaxPoolBackward && id == n.inputs[1])
               ? perBig
               : perSmall;
  };
  std::vector<uint32_t> slotIds;
  for (int k = 0; k < copies; ++k)
    for (int id : all) {
      uint32_t s = 0;
      if (!onChip(id))
        KILN_RETURN_IF_ERROR(slot("img", dtype(id), nb * perOf(id), s));
      slotIds.push_back(s);
    }
  Op op = n.kind == NodeKind::MaxPool           ? Op::MaxPool
          : n.kind == NodeKind::MaxPoolBackward ? Op::MaxPoolGrad
          : n.kind == NodeKind::AvgPool         ? Op::AvgPool
                                                : Op::AvgPoolGrad;
  for (int64_t n0 = 0, tile = 0; n0 < N; n0 += nb, ++tile) {
    int64_t cnt = std::min(nb, N - n0);
    size_t base = size_t(tile % copies) * all.size();
    std::vector<fb::Region> srcs;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      int id = n.inputs[i];
      srcs.push_back(
          load(id, n0 * perOf(id), cnt * perOf(id), slotIds[base + i])
              .region());
    }
    int out = n.outputs[0];
    Loc o = outLoc(out, n0 * perOf(out), slotIds[base + n.inputs.size()]);
    std::vector<int64_t> shape = {
        cnt,          bt.shape[1],  bt.shape[2],  bt.shape[3],
        n.window[0],  n.window[1],  n.strides[0], n.strides[1],
        n.padding[0], n.padding[1], n.padding[2], n.padding[3]};
    // The ceil mode is a 13th attribute, absent in floor mode.
    if (n.ceilMode)
      shape.push_back(1);
    b.vector(op, srcs, {o.region()}, 0, 0, {}, shape);
    store(out, n0 * perOf(out), cnt * perOf(out), o);
  }
  return Status::ok();
}

Status Planner::lowerGlobalPool(const Node &n) {
  bool grad = n.kind == NodeKind::GlobalAvgPoolBackward;
  int big = grad ? n.outputs[0] : n.inputs[0];
  int small = grad ? n.inputs[0] : n.outputs[0];
  const Tensor &bt = tensor(big);
  int64_t N = bt.shape[0], hw = bt.shape[1] * bt.shape[2], c = bt.shape[3];
  int64_t perImage = hw * c * bytes(dtype(big)) + c * bytes(dtype(small));
  int64_t nb = std::max<int64_t>(1, std::min(N, budget() / (2 * perImage)));
  Slots slots(*this, {big, small}, 0);
  std::vector<uint32_t> sl(4, 0);
  for (int k = 0; k < 2; ++k) {
    if (!onChip(big))
      KILN_RETURN_IF_ERROR(
          slot("img", dtype(big), nb * hw * c, sl[size_t(2 * k)]));
    if (!onChip(small))
      KILN_RETURN_IF_ERROR(
          slot("vec", dtype(small), nb * c, sl[size_t(2 * k + 1)]));
    if (nb >= N)
      break;
  }
  for (int64_t n0 = 0, tile = 0; n0 < N; n0 += nb, ++tile) {
    int64_t cnt = std::min(nb, N - n0);
    size_t k = size_t(tile % 2);
    int in = n.inputs[0], out = n.outputs[0];
    int64_t inPer = grad ? c : hw * c, outPer = grad ? hw * c : c;
    Loc l = load(in, n0 * inPer, cnt * inPer, sl[2 * k + (grad ? 1 : 0)]);
    Loc o = outLoc(out, n0 * outPer, sl[2 * k + (grad ? 0 : 1)]);
    b.vector(grad ? Op::GlobalAvgPoolGrad : Op::GlobalAvgPool, {l.region()},
             {o.region()}, 0, 0, {}, {cnt, hw, c});
    store(out, n0 * outPer, cnt * outPer, o);
  }
  return Status::ok();
}

} // namespace kiln::sa
