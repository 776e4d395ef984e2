//===- PlanFused.cpp - Fused elementwise chains on the vector unit --------===//
//
// A kiln.fused_elementwise runs as one pass over row tiles: its inputs are
// loaded once, each op of the chain is one vector instruction on the tile
// into a staging slot of its result's element type (so a bf16 intermediate
// rounds as the unfused op's result would), and only the yielded values are
// stored. The residual add and relu the batch norms did not take, and the
// backward pass's gradient sums with the relu mask after them, lose their
// HBM round trips in between.
//
// fuseBatchNormBackwardSums moves a batch-norm backward's reductions into
// the op that produces its dy (this chain, a stride-1 data gradient's
// epilogue, PlanConv.cpp, or a max pool's gradient, PlanPool.cpp): that op
// reads the batch norm's x while dy is on chip, and the backward reads dy
// and x once instead of twice.
//
//===----------------------------------------------------------------------===//

#include "PlannerImpl.h"

namespace kiln::sa {

Status Planner::lowerFusedElementwise(const Node &n) {
  const Tensor &shape = tensor(n.outputs[0]);
  int64_t c = shape.channels(), rows = shape.numElements() / c;
  // The chain's inputs; a batch norm's x and statistics follow them when
  // the chain takes its reductions (Node::gradSums).
  size_t numInputs = n.chainTypes.size() - n.body.size();
  GradSumsEpilogue sums;
  KILN_RETURN_IF_ERROR(sums.begin(*this, n.gradSums));
  // Staging per tile: every input and every value the chain computes (and
  // the batch norm's x and mask).
  int64_t bpr = 0;
  for (fb::DType d : n.chainTypes)
    bpr += c * bytes(d);
  int x = n.gradSums.x, dy = -1;
  if (sums.active()) {
    bpr += c * bytes(dtype(x));
    if (sums.masked())
      bpr += c * bytes(dtype(n.gradSums.dy));
    for (size_t i = 0; i < n.yields.size(); ++i)
      if (n.outputs[i] == n.gradSums.dy)
        dy = n.yields[i];
  }
  if (sums.active() && dy < 0)
    return invalidArgumentError("the batch norm's dy is not a result of "
                                "the chain");
  // Slots are 64-byte aligned.
  int64_t tr = tileRows(rows, bpr, 2,
                        budget() - 2 * 64 * int64_t(n.chainTypes.size() + 2) -
                            (sums.active() ? vectorBytes(8, c) : 0));
  // The output a chain value is stored as, if it is yielded.
  std::vector<int> yieldedAs(n.chainTypes.size(), -1);
  for (size_t i = 0; i < n.yields.size(); ++i)
    if (yieldedAs[size_t(n.yields[i])] < 0)
      yieldedAs[size_t(n.yields[i])] = int(i);
  // Double-buffered slots per chain value, made on first use.
  std::vector<std::array<uint32_t, 2>> slots(n.chainTypes.size(), {0, 0});
  std::vector<std::array<bool, 2>> made(n.chainTypes.size(), {false, false});
  auto slotOf = [&](size_t value, int k, uint32_t &id) -> Status {
    if (!made[value][size_t(k)]) {
      KILN_RETURN_IF_ERROR(slot("v" + std::to_string(value),
                                n.chainTypes[value], tr * c,
                                slots[value][size_t(k)]));
      made[value][size_t(k)] = true;
    }
    id = slots[value][size_t(k)];
    return Status::ok();
  };
  uint32_t xSlots[2] = {0, 0}, maskSlots[2] = {0, 0};
  for (int k = 0; k < 2 && sums.active(); ++k) {
    if (!onChip(x))
      KILN_RETURN_IF_ERROR(slot("x", dtype(x), tr * c, xSlots[k]));
    if (sums.masked())
      KILN_RETURN_IF_ERROR(
          slot("mask", dtype(n.gradSums.dy), tr * c, maskSlots[k]));
  }
  for (int64_t r0 = 0, tile = 0; r0 < rows; r0 += tr, ++tile) {
    int k = int(tile % 2);
    int64_t cnt = std::min(tr, rows - r0);
    std::vector<Loc> values;
    for (size_t i = 0; i < numInputs; ++i) {
      uint32_t s = 0;
      if (!onChip(n.inputs[i]))
        KILN_RETURN_IF_ERROR(slotOf(i, k, s));
      values.push_back(load(n.inputs[i], r0 * c, cnt * c, s));
    }
    for (const Node &step : n.body) {
      size_t value = size_t(step.outputs[0]);
      int out = yieldedAs[value] >= 0 ? n.outputs[size_t(yieldedAs[value])]
                                      : -1;
      uint32_t s = 0;
      if (out < 0 || !onChip(out))
        KILN_RETURN_IF_ERROR(slotOf(value, k, s));
      Loc dst = out >= 0 ? outLoc(out, r0 * c, s) : Loc{s, 0};
      std::vector<fb::Region> srcs;
      for (int in : step.inputs)
        srcs.push_back(values[size_t(in)].region());
      std::vector<int64_t> iattrs;
      b.vector(elementwiseOp(step, iattrs), srcs, {dst.region()}, cnt, c, {},
               iattrs);
      values.push_back(dst);
    }
    if (sums.active()) {
      Loc lx = load(x, r0 * c, cnt * c, xSlots[k]);
      sums.tile(*this, values[size_t(dy)].region(), lx.region(),
                maskSlots[k], cnt, 0, c);
    }
    for (size_t i = 0; i < n.yields.size(); ++i)
      store(n.outputs[i], r0 * c, cnt * c, values[size_t(n.yields[i])]);
  }
  sums.end(*this);
  return Status::ok();
}

} // namespace kiln::sa

namespace kiln::sa {

void fuseBatchNormBackwardSums(Graph &g) {
  // The node that wrote each tensor last.
  std::vector<int> producer(g.tensors.size(), -1);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node &bn = g.nodes[i];
    if (bn.kind == NodeKind::BatchNormBackward && bn.gradSums.sums < 0) {
      int dy = bn.inputs[0], x = bn.inputs[1], mean = bn.inputs[3];
      int p = producer[size_t(g.root(dy))];
      // x and mean must exist when the producer runs.
      auto before = [&](int t) {
        return producer[size_t(g.root(t))] < p;
      };
      if (p >= 0 && before(x) && before(mean) &&
          (bn.scaleShift < 0 || before(bn.scaleShift))) {
        Node &prod = g.nodes[size_t(p)];
        bool eligible =
            prod.gradSums.sums < 0 &&
            ((prod.kind == NodeKind::Conv2dBackwardData &&
              prod.outputs[0] == dy && prod.groups == 1 &&
              prod.strides[0] == 1 && prod.strides[1] == 1) ||
             (prod.kind == NodeKind::MaxPoolBackward &&
              prod.outputs[0] == dy) ||
             prod.kind == NodeKind::FusedElementwise);
        if (eligible) {
          Tensor t;
          t.shape = {2, g.tensors[size_t(x)].channels()};
          t.name = "t" + std::to_string(g.tensors.size());
          int sums = g.addTensor(t);
          producer.push_back(p);
          prod.gradSums = {sums, dy, x, mean, bn.scaleShift};
          prod.inputs.insert(prod.inputs.end(), {x, mean});
          if (bn.scaleShift >= 0)
            prod.inputs.push_back(bn.scaleShift);
          prod.outputs.push_back(sums);
          bn.gradSums.sums = sums;
          bn.inputs.push_back(sums);
        }
      }
    }
    for (int o : g.nodes[i].outputs)
      producer[size_t(g.root(o))] = int(i);
  }
}

} // namespace kiln::sa
