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
//===----------------------------------------------------------------------===//

#include "PlannerImpl.h"

namespace kiln::sa {

Status Planner::lowerFusedElementwise(const Node &n) {
  const Tensor &shape = tensor(n.outputs[0]);
  int64_t c = shape.channels(), rows = shape.numElements() / c;
  size_t numInputs = n.inputs.size();
  // Staging per tile: every input and every value the chain computes.
  int64_t bpr = 0;
  for (fb::DType d : n.chainTypes)
    bpr += c * bytes(d);
  // Slots are 64-byte aligned.
  int64_t tr = tileRows(rows, bpr, 2,
                        budget() - 2 * 64 * int64_t(n.chainTypes.size()));
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
    for (size_t i = 0; i < n.yields.size(); ++i)
      store(n.outputs[i], r0 * c, cnt * c, values[size_t(n.yields[i])]);
  }
  return Status::ok();
}

} // namespace kiln::sa
