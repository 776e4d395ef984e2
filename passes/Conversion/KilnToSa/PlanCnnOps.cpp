//===- PlanCnnOps.cpp - Depthwise convolutions, broadcasts, data movement -===//
//
// The ops of newer CNNs (issue 28) that do not run on the matrix unit:
//
// - Depthwise convolutions on the vector unit, in tiles of whole images
//   like pooling (a depthwise filter contracts over one channel, so an MXU
//   pass would use one row of the array; docs/systolic.md compares).
// - Broadcasting arithmetic and its gradient on the vector unit, tiled
//   along the first dimension of the broadcast shape; an operand that
//   broadcasts along it is read whole by every tile, and a gradient summed
//   over it accumulates in f32 across tiles.
// - Concat, slices, transposes and channel shuffles as DMAs: each moves a
//   box of elements from an HBM view to staging and from staging to an HBM
//   view (their operands live in HBM: see Planner::assignHomes).
//
//===----------------------------------------------------------------------===//

#include "PlannerImpl.h"

#include "kiln/sim/Isa.h"

#include <array>
#include <numeric>

namespace kiln::sa {

using Op = fb::VectorOp;

namespace {

int64_t product(const std::vector<int64_t> &v, size_t from = 0) {
  int64_t p = 1;
  for (size_t i = from; i < v.size(); ++i)
    p *= v[i];
  return p;
}

/// Row dimension `dim` of a view restricted to [start, start + count).
void narrowRows(OperandSpec &v, size_t dim, int64_t start, int64_t count) {
  v.rows[dim] = count;
  for (sim::CoordSpec &q : v.coords)
    if (dim < q.row.size())
      q.offset += q.row[dim] * start;
}

/// A tensor seen as [outer, axis, inner] with elements [offset, offset +
/// count) of the axis: rows (outer, axis element), columns inner.
OperandSpec axisView(uint32_t buffer, int64_t outer, int64_t axis,
                     int64_t inner, int64_t offset, int64_t count) {
  OperandSpec v;
  v.buffer = buffer;
  v.rows = {outer, count};
  v.cols = {inner};
  v.coords = {{axis * inner, 0, outer, {1, 0}, {0}},
              {inner, offset, axis, {0, 1}, {0}},
              {1, 0, inner, {0, 0}, {1}}};
  return v;
}

} // namespace

/// Two staging slots of `elems` elements that a data movement's copies
/// alternate between.
struct MoveSlots {
  uint32_t slot[2] = {0, 0};
  int64_t elems = 0;
};

/// Copies the box of `src` (an HBM view) to `dst` (an HBM view of the same
/// rows and columns) through the staging slots, in chunks of the first row
/// dimension (or of the second, one first-dimension index at a time, when
/// one index does not fit). A null `src` writes zeros.
static Status copyBox(Planner &p, const MoveSlots &slots,
                      const OperandSpec *src, const OperandSpec &dst) {
  int64_t cols = product(dst.cols);
  int64_t perRow0 = product(dst.rows, 1) * cols;
  int64_t room = slots.elems;
  // Chunks over the first row dimension, or the second within one index.
  bool inner = perRow0 > room;
  if (inner && (dst.rows.size() < 2 || product(dst.rows, 2) * cols > room))
    return invalidArgumentError("one row of a data movement of " +
                                std::to_string(perRow0) +
                                " elements does not fit in staging memory");
  int64_t unit = inner ? product(dst.rows, 2) * cols : perRow0;
  int64_t dimLen = inner ? dst.rows[1] : dst.rows[0];
  int64_t chunk = std::min(dimLen, room / unit);
  if (!src)
    p.b.vector(Op::Fill, {}, {fb::Region(slots.slot[0], 0)}, 1, chunk * unit,
               {0.0});
  int64_t outerLen = inner ? dst.rows[0] : 1, counter = 0;
  for (int64_t o = 0; o < outerLen; ++o)
    for (int64_t r0 = 0; r0 < dimLen; r0 += chunk, ++counter) {
      int64_t cnt = std::min(chunk, dimLen - r0);
      OperandSpec d = dst;
      if (inner)
        narrowRows(d, 0, o, 1);
      narrowRows(d, inner ? 1 : 0, r0, cnt);
      uint32_t s = slots.slot[src ? counter % 2 : 0];
      OperandSpec staged =
          OperandSpec::matrix(s, 0, cnt * unit / cols, cols, cols);
      if (src) {
        OperandSpec v = *src;
        if (inner)
          narrowRows(v, 0, o, 1);
        narrowRows(v, inner ? 1 : 0, r0, cnt);
        p.b.dma(v, staged);
      }
      p.b.dma(staged, d);
    }
  return Status::ok();
}

Status Planner::lowerMovement(const Node &n) {
  int out = n.outputs[0];
  fb::DType dt = dtype(out);
  for (int id : n.inputs)
    if (dtype(id) != dt)
      return invalidArgumentError(
          "data movement between element types (a cast belongs before it)");
  const std::vector<int64_t> &os = tensor(out).shape;
  MoveSlots slots;
  // Two slots (each aligned: 64 bytes of slack) fill the op's staging, or
  // hold the whole result (no box is larger).
  slots.elems = std::min((budget() - 128) / 2 / bytes(dt),
                         tensor(out).numElements());
  for (uint32_t &s : slots.slot)
    KILN_RETURN_IF_ERROR(slot("move", dt, slots.elems, s));
  auto split = [](const std::vector<int64_t> &shape, int64_t axis,
                  int64_t &outer, int64_t &inner) {
    outer = std::accumulate(shape.begin(), shape.begin() + axis, int64_t(1),
                            std::multiplies<int64_t>());
    inner = std::accumulate(shape.begin() + axis + 1, shape.end(), int64_t(1),
                            std::multiplies<int64_t>());
  };
  switch (n.kind) {
  case NodeKind::Concat: {
    int64_t outer, inner, offset = 0;
    split(os, n.axis, outer, inner);
    for (int in : n.inputs) {
      int64_t len = tensor(in).shape[size_t(n.axis)];
      OperandSpec src = axisView(home(in), outer, len, inner, 0, len);
      KILN_RETURN_IF_ERROR(copyBox(
          *this, slots, &src,
          axisView(home(out), outer, os[size_t(n.axis)], inner, offset, len)));
      offset += len;
    }
    return Status::ok();
  }
  case NodeKind::Slice: {
    const std::vector<int64_t> &is = tensor(n.inputs[0]).shape;
    int64_t outer, inner, len = os[size_t(n.axis)];
    split(is, n.axis, outer, inner);
    OperandSpec src = axisView(home(n.inputs[0]), outer, is[size_t(n.axis)],
                               inner, n.start, len);
    return copyBox(*this, slots, &src,
                   axisView(home(out), outer, len, inner, 0, len));
  }
  case NodeKind::SliceBackward: {
    // dy into its box of the gradient, zeros before and after it.
    const std::vector<int64_t> &ds = tensor(n.inputs[0]).shape;
    int64_t outer, inner, len = ds[size_t(n.axis)],
                          full = os[size_t(n.axis)];
    split(os, n.axis, outer, inner);
    // The zeros first: the copy of dy reuses the zero-filled slot.
    if (n.start > 0)
      KILN_RETURN_IF_ERROR(copyBox(
          *this, slots, nullptr,
          axisView(home(out), outer, full, inner, 0, n.start)));
    if (n.start + len < full)
      KILN_RETURN_IF_ERROR(copyBox(*this, slots, nullptr,
                                   axisView(home(out), outer, full, inner,
                                            n.start + len,
                                            full - n.start - len)));
    OperandSpec src = axisView(home(n.inputs[0]), outer, len, inner, 0, len);
    KILN_RETURN_IF_ERROR(copyBox(
        *this, slots, &src,
        axisView(home(out), outer, full, inner, n.start, len)));
    return Status::ok();
  }
  case NodeKind::Transpose: {
    // The box is the output, in its order; output dimension i reads input
    // dimension permutation[i].
    const std::vector<int64_t> &is = tensor(n.inputs[0]).shape;
    size_t r = os.size();
    size_t numRows = r >= 3 ? 2 : r == 2 ? 1 : 0;
    std::vector<int64_t> rows(os.begin(), os.begin() + long(numRows)),
        cols(os.begin() + long(numRows), os.end());
    if (rows.empty())
      rows = {1};
    if (cols.empty())
      cols = {1};
    auto view = [&](uint32_t buffer, const std::vector<int64_t> &shape,
                    auto boxDimOf) {
      OperandSpec v;
      v.buffer = buffer;
      v.rows = rows;
      v.cols = cols;
      for (size_t j = 0; j < shape.size(); ++j) {
        sim::CoordSpec q;
        q.stride = product(shape, j + 1);
        q.bound = shape[j];
        q.row.assign(rows.size(), 0);
        q.col.assign(cols.size(), 0);
        size_t i = boxDimOf(j);
        if (i < numRows)
          q.row[i] = 1;
        else
          q.col[i - numRows] = 1;
        v.coords.push_back(q);
      }
      return v;
    };
    OperandSpec src = view(home(n.inputs[0]), is, [&](size_t j) {
      return size_t(std::find(n.permutation.begin(), n.permutation.end(),
                              int64_t(j)) -
                    n.permutation.begin());
    });
    return copyBox(*this, slots, &src,
                   view(home(out), os, [](size_t j) { return j; }));
  }
  case NodeKind::ChannelShuffle: {
    // out[p, k * G + g] = in[p, g * K + k]: columns (k, g).
    int64_t c = os.back(), pixels = product(os) / c, groups = n.groups,
            perGroup = c / groups;
    OperandSpec src, dst;
    src.buffer = home(n.inputs[0]);
    dst.buffer = home(out);
    src.rows = dst.rows = {pixels};
    src.cols = dst.cols = {perGroup, groups};
    src.coords = {{c, 0, pixels, {1}, {0, 0}},
                  {1, 0, c, {0}, {1, perGroup}}};
    dst.coords = {{c, 0, pixels, {1}, {0, 0}}, {1, 0, c, {0}, {groups, 1}}};
    return copyBox(*this, slots, &src, dst);
  }
  default:
    return invalidArgumentError("not a data movement");
  }
}

Status Planner::lowerDepthwise(const Node &n) {
  // Forward: x w -> y; backward data: dy w -> dx; backward filter:
  // x dy -> dw. `big` is the input-resolution tensor, `small` the output's.
  bool filterGrad = n.kind == NodeKind::Conv2dBackwardFilter;
  bool dataGrad = n.kind == NodeKind::Conv2dBackwardData;
  int w = filterGrad ? n.outputs[0] : n.inputs[1];
  int big = dataGrad ? n.outputs[0] : n.inputs[0];
  int small = dataGrad ? n.inputs[0] : filterGrad ? n.inputs[1] : n.outputs[0];
  const Tensor &bt = tensor(big), &st = tensor(small), &wt = tensor(w);
  int64_t N = bt.shape[0], perBig = bt.numElements() / N,
          perSmall = st.numElements() / N, wElems = wt.numElements();
  std::vector<Loc> filter;
  uint32_t acc = 0;
  if (filterGrad) {
    KILN_RETURN_IF_ERROR(slot("dw", fb::DType::F32, wElems, acc));
    b.vector(Op::Fill, {}, {fb::Region(acc, 0)}, 1, wElems, {0.0});
  } else {
    KILN_RETURN_IF_ERROR(loadVectors(*this, {w}, filter));
  }
  int64_t perImage =
      perBig * bytes(dtype(big)) + perSmall * bytes(dtype(small));
  // The filter (or its f32 gradient) and the slots' alignment come first;
  // tiles are double-buffered when two fit.
  int64_t room = budget() - wElems * 4 - 512;
  int copies = 2 * perImage <= room ? 2 : 1;
  int64_t nb = std::max<int64_t>(1, std::min(N, room / (copies * perImage)));
  if (nb * perImage * copies > room)
    return invalidArgumentError("one image does not fit in staging memory");
  uint32_t sl[2][2] = {{0, 0}, {0, 0}};
  for (int k = 0; k < copies && k * nb < N; ++k) {
    if (!onChip(big))
      KILN_RETURN_IF_ERROR(slot("img", dtype(big), nb * perBig, sl[k][0]));
    if (!onChip(small))
      KILN_RETURN_IF_ERROR(slot("out", dtype(small), nb * perSmall, sl[k][1]));
  }
  Op op = filterGrad ? Op::DepthwiseConvGradFilter
          : dataGrad ? Op::DepthwiseConvGradData
                     : Op::DepthwiseConv;
  for (int64_t n0 = 0, tile = 0; n0 < N; n0 += nb, ++tile) {
    int64_t cnt = std::min(nb, N - n0);
    int k = int(tile % copies);
    std::vector<int64_t> attrs = {
        cnt,          bt.shape[1],    bt.shape[2],    bt.shape[3],
        wt.shape[0],  wt.shape[1],    n.strides[0],   n.strides[1],
        n.padding[0], n.padding[1],   n.padding[2],   n.padding[3],
        n.dilations[0], n.dilations[1]};
    if (filterGrad) {
      Loc x = load(big, n0 * perBig, cnt * perBig, sl[k][0]);
      Loc dy = load(small, n0 * perSmall, cnt * perSmall, sl[k][1]);
      b.vector(op, {x.region(), dy.region()}, {fb::Region(acc, 0)}, 0, 0, {},
               attrs);
      continue;
    }
    int in = dataGrad ? small : big, out = dataGrad ? big : small;
    int64_t perIn = dataGrad ? perSmall : perBig,
            perOut = dataGrad ? perBig : perSmall;
    Loc x = load(in, n0 * perIn, cnt * perIn, sl[k][dataGrad ? 1 : 0]);
    Loc y = outLoc(out, n0 * perOut, sl[k][dataGrad ? 0 : 1]);
    b.vector(op, {x.region(), filter[0].region()}, {y.region()}, 0, 0, {},
             attrs);
    store(out, n0 * perOut, cnt * perOut, y);
  }
  if (filterGrad) {
    std::vector<Loc> o;
    KILN_RETURN_IF_ERROR(outVectors(*this, {w}, o));
    b.vector(Op::Copy, {fb::Region(acc, 0)}, {o[0].region()}, 1, wElems);
    store(w, 0, wElems, o[0]);
  }
  return Status::ok();
}

Status Planner::lowerBroadcast(const Node &n) {
  bool grad = n.kind == NodeKind::BroadcastBinaryBackward;
  int out = n.outputs[0];
  // The broadcast shape: the result's, or dy's for the gradient.
  const std::vector<int64_t> &full = tensor(grad ? n.inputs[0] : out).shape;
  std::vector<int64_t> lhs, rhs;
  std::vector<int> reads; // tensors read, in source order
  bool readsLhs = true, readsRhs = true;
  if (grad) {
    sim::broadcastGradReads(n.binaryKind, n.wrtRhs, readsLhs, readsRhs);
    // An operand the formula does not read is given dy's shape, to which
    // it broadcasts; the gradient's own operand has the result's shape.
    size_t next = 1;
    lhs = readsLhs ? tensor(n.inputs[next++]).shape : full;
    rhs = readsRhs ? tensor(n.inputs[next]).shape : full;
    (n.wrtRhs ? rhs : lhs) = tensor(out).shape;
    reads = n.inputs;
  } else {
    lhs = tensor(n.inputs[0]).shape;
    rhs = tensor(n.inputs[1]).shape;
    reads = n.inputs;
  }
  if (full.empty())
    return invalidArgumentError("broadcasting of scalars");
  int64_t N = full[0];
  // Operands that share the tiled first dimension are sliced with it.
  auto sliced = [&](int id) { return N > 1 && tensor(id).shape[0] == N; };
  bool accumulate = grad && !sliced(out);
  int64_t perImage = 0, whole = 0;
  std::vector<int> all = reads;
  all.push_back(out);
  for (int id : all) {
    int64_t e = tensor(id).numElements();
    if (sliced(id))
      perImage += e / N * bytes(dtype(id));
    else
      whole += e * (id == out && accumulate ? 4 : bytes(dtype(id)));
  }
  // Slots are aligned: 64 bytes of slack each.
  int64_t room = budget() - whole - 64 * int64_t(2 * all.size() + 1);
  int copies = 2 * perImage <= room ? 2 : 1;
  int64_t nb =
      perImage == 0
          ? N
          : std::max<int64_t>(1, std::min(N, room / (copies * perImage)));
  if (perImage * nb * copies > room)
    return invalidArgumentError("one image of a broadcast does not fit in "
                                "staging memory");
  // Whole operands once; sliced ones per tile in alternating slots.
  std::vector<Loc> wholeLocs(all.size());
  std::vector<std::array<uint32_t, 2>> sl(all.size(), {0, 0});
  uint32_t acc = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    int id = all[i];
    int64_t e = tensor(id).numElements();
    if (id == out && accumulate) {
      KILN_RETURN_IF_ERROR(slot("acc", fb::DType::F32, e, acc));
      b.vector(Op::Fill, {}, {fb::Region(acc, 0)}, 1, e, {0.0});
      continue;
    }
    if (!sliced(id)) {
      uint32_t s = 0;
      if (!onChip(id))
        KILN_RETURN_IF_ERROR(slot("whole", dtype(id), e, s));
      wholeLocs[i] = id == out ? outLoc(id, 0, s) : load(id, 0, e, s);
      continue;
    }
    for (int k = 0; k < copies && k * nb < N; ++k)
      if (!onChip(id))
        KILN_RETURN_IF_ERROR(
            slot("tile", dtype(id), nb * e / N, sl[i][size_t(k)]));
  }
  for (int64_t n0 = 0, tile = 0; n0 < N; n0 += nb, ++tile) {
    int64_t cnt = std::min(nb, N - n0);
    size_t k = size_t(tile % copies);
    auto tileShape = [&](std::vector<int64_t> s) {
      if (s[0] == N && N > 1)
        s[0] = cnt;
      return s;
    };
    std::vector<int64_t> attrs = {n.binaryKind};
    if (grad) {
      attrs.push_back(n.wrtRhs ? 1 : 0);
      attrs.push_back(accumulate ? 1 : 0);
    }
    attrs.push_back(int64_t(full.size()));
    for (const auto &s : {full, lhs, rhs})
      for (int64_t d : tileShape(s))
        attrs.push_back(d);
    std::vector<fb::Region> srcs;
    for (size_t i = 0; i < reads.size(); ++i) {
      int id = reads[i];
      if (!sliced(id)) {
        srcs.push_back(wholeLocs[i].region());
        continue;
      }
      int64_t per = tensor(id).numElements() / N;
      srcs.push_back(load(id, n0 * per, cnt * per, sl[i][k]).region());
    }
    size_t oi = all.size() - 1;
    if (accumulate) {
      b.vector(Op::BroadcastBinaryGrad, srcs, {fb::Region(acc, 0)}, 0, 0, {},
               attrs);
      continue;
    }
    Op op = grad ? Op::BroadcastBinaryGrad : Op::BroadcastBinary;
    if (!sliced(out)) { // one tile: N is 1 or the result is whole
      b.vector(op, srcs, {wholeLocs[oi].region()}, 0, 0, {}, attrs);
      continue;
    }
    int64_t per = tensor(out).numElements() / N;
    Loc o = outLoc(out, n0 * per, sl[oi][k]);
    b.vector(op, srcs, {o.region()}, 0, 0, {}, attrs);
    store(out, n0 * per, cnt * per, o);
  }
  int64_t e = tensor(out).numElements();
  if (accumulate) {
    uint32_t s = 0;
    if (!onChip(out))
      KILN_RETURN_IF_ERROR(slot("out", dtype(out), e, s));
    Loc o = outLoc(out, 0, s);
    b.vector(Op::Copy, {fb::Region(acc, 0)}, {o.region()}, 1, e);
    store(out, 0, e, o);
  } else if (!sliced(out)) {
    store(out, 0, e, wholeLocs.back());
  }
  return Status::ok();
}

} // namespace kiln::sa
