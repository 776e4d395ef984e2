//===- PlanPool.cpp - Pooling on the vector unit --------------------------===//
//
// Window pooling (max, average, their gradients, ceil mode) streams whole
// images, or row bands of one image, through double-buffered staging slots;
// global average pooling streams whole images.
//
//===----------------------------------------------------------------------===//

#include "PlannerImpl.h"

#include <algorithm>

namespace kiln::sa {

using Op = fb::VectorOp;

namespace {

/// The input rows that output rows [o0, o1) of a pooling window read, as an
/// instruction of its own: rows [r0, r1) of the image with paddings
/// `top`/`bottom` such that the instruction's windows are exactly output
/// rows o0.. of the whole image (kiln/ref/window.h's rule on the band gives
/// o1 - o0 rows). Interior band edges have no padding: the halo rows of the
/// neighbouring bands are read instead. `minEnd` extends a band to at least
/// that row (rows no window reads, which a gradient zeroes).
struct Band {
  int64_t r0, r1, top, bottom;
};

Band windowBand(const Node &n, int64_t h, int64_t oh, int64_t o0, int64_t o1,
                int64_t minEnd = 0) {
  int64_t kh = n.window[0], s = n.strides[0], pt = n.padding[0];
  Band b;
  int64_t start = o0 * s - pt;
  b.r0 = std::max<int64_t>(0, start);
  b.top = b.r0 - start;
  int64_t end = (o1 - 1) * s - pt + kh;
  if (o1 == oh) {
    // The last band keeps the image's bottom padding. A ceil-mode overhang
    // beyond it becomes padding too: the window rule counts no window in a
    // band shorter than the window, as the last band of a ceil-mode pool can
    // be.
    b.r1 = h;
    b.bottom = o0 > 0 ? std::max(n.padding[1], end - h) : n.padding[1];
  } else {
    b.r1 = std::min(h, std::max(end, minEnd));
    b.bottom = std::max<int64_t>(0, end - b.r1);
  }
  return b;
}

} // namespace

Status Planner::lowerPool(const Node &n) {
  bool grad = n.kind == NodeKind::MaxPoolBackward ||
              n.kind == NodeKind::AvgPoolBackward;
  // The full-resolution tensor: the forward input (or the gradient's result).
  int big = grad ? n.outputs[0] : n.inputs[0];
  int small = grad ? n.inputs[0] : n.outputs[0];
  const Tensor &bt = tensor(big), &st = tensor(small);
  int64_t N = bt.shape[0], H = bt.shape[1], OH = st.shape[1],
          perBig = bt.numElements() / N, perSmall = st.numElements() / N,
          bigRow = perBig / H, smallRow = perSmall / OH;
  auto isBig = [&](int id) {
    return id == big ||
           (n.kind == NodeKind::MaxPoolBackward && id == n.inputs[1]);
  };
  // A max pool's gradient may take the reductions of the batch-norm
  // backward its result feeds (Node::GradSums): the batch norm's x (and
  // mask) per result tile, its inputs after dy and x.
  size_t numInputs = n.kind == NodeKind::MaxPoolBackward ? 2 : n.inputs.size();
  std::vector<int> all(n.inputs.begin(), n.inputs.begin() + numInputs);
  all.push_back(n.outputs[0]);
  GradSumsEpilogue sums;
  KILN_RETURN_IF_ERROR(sums.begin(*this, n.gradSums));
  // Bytes per result element of the batch norm's x and mask slots.
  std::vector<int64_t> sumsBytes;
  int64_t room = budget();
  if (sums.active()) {
    if (!onChip(n.gradSums.x))
      sumsBytes.push_back(bytes(dtype(n.gradSums.x)));
    if (sums.masked())
      sumsBytes.push_back(bytes(dtype(n.outputs[0])));
    room -= vectorBytes(8, bt.channels());
  }
  int64_t perImage = 0;
  for (int64_t e : sumsBytes)
    perImage += perBig * e;
  for (int id : all)
    perImage += (isBig(id) ? perBig : perSmall) * bytes(dtype(id));

  // A tile is `nb` whole images, or one image's band of output rows when a
  // whole image does not fit. A forward band reads its windows' input rows
  // (a halo of kh - sh rows shared with the next band). A gradient band owns
  // the result rows [own(j), own(j + 1)): from the first row its first
  // window reads to the next band's; it recomputes the earlier output rows
  // whose windows reach into those rows, so that every result row sums all
  // of its windows in one instruction, in the whole image's order, and is
  // stored once.
  int64_t kh = n.window[0], s = n.strides[0];
  int64_t haloRows = grad ? (kh + s - 1) / s - 1 : 0;
  std::vector<int64_t> starts; // output rows where bands start, then OH
  auto own = [&](size_t j) {
    if (j == 0)
      return int64_t(0);
    if (j + 1 == starts.size())
      return H;
    return std::max<int64_t>(0, starts[j] * s - n.padding[0]);
  };
  auto firstOut = [&](size_t j) {
    return std::max<int64_t>(0, starts[j] - haloRows);
  };
  auto bandOf = [&](size_t j) {
    return windowBand(n, H, OH, firstOut(j), starts[j + 1],
                      grad ? own(j + 1) : 0);
  };
  auto split = [&](int64_t rows) {
    starts.clear();
    for (int64_t o = 0; o < OH; o += rows)
      starts.push_back(o);
    starts.push_back(OH);
  };
  // Staging elements of each operand for the largest band.
  auto bandElems = [&](std::vector<int64_t> &elems) {
    elems.assign(all.size(), 0);
    for (size_t j = 0; j + 1 < starts.size(); ++j) {
      Band band = bandOf(j);
      for (size_t i = 0; i < all.size(); ++i)
        elems[i] = std::max(
            elems[i], isBig(all[i]) ? (band.r1 - band.r0) * bigRow
                                    : (starts[j + 1] - firstOut(j)) * smallRow);
    }
  };
  // A banded gradient computes more rows than it keeps: into staging, then
  // its own rows to the result's home.
  int out = n.outputs[0];
  auto staged = [&](size_t i, bool banded) {
    return i + 1 == all.size() ? !onChip(out) || (grad && banded)
                               : !onChip(all[i]);
  };
  // Whole images when two fit (one tile's transfers overlap the other's
  // instruction); else double-buffered row bands, single ones last.
  int copies = 2;
  int64_t nb = std::max<int64_t>(1, std::min(N, room / (2 * perImage)));
  std::vector<int64_t> elems(all.size(), 0);
  if (2 * nb * perImage <= room || (OH == 1 && perImage <= room)) {
    copies = 2 * perImage <= room ? 2 : 1;
    split(OH);
    for (size_t i = 0; i < all.size(); ++i)
      elems[i] = nb * (isBig(all[i]) ? perBig : perSmall);
  } else {
    // Row bands: the most rows that fit double-buffered, else single.
    nb = 1;
    auto fits = [&](int64_t rows, int c) {
      split(rows);
      bandElems(elems);
      int64_t total = 0;
      for (size_t i = 0; i < all.size(); ++i)
        if (staged(i, true))
          total += (elems[i] * bytes(dtype(all[i])) + 63) / 64 * 64;
      for (int64_t e : sumsBytes)
        total += (elems.back() * e + 63) / 64 * 64;
      return c * total <= room;
    };
    int64_t rowsPerBand = 0;
    for (copies = 2; copies >= 1; --copies) {
      for (int64_t rows = OH - 1; rows >= 1 && rowsPerBand == 0; --rows)
        if (fits(rows, copies))
          rowsPerBand = rows;
      if (rowsPerBand > 0)
        break;
    }
    if (rowsPerBand == 0)
      return invalidArgumentError(
          "one output row of the window does not fit in staging memory");
    split(rowsPerBand);
    bandElems(elems);
  }
  bool banded = starts.size() > 2;
  bool outStaged = staged(all.size() - 1, banded);
  std::vector<uint32_t> slotIds;
  for (int k = 0; k < copies; ++k)
    for (size_t i = 0; i < all.size(); ++i) {
      uint32_t sl = 0;
      if (staged(i, banded))
        KILN_RETURN_IF_ERROR(slot("img", dtype(all[i]), elems[i], sl));
      slotIds.push_back(sl);
    }
  // The batch norm's x and mask of a result tile.
  uint32_t sumsX[2] = {0, 0}, sumsMask[2] = {0, 0};
  for (int k = 0; k < copies && sums.active(); ++k) {
    if (!onChip(n.gradSums.x))
      KILN_RETURN_IF_ERROR(
          slot("bnx", dtype(n.gradSums.x), elems.back(), sumsX[k]));
    if (sums.masked())
      KILN_RETURN_IF_ERROR(
          slot("mask", dtype(out), elems.back(), sumsMask[k]));
  }
  // The sums over `count` result elements from `at` while they are on chip.
  int64_t channels = bt.channels();
  auto takeSums = [&](fb::Region result, int64_t at, int64_t count, int k) {
    if (!sums.active())
      return;
    Loc x = load(n.gradSums.x, at, count, sumsX[k]);
    sums.tile(*this, result, x.region(), sumsMask[k], count / channels, 0,
              channels);
  };
  Op op = n.kind == NodeKind::MaxPool           ? Op::MaxPool
          : n.kind == NodeKind::MaxPoolBackward ? Op::MaxPoolGrad
          : n.kind == NodeKind::AvgPool         ? Op::AvgPool
                                                : Op::AvgPoolGrad;
  int64_t tile = 0;
  for (int64_t n0 = 0; n0 < N; n0 += nb) {
    int64_t cnt = std::min(nb, N - n0);
    for (size_t j = 0; j + 1 < starts.size(); ++j, ++tile) {
      size_t base = size_t(tile % copies) * all.size();
      Band band = bandOf(j);
      int64_t o0 = firstOut(j), o1 = starts[j + 1];
      // Element offsets of the band in each operand (image n0 on).
      auto first = [&](int id) {
        return isBig(id) ? n0 * perBig + band.r0 * bigRow
                         : n0 * perSmall + o0 * smallRow;
      };
      auto count = [&](int id) {
        return banded ? (isBig(id) ? (band.r1 - band.r0) * bigRow
                                   : (o1 - o0) * smallRow)
                      : cnt * (isBig(id) ? perBig : perSmall);
      };
      std::vector<fb::Region> srcs;
      for (size_t i = 0; i < numInputs; ++i) {
        int id = n.inputs[i];
        srcs.push_back(
            load(id, first(id), count(id), slotIds[base + i]).region());
      }
      uint32_t outSlot = slotIds[base + numInputs];
      Loc o = outStaged ? Loc{outSlot, 0} : outLoc(out, first(out), outSlot);
      std::vector<int64_t> shape = {
          cnt,         band.r1 - band.r0, bt.shape[2], bt.shape[3],
          n.window[0], n.window[1],       n.strides[0], n.strides[1],
          band.top,    band.bottom,       n.padding[2], n.padding[3]};
      // The ceil mode is a 13th attribute, absent in floor mode.
      if (n.ceilMode)
        shape.push_back(1);
      b.vector(op, srcs, {o.region()}, 0, 0, {}, shape);
      int k = int(tile % copies);
      if (!(grad && banded)) {
        takeSums(o.region(), first(out), count(out), k);
        store(out, first(out), count(out), o);
        continue;
      }
      // The rows this band owns.
      int64_t r0 = own(j), rows = own(j + 1) - r0;
      if (rows == 0)
        continue;
      Loc from{outSlot, (r0 - band.r0) * bigRow};
      int64_t at = n0 * perBig + r0 * bigRow;
      takeSums(from.region(), at, rows * bigRow, k);
      if (onChip(out))
        b.vector(Op::Copy, {from.region()}, {fb::Region(home(out), at)}, rows,
                 bigRow);
      else
        store(out, at, rows * bigRow, from);
    }
  }
  sums.end(*this);
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
