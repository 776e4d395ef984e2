//===- PlanOps.cpp - Vector-unit lowerings --------------------------------===//
//
// Ops that run on the vector unit stream row tiles of [rows, channels] views
// through double-buffered staging slots. Batch norm makes two passes (the
// statistics, then the normalization), as the statistics of the whole batch
// are needed before any output.
//
// Fused batch norm (kiln-convert-to-sa's `fuse`, docs/systolic.md "Fusion"):
// the statistics pass disappears when the producing convolution accumulated
// them in its epilogue; the residual add and the relu run on the normalized
// tile while it is on chip, each writing the element type the unfused op's
// result has, so the values are those of the unfused ops; a backward pass
// recomputes the relu mask from x with the forward's scale and shift instead
// of reading the forward output.
//
//===----------------------------------------------------------------------===//

#include "PlannerImpl.h"

#include <algorithm>

namespace kiln::sa {

using Op = fb::VectorOp;

/// Per-channel operands ([C]) on chip for the whole op.
Status loadVectors(Planner &p, const std::vector<int> &ids,
                          std::vector<Loc> &locs) {
  for (int id : ids) {
    uint32_t s = 0;
    if (!p.onChip(id))
      KILN_RETURN_IF_ERROR(
          p.slot("c", p.dtype(id), p.tensor(id).numElements(), s));
    locs.push_back(p.load(id, 0, p.tensor(id).numElements(), s));
  }
  return Status::ok();
}

Status outVectors(Planner &p, const std::vector<int> &ids,
                         std::vector<Loc> &locs) {
  for (int id : ids) {
    uint32_t s = 0;
    if (!p.onChip(id))
      KILN_RETURN_IF_ERROR(
          p.slot("c", p.dtype(id), p.tensor(id).numElements(), s));
    locs.push_back(p.outLoc(id, 0, s));
  }
  return Status::ok();
}

fb::VectorOp elementwiseOp(const Node &n, std::vector<int64_t> &iattrs) {
  switch (n.kind) {
  case NodeKind::Relu:
    return Op::Relu;
  case NodeKind::ReluBackward:
    return Op::ReluGrad;
  case NodeKind::Add:
    return Op::Add;
  case NodeKind::Activation:
  case NodeKind::ActivationBackward:
    iattrs = {n.activation};
    return n.kind == NodeKind::Activation ? Op::Activation
                                          : Op::ActivationGrad;
  case NodeKind::BiasAdd:
    return Op::ChannelAdd;
  case NodeKind::Dropout:
    return Op::Dropout;
  default:
    return Op::Copy;
  }
}

Status Planner::lowerElementwise(const Node &n) {
  int out = n.outputs[0];
  int64_t c = tensor(out).channels(), rows = tensor(out).numElements() / c;
  // A bias ([C]) and dropout's step (a scalar) are read whole; the other
  // inputs are tiled with the output.
  bool lastWhole = n.kind == NodeKind::BiasAdd || n.kind == NodeKind::Dropout;
  std::vector<int> tiled(n.inputs.begin(), n.inputs.end() - (lastWhole ? 1 : 0));
  std::vector<Loc> whole;
  if (lastWhole)
    KILN_RETURN_IF_ERROR(loadVectors(*this, {n.inputs.back()}, whole));
  std::vector<int> all = tiled;
  all.push_back(out);
  int64_t bpr = 0;
  for (int id : all)
    bpr += c * bytes(dtype(id));
  int64_t reserve = lastWhole ? 4 * c + 4096 : 0;
  int64_t tr = tileRows(rows, bpr, 2, budget() - reserve);
  Slots slots(*this, all, tr * c);
  std::vector<double> fattrs;
  std::vector<int64_t> iattrs;
  Op op = elementwiseOp(n, iattrs);
  if (n.kind == NodeKind::Dropout)
    fattrs = {n.ratio};
  for (int64_t r0 = 0, tile = 0; r0 < rows; r0 += tr, ++tile) {
    int k = int(tile % 2);
    int64_t cnt = std::min(tr, rows - r0);
    std::vector<fb::Region> srcs;
    for (size_t i = 0; i < tiled.size(); ++i) {
      uint32_t s = 0;
      if (!onChip(tiled[i]))
        KILN_RETURN_IF_ERROR(slots.get(i, k, s));
      srcs.push_back(load(tiled[i], r0 * c, cnt * c, s).region());
    }
    for (const Loc &l : whole)
      srcs.push_back(l.region());
    uint32_t d = 0;
    if (!onChip(out))
      KILN_RETURN_IF_ERROR(slots.get(tiled.size(), k, d));
    Loc dst = outLoc(out, r0 * c, d);
    // Dropout's mask follows the element's logical index: the tile's first.
    if (n.kind == NodeKind::Dropout)
      iattrs = {n.seed, n.stream, r0 * c};
    b.vector(op, srcs, {dst.region()}, cnt, c, fattrs, iattrs);
    store(out, r0 * c, cnt * c, dst);
  }
  return Status::ok();
}

/// The region `channels` elements after a place on chip.
static fb::Region after(const Loc &l, int64_t channels) {
  return fb::Region(l.buffer, l.offset + channels);
}

Status Planner::lowerBatchNorm(const Node &n) {
  int x = n.inputs[0], y = n.outputs[0], r = n.residual;
  int64_t c = tensor(x).channels(), rows = tensor(x).numElements() / c;
  std::vector<Loc> in, out, moments, scaleShift;
  KILN_RETURN_IF_ERROR(loadVectors(
      *this, {n.inputs[1], n.inputs[2], n.inputs[3], n.inputs[4]}, in));
  KILN_RETURN_IF_ERROR(outVectors(
      *this, {n.outputs[1], n.outputs[2], n.outputs[3], n.outputs[4]}, out));
  // The sums come from the convolution's epilogue, or from a pass here.
  if (n.moments >= 0)
    KILN_RETURN_IF_ERROR(loadVectors(*this, {n.moments}, moments));
  // The scale and shift are kept for a fused backward, or staged.
  if (n.scaleShift >= 0)
    KILN_RETURN_IF_ERROR(outVectors(*this, {n.scaleShift}, scaleShift));
  // Two per-channel rows: those of a fused neighbour's [2, C] tensor when
  // it was placed above, otherwise two staging slots.
  auto rows2 = [&](const std::vector<Loc> &placed, const char *first,
                   const char *second, Loc &a, Loc &b) -> Status {
    if (!placed.empty()) {
      a = placed[0];
      b = {placed[0].buffer, placed[0].offset + c};
      return Status::ok();
    }
    KILN_RETURN_IF_ERROR(slot(first, fb::DType::F32, c, a.buffer));
    return slot(second, fb::DType::F32, c, b.buffer);
  };
  Loc sum, sq, scale, shift;
  KILN_RETURN_IF_ERROR(rows2(moments, "sum", "sumsq", sum, sq));
  KILN_RETURN_IF_ERROR(rows2(scaleShift, "scale", "shift", scale, shift));
  // A residual's tile, and the normalized tile before the add (in y's
  // element type, as the unfused batch norm's output).
  std::vector<int> tiled = {x, y};
  if (r >= 0)
    tiled.insert(tiled.end(), {r, y});
  int64_t bpr = 0;
  for (int id : tiled)
    bpr += c * bytes(dtype(id));
  int64_t tr = tileRows(rows, bpr, 2, budget() - vectorBytes(16, c));
  Slots slots(*this, tiled, tr * c);
  if (n.moments < 0) {
    b.vector(Op::Fill, {}, {sum.region()}, 1, c, {0.0});
    b.vector(Op::Fill, {}, {sq.region()}, 1, c, {0.0});
    for (int64_t r0 = 0, tile = 0; r0 < rows; r0 += tr, ++tile) {
      int64_t cnt = std::min(tr, rows - r0);
      uint32_t s = 0;
      if (!onChip(x))
        KILN_RETURN_IF_ERROR(slots.get(0, int(tile % 2), s));
      Loc l = load(x, r0 * c, cnt * c, s);
      b.vector(Op::ChannelMoments, {l.region()}, {sum.region(), sq.region()},
               cnt, c);
    }
  }
  b.vector(Op::BnStats,
           {sum.region(), sq.region(), in[0].region(), in[1].region(),
            in[2].region(), in[3].region()},
           {out[0].region(), out[1].region(), scale.region(), shift.region(),
            out[2].region(), out[3].region()},
           1, c, {double(rows), n.epsilon, n.momentum});
  for (size_t i = 0; i < 4; ++i)
    store(n.outputs[i + 1], 0, c, out[i]);
  if (n.scaleShift >= 0)
    store(n.scaleShift, 0, 2 * c, scaleShift[0]);
  // After a statistics pass the tiles are walked backwards (the last tile
  // of the first pass may still be on chip); with the statistics from the
  // convolution forwards, so that a consumer pipelined with this op
  // (PlanOptions::pipeline) reads its tiles in the order they are stored.
  int64_t numTiles = (rows + tr - 1) / tr;
  for (int64_t step = 0; step < numTiles; ++step) {
    int64_t tile = n.moments >= 0 ? step : numTiles - 1 - step;
    int64_t r0 = tile * tr, cnt = std::min(tr, rows - r0);
    int k = int(step % 2);
    uint32_t s = 0, d = 0;
    if (!onChip(x))
      KILN_RETURN_IF_ERROR(slots.get(0, k, s));
    if (!onChip(y))
      KILN_RETURN_IF_ERROR(slots.get(1, k, d));
    Loc l = load(x, r0 * c, cnt * c, s);
    Loc o = outLoc(y, r0 * c, d);
    if (r < 0) {
      b.vector(Op::ChannelAffine, {l.region(), scale.region(), shift.region()},
               {o.region()}, cnt, c, {}, {n.fuseRelu ? 1 : 0});
    } else {
      uint32_t rs = 0, t = 0;
      if (!onChip(r))
        KILN_RETURN_IF_ERROR(slots.get(2, k, rs));
      KILN_RETURN_IF_ERROR(slots.get(3, k, t));
      Loc lr = load(r, r0 * c, cnt * c, rs);
      b.vector(Op::ChannelAffine, {l.region(), scale.region(), shift.region()},
               {fb::Region(t, 0)}, cnt, c, {}, {0});
      b.vector(Op::Add, {fb::Region(t, 0), lr.region()}, {o.region()}, cnt, c);
      if (n.fuseRelu)
        b.vector(Op::Relu, {o.region()}, {o.region()}, cnt, c);
    }
    store(y, r0 * c, cnt * c, o);
  }
  return Status::ok();
}

Status Planner::lowerBatchNormBackward(const Node &n) {
  int dy = n.inputs[0], x = n.inputs[1], dx = n.outputs[0];
  int64_t c = tensor(x).channels(), rows = tensor(x).numElements() / c;
  bool masked = n.scaleShift >= 0;
  std::vector<Loc> in, out, scaleShift;
  KILN_RETURN_IF_ERROR(
      loadVectors(*this, {n.inputs[2], n.inputs[3], n.inputs[4]}, in));
  KILN_RETURN_IF_ERROR(outVectors(*this, {n.outputs[1], n.outputs[2]}, out));
  if (masked)
    KILN_RETURN_IF_ERROR(loadVectors(*this, {n.scaleShift}, scaleShift));
  // The sums come from the epilogue of dy's producer, or from a pass here.
  bool summed = n.gradSums.sums >= 0;
  std::vector<Loc> sums;
  if (summed)
    KILN_RETURN_IF_ERROR(loadVectors(*this, {n.gradSums.sums}, sums));
  fb::Region s0, s1;
  if (summed) {
    s0 = sums[0].region();
    s1 = after(sums[0], c);
  } else {
    uint32_t a = 0, bb = 0;
    KILN_RETURN_IF_ERROR(slot("sdy", fb::DType::F32, c, a));
    KILN_RETURN_IF_ERROR(slot("sdyx", fb::DType::F32, c, bb));
    s0 = fb::Region(a, 0);
    s1 = fb::Region(bb, 0);
  }
  uint32_t A, B, K;
  for (auto [name, id] : {std::pair{"a", &A}, {"b", &B}, {"k", &K}})
    KILN_RETURN_IF_ERROR(slot(name, fb::DType::F32, c, *id));
  // A masked gradient's tile: the forward output recomputed in its element
  // type (dy's), then dy where it is positive.
  std::vector<int> tiled = {dy, x, dx};
  if (masked)
    tiled.push_back(dy);
  int64_t bpr = 0;
  for (int id : tiled)
    bpr += c * bytes(dtype(id));
  int64_t tr = tileRows(rows, bpr, 2, budget() - vectorBytes(16, c));
  Slots slots(*this, tiled, tr * c);
  auto mask = [&](Loc &ldy, const Loc &lx, int64_t cnt, int k) -> Status {
    if (!masked)
      return Status::ok();
    uint32_t m = 0;
    KILN_RETURN_IF_ERROR(slots.get(3, k, m));
    b.vector(Op::ChannelAffine,
             {lx.region(), scaleShift[0].region(), after(scaleShift[0], c)},
             {fb::Region(m, 0)}, cnt, c, {}, {0});
    b.vector(Op::ReluGrad, {ldy.region(), fb::Region(m, 0)},
             {fb::Region(m, 0)}, cnt, c);
    ldy = {m, 0};
    return Status::ok();
  };
  int64_t numTiles = (rows + tr - 1) / tr;
  if (!summed) {
    b.vector(Op::Fill, {}, {s0}, 1, c, {0.0});
    b.vector(Op::Fill, {}, {s1}, 1, c, {0.0});
  }
  for (int64_t tile = 0; tile < numTiles && !summed; ++tile) {
    int64_t r0 = tile * tr, cnt = std::min(tr, rows - r0);
    uint32_t a = 0, bb = 0;
    if (!onChip(dy))
      KILN_RETURN_IF_ERROR(slots.get(0, int(tile % 2), a));
    if (!onChip(x))
      KILN_RETURN_IF_ERROR(slots.get(1, int(tile % 2), bb));
    Loc ldy = load(dy, r0 * c, cnt * c, a), lx = load(x, r0 * c, cnt * c, bb);
    KILN_RETURN_IF_ERROR(mask(ldy, lx, cnt, int(tile % 2)));
    b.vector(Op::ChannelCenteredDot,
             {ldy.region(), lx.region(), in[1].region()}, {s0, s1}, cnt, c);
  }
  b.vector(Op::BnGradCoeffs,
           {s0, s1, in[0].region(), in[1].region(), in[2].region()},
           {out[0].region(), out[1].region(), fb::Region(A, 0),
            fb::Region(B, 0), fb::Region(K, 0)},
           1, c, {double(rows), n.epsilon});
  store(n.outputs[1], 0, c, out[0]);
  store(n.outputs[2], 0, c, out[1]);
  // After the sums pass backwards (its last tile may still be on chip),
  // else in the order a pipelined consumer reads.
  for (int64_t step = 0; step < numTiles; ++step) {
    int64_t tile = summed ? step : numTiles - 1 - step;
    int64_t r0 = tile * tr, cnt = std::min(tr, rows - r0);
    int k = int(step % 2);
    uint32_t a = 0, bb = 0, d = 0;
    if (!onChip(dy))
      KILN_RETURN_IF_ERROR(slots.get(0, k, a));
    if (!onChip(x))
      KILN_RETURN_IF_ERROR(slots.get(1, k, bb));
    if (!onChip(dx))
      KILN_RETURN_IF_ERROR(slots.get(2, k, d));
    Loc ldy = load(dy, r0 * c, cnt * c, a), lx = load(x, r0 * c, cnt * c, bb);
    KILN_RETURN_IF_ERROR(mask(ldy, lx, cnt, k));
    Loc o = outLoc(dx, r0 * c, d);
    b.vector(Op::ChannelAffine2,
             {ldy.region(), lx.region(), fb::Region(A, 0), fb::Region(B, 0),
              fb::Region(K, 0)},
             {o.region()}, cnt, c);
    store(dx, r0 * c, cnt * c, o);
  }
  return Status::ok();
}

Status GradSumsEpilogue::begin(Planner &p, const Node::GradSums &g) {
  gs = g;
  if (gs.sums < 0)
    return Status::ok();
  channels = p.tensor(gs.x).channels();
  std::vector<int> ids = {gs.mean};
  if (masked())
    ids.push_back(gs.scaleShift);
  KILN_RETURN_IF_ERROR(loadVectors(p, ids, vectors));
  KILN_RETURN_IF_ERROR(outVectors(p, {gs.sums}, sums));
  p.b.vector(Op::Fill, {}, {sums[0].region()}, 1, 2 * channels, {0.0});
  return Status::ok();
}

void GradSumsEpilogue::tile(Planner &p, fb::Region dy, fb::Region x,
                            uint32_t mask, int64_t rows, int64_t c0,
                            int64_t w) {
  auto at = [&](const Loc &l, int64_t offset) {
    return fb::Region(l.buffer, l.offset + offset);
  };
  // As the batch norm's own pass: the forward output recomputed in dy's
  // type, its sign masking dy.
  if (masked()) {
    p.b.vector(Op::ChannelAffine,
               {x, at(vectors[1], c0), at(vectors[1], channels + c0)},
               {fb::Region(mask, 0)}, rows, w, {}, {0});
    p.b.vector(Op::ReluGrad, {dy, fb::Region(mask, 0)}, {fb::Region(mask, 0)},
               rows, w);
    dy = fb::Region(mask, 0);
  }
  p.b.vector(Op::ChannelCenteredDot, {dy, x, at(vectors[0], c0)},
             {at(sums[0], c0), at(sums[0], channels + c0)}, rows, w);
}

void GradSumsEpilogue::end(Planner &p) {
  if (gs.sums >= 0)
    p.store(gs.sums, 0, 2 * channels, sums[0]);
}

Status Planner::lowerReduceSum(const Node &n) {
  int x = n.inputs[0], y = n.outputs[0];
  int64_t c = tensor(y).numElements(), rows = tensor(x).numElements() / c;
  uint32_t acc, ys = 0;
  KILN_RETURN_IF_ERROR(slot("sum", fb::DType::F32, c, acc));
  int64_t tr = tileRows(rows, c * bytes(dtype(x)), 2, budget() - 8 * c);
  Slots slots(*this, {x}, tr * c);
  b.vector(Op::Fill, {}, {fb::Region(acc, 0)}, 1, c, {0.0});
  for (int64_t r0 = 0, tile = 0; r0 < rows; r0 += tr, ++tile) {
    int64_t cnt = std::min(tr, rows - r0);
    uint32_t s = 0;
    if (!onChip(x))
      KILN_RETURN_IF_ERROR(slots.get(0, int(tile % 2), s));
    Loc l = load(x, r0 * c, cnt * c, s);
    b.vector(Op::ChannelSum, {l.region()}, {fb::Region(acc, 0)}, cnt, c);
  }
  if (!onChip(y))
    KILN_RETURN_IF_ERROR(slot("out", dtype(y), c, ys));
  Loc o = outLoc(y, 0, ys);
  b.vector(Op::Copy, {fb::Region(acc, 0)}, {o.region()}, 1, c);
  store(y, 0, c, o);
  return Status::ok();
}

Status Planner::lowerLoss(const Node &n) {
  bool grad = n.kind == NodeKind::SoftmaxXentBackward;
  int logits = n.inputs[grad ? 1 : 0], labels = n.inputs[grad ? 2 : 1];
  int out = n.outputs[0];
  int64_t rows = tensor(logits).shape[0], k = tensor(logits).shape[1];
  int64_t bpr = k * 4 * (grad ? 2 : 1) + 4;
  int64_t tr = tileRows(rows, bpr, 2, budget() - 1024);
  std::vector<Loc> scalars;
  uint32_t lossSlot = 0;
  if (grad)
    KILN_RETURN_IF_ERROR(loadVectors(*this, {n.inputs[0]}, scalars));
  else if (!onChip(out))
    KILN_RETURN_IF_ERROR(slot("loss", dtype(out), 1, lossSlot));
  Loc loss = grad ? Loc() : outLoc(out, 0, lossSlot);
  if (!grad)
    b.vector(Op::Fill, {}, {loss.region()}, 1, 1, {0.0});
  Slots slots(*this, {logits, labels, out}, tr * k);
  std::vector<double> attrs = {n.labelSmoothing, 1.0 / double(rows)};
  for (int64_t r0 = 0, tile = 0; r0 < rows; r0 += tr, ++tile) {
    int64_t cnt = std::min(tr, rows - r0);
    int kk = int(tile % 2);
    uint32_t a = 0, c = 0, d = 0;
    if (!onChip(logits))
      KILN_RETURN_IF_ERROR(slots.get(0, kk, a));
    if (!onChip(labels))
      KILN_RETURN_IF_ERROR(slots.get(1, kk, c));
    Loc l = load(logits, r0 * k, cnt * k, a), lab = load(labels, r0, cnt, c);
    if (grad) {
      if (!onChip(out))
        KILN_RETURN_IF_ERROR(slots.get(2, kk, d));
      Loc o = outLoc(out, r0 * k, d);
      b.vector(Op::XentGrad, {l.region(), lab.region(), scalars[0].region()},
               {o.region()}, cnt, k, attrs);
      store(out, r0 * k, cnt * k, o);
    } else {
      b.vector(Op::XentLoss, {l.region(), lab.region()}, {loss.region()}, cnt,
               k, attrs);
    }
  }
  if (!grad)
    store(out, 0, 1, loss);
  return Status::ok();
}

Status Planner::lowerOptimizer(const Node &n) {
  bool lars = n.kind == NodeKind::LarsUpdate;
  int w = n.inputs[0], gr = n.inputs[1], v = n.inputs[2];
  int w2 = n.outputs[0], v2 = n.outputs[1];
  int64_t e = tensor(w).numElements(), c = std::min<int64_t>(e, 1024);
  int64_t rows = (e + c - 1) / c;
  std::vector<Loc> lr;
  KILN_RETURN_IF_ERROR(loadVectors(*this, {n.inputs[3]}, lr));
  int64_t bpr = 5 * c * 4;
  int64_t tr = tileRows(rows, bpr, 2, budget() - 4096);
  Slots slots(*this, {w, gr, v, w2, v2}, tr * c);
  // Tiles are rows of c elements; the last may be partial.
  auto tiles = [&](auto &&body) -> Status {
    for (int64_t r0 = 0, tile = 0; r0 < rows; r0 += tr, ++tile) {
      int64_t begin = r0 * c, count = std::min(tr * c, e - begin);
      KILN_RETURN_IF_ERROR(body(begin, count, int(tile % 2)));
    }
    return Status::ok();
  };
  uint32_t wsq = 0, gsq = 0;
  if (lars) {
    KILN_RETURN_IF_ERROR(slot("wsq", fb::DType::F32, 1, wsq));
    KILN_RETURN_IF_ERROR(slot("gsq", fb::DType::F32, 1, gsq));
    b.vector(Op::Fill, {}, {fb::Region(wsq, 0)}, 1, 1, {0.0});
    b.vector(Op::Fill, {}, {fb::Region(gsq, 0)}, 1, 1, {0.0});
    KILN_RETURN_IF_ERROR(tiles([&](int64_t begin, int64_t count, int k) {
      uint32_t a = 0, bb = 0;
      if (!onChip(w))
        KILN_RETURN_IF_ERROR(slots.get(0, k, a));
      if (!onChip(gr))
        KILN_RETURN_IF_ERROR(slots.get(1, k, bb));
      Loc lw = load(w, begin, count, a), lg = load(gr, begin, count, bb);
      b.vector(Op::SumSquares, {lw.region()}, {fb::Region(wsq, 0)}, 1, count);
      b.vector(Op::SumSquares, {lg.region()}, {fb::Region(gsq, 0)}, 1, count);
      return Status::ok();
    }));
  }
  return tiles([&](int64_t begin, int64_t count, int k) {
    uint32_t s[5] = {0, 0, 0, 0, 0};
    int ids[5] = {w, gr, v, w2, v2};
    for (int i = 0; i < 5; ++i)
      if (!onChip(ids[i]))
        KILN_RETURN_IF_ERROR(slots.get(size_t(i), k, s[i]));
    Loc lw = load(w, begin, count, s[0]), lg = load(gr, begin, count, s[1]),
        lv = load(v, begin, count, s[2]);
    Loc ow = outLoc(w2, begin, s[3]), ov = outLoc(v2, begin, s[4]);
    if (lars)
      b.vector(Op::LarsUpdate,
               {lw.region(), lg.region(), lv.region(), lr[0].region(),
                fb::Region(wsq, 0), fb::Region(gsq, 0)},
               {ow.region(), ov.region()}, 1, count,
               {n.momentum, n.eta, n.weightDecay, n.epsilon, n.skip ? 1.0 : 0.0,
                n.nesterov ? 1.0 : 0.0});
    else
      b.vector(Op::SgdUpdate,
               {lw.region(), lg.region(), lv.region(), lr[0].region()},
               {ow.region(), ov.region()}, 1, count,
               {n.momentum, n.weightDecay, n.nesterov ? 1.0 : 0.0});
    store(w2, begin, count, ow);
    store(v2, begin, count, ov);
    return Status::ok();
  });
}

Status Planner::lowerLearningRate(const Node &n) {
  std::vector<Loc> in, out;
  KILN_RETURN_IF_ERROR(loadVectors(*this, n.inputs, in));
  KILN_RETURN_IF_ERROR(outVectors(*this, n.outputs, out));
  b.vector(Op::LearningRate, {in[0].region(), in[1].region()},
           {out[0].region()}, 1, tensor(n.inputs[1]).numElements(), {},
           {n.schedule});
  store(n.outputs[0], 0, 1, out[0]);
  return Status::ok();
}

Status Planner::lowerAllReduce(const Node &n) {
  std::vector<uint32_t> buffers;
  for (int id : n.inputs)
    buffers.push_back(home(id));
  b.allReduce(buffers);
  return Status::ok();
}

} // namespace kiln::sa
