//===- PlanConv.cpp - Matrix-unit lowerings: convolutions and matmuls -----===//
//
// Convolutions are implicit GEMMs: no im2col buffer is built; each matmul's
// views address the staged input directly, one filter tap (or a group of
// taps packed into the contraction when channels are few) per weight tile.
//
// - Forward and backward-data share one engine over an output "lattice":
//   forward computes every output position; backward-data with stride s
//   is split into s x s classes of output positions by parity, each a
//   stride-1 gather over the output gradient with the taps of matching
//   parity (classes without taps are zero).
// - Backward-filter keeps the output-gradient chunk stationary (k = pixels,
//   n = output channels) and streams the transposed input, one row per
//   (tap, input channel), accumulating dW over the whole batch.
// - The space-to-depth stem (REFERENCE.md): the input arrives as
//   [N, H/2, W/2, 4C] and the 7x7/2 filter is read as a zero-padded 8x8
//   filter folded into a 4x4 stride-1 filter over 4C channels:
//   W'[a, b, (p, q, c)] = W[2a + p - 1, 2b + q - 1, c] (out of range: 0).
//
//===----------------------------------------------------------------------===//

#include "PlannerImpl.h"

#include <algorithm>
#include <numeric>

namespace kiln::sa {

namespace {

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Filter taps along one axis: tap i has filter index k0 + i * kStep and
/// input offset c0 + i * cStep (input coordinate = lattice coordinate *
/// a + offset).
struct TapAxis {
  int64_t count = 0, k0 = 0, kStep = 1, c0 = 0, cStep = 1;
  int64_t cMin() const { return std::min(c0, c0 + (count - 1) * cStep); }
  int64_t cMax() const { return std::max(c0, c0 + (count - 1) * cStep); }
};

/// One gather convolution: y[lattice] = sum over taps of x * w.
struct ConvInstance {
  int x = -1, w = -1, y = -1;
  int64_t N = 0, IH = 0, IW = 0, IC = 0; // streamed input
  int64_t OH = 0, OW = 0, OC = 0;        // output tensor
  int64_t KH = 0, KW = 0;                // stored filter
  /// Filter stored [KH, KW, OC, IC] (backward data) instead of [.., IC, OC].
  bool wTransposed = false;
  /// Input channels are (p, q, c) of a space-to-depth stem; c < s2dC.
  int64_t s2dC = 0;
  /// Output lattice: oh = oh2 * sy + py for oh2 < OH2, likewise ow.
  int64_t sy = 1, sx = 1, py = 0, px = 0, OH2 = 0, OW2 = 0;
  /// Input coordinate = lattice coordinate * a + tap offset.
  int64_t ay = 1, ax = 1;
  TapAxis th, tw;
  /// Grouped convolutions: IC and OC are one group's channels; the tensors
  /// have XC and YC channels and the filter WC along its last dimension
  /// (forward: output channels; backward data: the contraction). Group g
  /// reads channels [xc0, xc0 + IC) of x, writes [yc0, yc0 + OC) of y and
  /// takes the filter's last dimension from woff (atGroup sets them).
  int64_t groups = 1, XC = 0, YC = 0, WC = 0, xc0 = 0, yc0 = 0, woff = 0;
  /// Forward with a fused batch norm: the [2, C] f32 tensor the epilogue
  /// accumulates the output's channel sums and sums of squares into.
  int moments = -1;
  /// Stride-1 backward data whose output is a batch-norm backward's dy: the
  /// reductions that batch norm takes in this epilogue.
  Node::GradSums gradSums;
  /// A strided 1x1 convolution without padding as a stride-1 one over the
  /// pixels it reads (IH x IW above): tiles load input rows and columns
  /// (r * subH, c * subW) of the stored [N, srcIH, srcIW, IC] input.
  int64_t subH = 0, subW = 0, srcIH = 0, srcIW = 0;
};

/// The instance of group g.
ConvInstance atGroup(ConvInstance c, int64_t g) {
  c.xc0 = g * c.IC;
  c.yc0 = g * c.OC;
  c.woff = g * (c.wTransposed ? c.IC : c.OC);
  return c;
}

/// Sets the per-group channel counts of an instance whose IC and OC are
/// still the tensors' channels.
void setGroups(ConvInstance &c, int64_t groups) {
  c.groups = groups;
  c.XC = c.IC;
  c.YC = c.OC;
  c.IC /= groups;
  c.OC /= groups;
  c.WC = c.wTransposed ? c.XC : c.YC;
}

/// Weight tiles: a rectangle of taps and a chunk of input channels.
struct KTile {
  int64_t i0, gh, j0, gw, ic0, cc;
};

std::vector<KTile> kTiles(const ConvInstance &c, int64_t R, bool pack) {
  std::vector<KTile> tiles;
  if (!pack) {
    for (int64_t i = 0; i < c.th.count; ++i)
      for (int64_t j = 0; j < c.tw.count; ++j)
        for (int64_t ic = 0; ic < c.IC; ic += (c.s2dC ? c.IC : R))
          tiles.push_back(
              {i, 1, j, 1, ic, std::min(c.s2dC ? c.IC : R, c.IC - ic)});
    return tiles;
  }
  if (c.s2dC) { // all 4C channels of a tap together
    int64_t gw = std::max<int64_t>(1, std::min(c.tw.count, R / c.IC));
    int64_t gh =
        gw == c.tw.count
            ? std::max<int64_t>(1, std::min(c.th.count, R / (gw * c.IC)))
            : 1;
    for (int64_t i = 0; i < c.th.count; i += gh)
      for (int64_t j = 0; j < c.tw.count; j += gw)
        tiles.push_back({i, std::min(gh, c.th.count - i), j,
                         std::min(gw, c.tw.count - j), 0, c.IC});
    return tiles;
  }
  if (c.IC >= R) {
    for (int64_t i = 0; i < c.th.count; ++i)
      for (int64_t j = 0; j < c.tw.count; ++j)
        for (int64_t ic = 0; ic < c.IC; ic += R)
          tiles.push_back({i, 1, j, 1, ic, std::min(R, c.IC - ic)});
    return tiles;
  }
  int64_t gw = std::max<int64_t>(1, std::min(c.tw.count, R / c.IC));
  int64_t gh = gw == c.tw.count
                   ? std::max<int64_t>(1, std::min(c.th.count, R / (gw * c.IC)))
                   : 1;
  for (int64_t i = 0; i < c.th.count; i += gh)
    for (int64_t j = 0; j < c.tw.count; j += gw)
      tiles.push_back({i, std::min(gh, c.th.count - i), j,
                       std::min(gw, c.tw.count - j), 0, c.IC});
  return tiles;
}

/// The staged filter of output channels [oc0, oc0 + ocg): [KH, KW, IC, ocg]
/// (or [KH, KW, ocg, IC] when transposed).
void stageWeights(Planner &p, const ConvInstance &c, int64_t oc0, int64_t ocg,
                  uint32_t slot) {
  int64_t wIC = c.s2dC ? c.s2dC : c.IC;
  if (!c.wTransposed) {
    int64_t rows = c.KH * c.KW * wIC;
    p.b.dma(OperandSpec::matrix(p.home(c.w), c.woff + oc0, rows, ocg, c.WC),
            OperandSpec::matrix(slot, 0, rows, ocg, ocg));
    return;
  }
  OperandSpec src;
  src.buffer = p.home(c.w);
  src.rows = {c.KH * c.KW, ocg};
  src.cols = {c.IC};
  src.coords = {{c.OC * c.WC, 0, c.KH * c.KW, {1, 0}, {0}},
                {c.WC, oc0, c.OC, {0, 1}, {0}},
                {1, c.woff, c.woff + c.IC, {0, 0}, {1}}};
  p.b.dma(src, OperandSpec::matrix(slot, 0, c.KH * c.KW * ocg, c.IC, c.IC));
}

OperandSpec weightView(const ConvInstance &c, const KTile &k, uint32_t slot,
                       int64_t ocg, int64_t ob0, int64_t obw) {
  OperandSpec v;
  v.buffer = slot;
  v.cols = {obw};
  int64_t khStride, kwStride, icStride, ocStride;
  int64_t wIC = c.s2dC ? c.s2dC : c.IC;
  if (c.wTransposed) {
    khStride = c.KW * ocg * wIC;
    kwStride = ocg * wIC;
    icStride = 1;
    ocStride = wIC;
  } else {
    khStride = c.KW * wIC * ocg;
    kwStride = wIC * ocg;
    icStride = ocg;
    ocStride = 1;
  }
  int64_t kh0 = c.th.k0 + k.i0 * c.th.kStep, kw0 = c.tw.k0 + k.j0 * c.tw.kStep;
  if (c.s2dC) {
    v.rows = {k.gh, k.gw, 2, 2, c.s2dC};
    v.coords = {{khStride, kh0, c.KH, {c.th.kStep, 0, 1, 0, 0}, {0}},
                {kwStride, kw0, c.KW, {0, c.tw.kStep, 0, 1, 0}, {0}},
                {icStride, 0, c.s2dC, {0, 0, 0, 0, 1}, {0}},
                {ocStride, ob0, ocg, {0, 0, 0, 0, 0}, {1}}};
    return v;
  }
  v.rows = {k.gh, k.gw, k.cc};
  v.coords = {{khStride, kh0, c.KH, {c.th.kStep, 0, 0}, {0}},
              {kwStride, kw0, c.KW, {0, c.tw.kStep, 0}, {0}},
              {icStride, k.ic0, c.IC, {0, 0, 1}, {0}},
              {ocStride, ob0, ocg, {0, 0, 0}, {1}}};
  return v;
}

/// A tile of the lattice: images [n0, n0 + nb), lattice rows [r0, r0 + cnt),
/// and the input rows [ih0, ih0 + slabRows) it reads.
struct Tile {
  int64_t n0, nb, r0, cnt, ih0, slabRows;
};

Tile makeTile(const ConvInstance &c, int64_t n0, int64_t nb, int64_t r0,
              int64_t cnt) {
  int64_t lo = std::max<int64_t>(0, r0 * c.ay + c.th.cMin());
  int64_t hi = std::min(c.IH, (r0 + cnt - 1) * c.ay + c.th.cMax() + 1);
  return {n0, nb, r0, cnt, lo, std::max<int64_t>(0, hi - lo)};
}

/// The input of a tile for weight tile `k`: rows (n, lattice row, lattice
/// column) x columns (taps, channels) of the slab (images [n0, n0 + nb) of
/// the buffer, input rows [ih0, ih0 + slabRows)).
OperandSpec inputView(const ConvInstance &c, const Tile &t, const KTile &k,
                      uint32_t slab, int64_t n0, int64_t nBound) {
  OperandSpec v;
  v.buffer = slab;
  v.rows = {t.nb, t.cnt, c.OW2};
  v.cols = {k.gh, k.gw, k.cc};
  int64_t rowOff = t.r0 * c.ay + c.th.c0 + k.i0 * c.th.cStep - t.ih0;
  v.coords = {
      {std::max<int64_t>(1, t.slabRows) * c.IW * c.IC,
       n0,
       nBound,
       {1, 0, 0},
       {0, 0, 0}},
      {c.IW * c.IC, rowOff, t.slabRows, {0, c.ay, 0}, {c.th.cStep, 0, 0}},
      {c.IC,
       c.tw.c0 + k.j0 * c.tw.cStep,
       c.IW,
       {0, 0, c.ax},
       {0, c.tw.cStep, 0}},
      {1, k.ic0, c.IC, {0, 0, 0}, {0, 0, 1}}};
  return v;
}

/// The output positions of a tile's lattice rows, columns [oc0, oc0 + w).
OperandSpec outputView(const ConvInstance &c, const Tile &t, uint32_t buffer,
                       int64_t oc0, int64_t w) {
  OperandSpec v;
  v.buffer = buffer;
  v.rows = {t.nb, t.cnt, c.OW2};
  v.cols = {w};
  v.coords = {{c.OH * c.OW * c.YC, t.n0, c.N, {1, 0, 0}, {0}},
              {c.OW * c.YC, t.r0 * c.sy + c.py, c.OH, {0, c.sy, 0}, {0}},
              {c.YC, c.px, c.OW, {0, 0, c.sx}, {0}},
              {1, c.yc0 + oc0, c.YC, {0, 0, 0}, {1}}};
  return v;
}

/// Lowers a set of instances sharing a filter and an output (the parity
/// classes of one backward-data op, or the single forward instance): the
/// output-channel groups whose filter slice fits staging memory, the tile
/// shape of each instance, the staging slots, then per group the filter
/// slice and every instance's tiles.
class ConvInstancesLowering {
public:
  ConvInstancesLowering(Planner &p, const std::vector<ConvInstance> &all)
      : p(p), all(all), c0(all.front()) {}
  Status run();
  /// The tiling alone (no slots, no instructions): fails as run() would
  /// when staging memory is too small.
  Status plan();
  /// Output channels per filter slice (each slice reads all of the input
  /// again), after plan().
  int64_t sliceChannels() const { return ocg; }

private:
  /// Tiles of `nb` images by `cnt` lattice rows.
  struct TileShape {
    int64_t nb, cnt;
  };

  Status planFilterGroups();
  Status placeFilter();
  Status planTiles();
  Status allocateSlots();
  void lowerTile(const ConvInstance &c, const std::vector<KTile> &ktiles,
                 const Tile &t, int64_t oc0, int64_t g);
  void writeOutputBlock(const ConvInstance &c, const Tile &t, uint32_t a,
                        int64_t rows, int64_t oc0, int64_t w);

  /// The most input rows a tile of `cnt` lattice rows reads (tiles at the
  /// edges read fewer: their halo is padding).
  static int64_t maxSlabRows(const ConvInstance &c, int64_t cnt) {
    return std::max<int64_t>(
        1, std::min(c.IH, (cnt - 1) * c.ay + c.th.cMax() - c.th.cMin() + 1));
  }
  /// Bytes of a tile: two slabs, two accumulators (and conversions, and
  /// the batch norm's x and mask for its reductions).
  int64_t tileBytes(const ConvInstance &c, int64_t nb, int64_t cnt) const {
    int64_t rows = nb * cnt * c.OW2;
    int64_t slab = nb * maxSlabRows(c, cnt) * c.IW * c.IC * xb;
    return 2 * slab + 2 * rows * obw * (4 + (needCvt ? 2 : 0) + sumsBytes);
  }

  Planner &p;
  const std::vector<ConvInstance> &all;
  const ConvInstance &c0;
  int64_t wIC = 0, perOc = 0, ocg = 0, obw = 0, left = 0, xb = 0;
  bool yOnChip = false, needCvt = false, wOnChip = false;
  uint32_t wslot = 0;
  std::vector<TileShape> shapes;
  int64_t maxSlab = 1, maxRows = 1;
  uint32_t slab[2] = {0, 0}, acc[2] = {0, 0}, cvt[2] = {0, 0};
  int64_t blockCounter = 0, tileCounter = 0;
  /// The moments on chip (c0.moments >= 0).
  Loc moments;
  /// A batch-norm backward's reductions (c0.gradSums), with double-buffered
  /// slots for its x and mask, and their bytes per output element.
  GradSumsEpilogue sums;
  uint32_t sumsX[2] = {0, 0}, sumsMask[2] = {0, 0};
  int64_t sumsBytes = 0;
};

Status ConvInstancesLowering::plan() {
  KILN_RETURN_IF_ERROR(planFilterGroups());
  // A resident filter is read in place, all output channels at once.
  wOnChip = p.onChip(c0.w);
  if (wOnChip)
    ocg = c0.OC;
  return planTiles();
}

Status ConvInstancesLowering::run() {
  KILN_RETURN_IF_ERROR(plan());
  KILN_RETURN_IF_ERROR(placeFilter());
  KILN_RETURN_IF_ERROR(allocateSlots());
  if (c0.moments >= 0) {
    std::vector<Loc> locs;
    KILN_RETURN_IF_ERROR(outVectors(p, {c0.moments}, locs));
    moments = locs[0];
    p.b.vector(fb::VectorOp::Fill, {}, {moments.region()}, 1, 2 * c0.OC,
               {0.0});
  }
  KILN_RETURN_IF_ERROR(sums.begin(p, c0.gradSums));
  // Groups one after the other, each its own implicit GEMM over its
  // channels (the staging slots are shared).
  for (int64_t group = 0; group < c0.groups; ++group)
  for (int64_t oc0 = 0; oc0 < c0.OC; oc0 += ocg) {
    int64_t g = std::min(ocg, c0.OC - oc0);
    if (!wOnChip)
      stageWeights(p, atGroup(c0, group), oc0, g, wslot);
    for (size_t ci = 0; ci < all.size(); ++ci) {
      const ConvInstance c = atGroup(all[ci], group);
      if (shapes[ci].nb == 0)
        continue;
      std::vector<KTile> ktiles = kTiles(c, p.t.arrayRows, p.opt.packTaps);
      for (int64_t n0 = 0; n0 < c.N; n0 += shapes[ci].nb)
        for (int64_t r0 = 0; r0 < c.OH2; r0 += shapes[ci].cnt)
          lowerTile(c, ktiles,
                    makeTile(c, n0, std::min(shapes[ci].nb, c.N - n0), r0,
                             std::min(shapes[ci].cnt, c.OH2 - r0)),
                    oc0, g);
    }
  }
  if (c0.moments >= 0)
    p.store(c0.moments, 0, 2 * c0.OC, moments);
  sums.end(p);
  return Status::ok();
}

Status ConvInstancesLowering::planFilterGroups() {
  wIC = c0.s2dC ? c0.s2dC : c0.IC;
  // Output-channel groups whose filter slice fits a third of staging.
  perOc = c0.KH * c0.KW * wIC * p.bytes(p.dtype(c0.w));
  const int64_t C = p.t.arrayCols;
  ocg = std::min(c0.OC, std::max<int64_t>(1, p.budget() / 3 / perOc));
  if (ocg < c0.OC)
    ocg = std::max<int64_t>(std::min(C, c0.OC), ocg / C * C);
  if (ocg * perOc > p.budget() / 2)
    return invalidArgumentError(
        "the filter slice of one output block does not fit "
        "in staging memory");
  obw = std::min(C, c0.OC);
  yOnChip = p.onChip(c0.y);
  needCvt = !yOnChip && p.dtype(c0.y) != fb::DType::F32;
  left = p.budget() - (p.onChip(c0.w) ? 0 : ocg * perOc) - 4096 -
         (c0.moments >= 0 ? 8 * c0.OC + 64 : 0);
  if (c0.gradSums.sums >= 0) {
    int x = c0.gradSums.x;
    sumsBytes = (p.onChip(x) ? 0 : p.bytes(p.dtype(x))) +
                (c0.gradSums.scaleShift >= 0 ? p.bytes(p.dtype(c0.y)) : 0);
    left -= vectorBytes(8, c0.OC);
  }
  xb = p.bytes(p.dtype(c0.x));
  return Status::ok();
}

Status ConvInstancesLowering::placeFilter() {
  if (wOnChip) {
    wslot = p.home(c0.w);
    return Status::ok();
  }
  return p.slot("w", p.dtype(c0.w), ocg * c0.KH * c0.KW * wIC, wslot);
}

Status ConvInstancesLowering::planTiles() {
  for (const ConvInstance &c : all) {
    if (c.OH2 <= 0 || c.OW2 <= 0) {
      shapes.push_back({0, 0});
      continue;
    }
    int64_t nb = 0, cnt = c.OH2;
    // With a single output block per tile, several tiles keep every MXU busy.
    int64_t firstNb = ceilDiv(std::min(ocg, c.OC), obw) < int64_t(p.t.mxuCount)
                          ? ceilDiv(c.N, p.t.mxuCount)
                          : c.N;
    for (int64_t n = firstNb; n >= 1; n = n / 2)
      if (tileBytes(c, n, c.OH2) <= left) {
        nb = n;
        break;
      }
    if (nb == 0) {
      nb = 1;
      while (cnt > 1 && tileBytes(c, 1, cnt) > left)
        cnt = cnt / 2;
      if (tileBytes(c, 1, cnt) > left)
        return invalidArgumentError(
            "one output row does not fit in staging memory");
    }
    shapes.push_back({nb, cnt});
    maxSlab = std::max(maxSlab, nb * maxSlabRows(c, cnt) * c.IW * c.IC);
    maxRows = std::max(maxRows, nb * cnt * c.OW2);
  }
  return Status::ok();
}

Status ConvInstancesLowering::allocateSlots() {
  for (int k = 0; k < 2; ++k) {
    KILN_RETURN_IF_ERROR(p.slot("x", p.dtype(c0.x), maxSlab, slab[k]));
    KILN_RETURN_IF_ERROR(p.slot("acc", fb::DType::F32, maxRows * obw, acc[k]));
    if (needCvt)
      KILN_RETURN_IF_ERROR(p.slot("cvt", p.dtype(c0.y), maxRows * obw, cvt[k]));
    int x = c0.gradSums.x;
    if (c0.gradSums.sums >= 0 && !p.onChip(x))
      KILN_RETURN_IF_ERROR(
          p.slot("bnx", p.dtype(x), maxRows * obw, sumsX[k]));
    if (c0.gradSums.scaleShift >= 0)
      KILN_RETURN_IF_ERROR(
          p.slot("mask", p.dtype(c0.y), maxRows * obw, sumsMask[k]));
  }
  return Status::ok();
}

void ConvInstancesLowering::lowerTile(const ConvInstance &c,
                                      const std::vector<KTile> &ktiles,
                                      const Tile &t, int64_t oc0, int64_t g) {
  int64_t rows = t.nb * t.cnt * c.OW2;
  uint32_t s = slab[tileCounter++ % 2];
  // A resident input is read in place: the whole tensor is the slab.
  bool xOnChip = p.onChip(c.x);
  Tile view = t;
  int64_t nOff = 0, nBound = t.nb;
  if (xOnChip) {
    s = p.home(c.x);
    view.ih0 = 0;
    view.slabRows = c.IH;
    nOff = t.n0;
    nBound = c.N;
  }
  if (!xOnChip && !ktiles.empty() && t.slabRows > 0 && c.subH > 0) {
    // Every subH-th row and subW-th column of the tile's input rows.
    OperandSpec src;
    src.buffer = p.home(c.x);
    src.rows = {t.nb};
    src.cols = {t.slabRows, c.IW, c.IC};
    src.coords = {
        {c.srcIH * c.srcIW * c.IC, t.n0, c.N, {1}, {0, 0, 0}},
        {c.subH * c.srcIW * c.IC, t.ih0, c.IH, {0}, {1, 0, 0}},
        {c.subW * c.IC, 0, c.IW, {0}, {0, 1, 0}},
        {1, 0, c.IC, {0}, {0, 0, 1}}};
    p.b.dma(src, OperandSpec::matrix(s, 0, t.nb, t.slabRows * c.IW * c.IC,
                                     t.slabRows * c.IW * c.IC));
  } else if (!xOnChip && !ktiles.empty() && t.slabRows > 0 &&
             c.groups > 1) {
    // The group's channels of the tile's input rows, packed in the slab.
    OperandSpec src;
    src.buffer = p.home(c.x);
    src.rows = {t.nb};
    src.cols = {t.slabRows * c.IW, c.IC};
    src.coords = {{c.IH * c.IW * c.XC, t.n0, c.N, {1}, {0, 0}},
                  {c.XC, t.ih0 * c.IW, c.IH * c.IW, {0}, {1, 0}},
                  {1, c.xc0, c.xc0 + c.IC, {0}, {0, 1}}};
    p.b.dma(src, OperandSpec::matrix(s, 0, t.nb, t.slabRows * c.IW * c.IC,
                                     t.slabRows * c.IW * c.IC));
  } else if (!xOnChip && !ktiles.empty() && t.slabRows > 0) {
    // The input rows of the tile, for every image of it.
    OperandSpec src;
    src.buffer = p.home(c.x);
    src.rows = {t.nb};
    src.cols = {t.slabRows * c.IW * c.IC};
    src.coords = {{c.IH * c.IW * c.IC, t.n0, c.N, {1}, {0}},
                  {1, t.ih0 * c.IW * c.IC, c.IH * c.IW * c.IC, {0}, {1}}};
    p.b.dma(src, OperandSpec::matrix(s, 0, t.nb, t.slabRows * c.IW * c.IC,
                                     t.slabRows * c.IW * c.IC));
  }
  for (int64_t ob0 = 0; ob0 < g; ob0 += obw, ++blockCounter) {
    int64_t w = std::min(obw, g - ob0);
    uint32_t a = acc[blockCounter % 2];
    uint32_t mxu = uint32_t(blockCounter % p.t.mxuCount);
    if (ktiles.empty() || t.slabRows == 0)
      p.b.vector(fb::VectorOp::Fill, {}, {fb::Region(a, 0)}, rows, w, {0.0});
    for (size_t kt = 0; kt < ktiles.size() && t.slabRows > 0; ++kt)
      p.b.matmul(mxu, inputView(c, view, ktiles[kt], s, nOff, nBound),
                 weightView(c, ktiles[kt], wslot, g, ob0, w),
                 OperandSpec::matrix(a, 0, rows, w, w), kt > 0);
    writeOutputBlock(c, t, a, rows, oc0 + ob0, w);
  }
}

void ConvInstancesLowering::writeOutputBlock(const ConvInstance &c,
                                             const Tile &t, uint32_t a,
                                             int64_t rows, int64_t oc0,
                                             int64_t w) {
  bool dense = c.sy == 1 && c.sx == 1 && c.OW2 == c.OW;
  // The epilogue of a fused batch norm: the statistics of the block as it
  // is stored (rounded to the output's type), while it is on chip.
  auto accumulateMoments = [&](fb::Region block) {
    if (c.moments < 0)
      return;
    p.b.vector(fb::VectorOp::ChannelMoments, {block},
               {fb::Region(moments.buffer, moments.offset + oc0),
                fb::Region(moments.buffer, moments.offset + c.OC + oc0)},
               rows, w);
  };
  // A batch-norm backward's reductions over the block as stored, with the
  // same positions and channels of the batch norm's input.
  auto accumulateGradSums = [&](fb::Region block) {
    if (!sums.active())
      return;
    int x = c.gradSums.x;
    size_t k = size_t(blockCounter % 2);
    fb::Region xr(sumsX[k], 0);
    if (p.onChip(x))
      xr = fb::Region(p.home(x), (t.n0 * c.OH + t.r0) * c.OW * c.YC + oc0);
    else
      p.b.dma(outputView(c, t, p.home(x), oc0, w),
              OperandSpec::matrix(sumsX[k], 0, rows, w, w));
    sums.tile(p, block, xr, sumsMask[k], rows, oc0, w);
  };
  if (yOnChip && dense) {
    int64_t row0 = (t.n0 * c.OH + t.r0) * c.OW;
    p.storeBlock(c.y, a, row0, rows, c.yc0 + oc0, w, 0);
    // A resident output has one column block (Planner::assignHomes).
    accumulateMoments(fb::Region(p.home(c.y), row0 * c.YC));
    accumulateGradSums(fb::Region(p.home(c.y), row0 * c.YC));
    return;
  }
  uint32_t src = a;
  if (needCvt) {
    src = cvt[blockCounter % 2];
    p.b.vector(fb::VectorOp::Copy, {fb::Region(a, 0)}, {fb::Region(src, 0)},
               rows, w);
  }
  accumulateMoments(fb::Region(src, 0));
  accumulateGradSums(fb::Region(src, 0));
  p.b.dma(OperandSpec::matrix(src, 0, rows, w, w),
          outputView(c, t, p.home(c.y), oc0, w));
}

/// Lowers a set of instances sharing a filter and an output.
Status lowerInstances(Planner &p, const std::vector<ConvInstance> &all) {
  return ConvInstancesLowering(p, all).run();
}

/// The filter gradient dW^T = x^T dy (Planner::lowerConvBackwardFilter): the
/// geometry and the tiling, the staging slots, then for each group of
/// output-channel blocks (one per MXU) the streamed tiles of images and
/// output rows, accumulated in f32, and the store.
class FilterGradientLowering {
public:
  FilterGradientLowering(Planner &p, const Node &n) : p(p), n(n) {}
  Status run();

private:
  /// Where one tile's x and dy are read: staged slabs, or the resident
  /// tensors in place (the whole tensor as the slab). dy's view has dyC
  /// channels, the first of which is channel dyC0 of the group's.
  struct TileView {
    int64_t n0, r0, tn, tc;
    uint32_t xsl, ysl;
    int64_t ih0, rows;
    int64_t xn0, xnb, dyn0, dynb, dyr0, dyRows, dyC, dyC0;
  };

  Status planGeometry();
  Status planTiles();
  Status allocateSlots();
  TileView loadTile(int64_t n0, int64_t r0);
  void accumulateTile(const TileView &v, int64_t b0, int64_t gb);
  OperandSpec chunkInput(const TileView &v, int64_t nc, int64_t ccn, int64_t q,
                         int64_t cch, int64_t ow0, int64_t cw) const;
  void storeGroup(int64_t b0, int64_t gb);

  /// Input rows [ih0, ih0 + result) that output rows [r0, r0 + cnt) read.
  int64_t slabRows(int64_t r0, int64_t cnt, int64_t &ih0) const {
    int64_t lo = std::max<int64_t>(0, r0 * sh - padT);
    int64_t hi = std::min(H, (r0 + cnt - 1) * sh - padT + (th - 1) * dh + 1);
    ih0 = lo;
    return std::max<int64_t>(0, hi - lo);
  }
  int64_t maxSlabRows(int64_t cnt) const {
    return std::max<int64_t>(1,
                             std::min(H, (cnt - 1) * sh + (th - 1) * dh + 1));
  }
  /// Staging bytes of double-buffered tiles of `nb` images by `cnt` rows.
  int64_t tileBytes(int64_t nb, int64_t cnt) const {
    int64_t rows = maxSlabRows(cnt);
    return 2 * (nb * rows * W * Cx * xb + nb * cnt * OW * maxGroupC * yb);
  }

  Planner &p;
  const Node &n;
  int xid = 0, dyid = 0, dwid = 0;
  int64_t R = 0, C = 0;
  int64_t N = 0, H = 0, W = 0, Cx = 0, OH = 0, OW = 0, Co = 0;
  /// Grouped: Cx and Co are one group's channels of x and dy, which have
  /// XC and YC; the current group's start in each (and in dW's columns).
  int64_t groups = 1, XC = 0, YC = 0, xg0 = 0, yg0 = 0;
  int64_t KH = 0, KW = 0, Ci = 0;
  bool s2d = false;
  /// A strided 1x1 filter gradient without padding reads one pixel of x in
  /// subH x subW: H and W above are those pixels' grid, loaded from the
  /// stored [N, srcH, srcW, XC] (ConvInstance::subH).
  int64_t subH = 0, subW = 0, srcH = 0, srcW = 0;
  // Rows of dW^T streamed per pass: (tap, channel).
  int64_t th = 0, tw = 0, sh = 0, sw = 0, dh = 0, dw = 0, padT = 0, padL = 0;
  int64_t m = 0, obw = 0, blocks = 0, group = 0;
  /// The dy channels of the current group of blocks (relative to the
  /// convolution group's), and the most a group has: only those are staged.
  int64_t groupC0 = 0, groupC = 0, maxGroupC = 0;
  bool split = false, needCvt = false;
  /// A lone block that cannot split its chunks: the rows of dW^T (tap,
  /// channel) split by input channel over two MXUs instead, channels
  /// [0, half) on MXU 0 and the rest on MXU 1, one accumulator each.
  bool halves = false;
  int64_t half = 0;
  int64_t xb = 0, yb = 0, nb = 0, cnt = 0;
  uint32_t xs[2] = {0, 0}, ys[2] = {0, 0};
  std::vector<uint32_t> acc;
  uint32_t cvt = 0;
  // Streaming state: tiles alternate staging slots; with `split`, pixel
  // chunks alternate MXUs; the first matmul into an accumulator overwrites.
  int64_t tileCounter = 0, chunkCounter = 0;
  bool first = true, firstOther = true;
};

Status FilterGradientLowering::run() {
  KILN_RETURN_IF_ERROR(planGeometry());
  KILN_RETURN_IF_ERROR(planTiles());
  KILN_RETURN_IF_ERROR(allocateSlots());
  // Convolution groups one after the other (each its own dW^T = x^T dy
  // over its channels), sharing the staging slots.
  for (int64_t cg = 0; cg < groups; ++cg) {
    xg0 = cg * Cx, yg0 = cg * Co;
    for (int64_t b0 = 0; b0 < blocks; b0 += group) {
      int64_t gb = std::min(group, blocks - b0);
      groupC0 = b0 * obw;
      groupC = std::min(gb * obw, Co - groupC0);
      first = firstOther = true;
      chunkCounter = 0;
      for (int64_t n0 = 0; n0 < N; n0 += nb)
        for (int64_t r0 = 0; r0 < OH; r0 += cnt)
          accumulateTile(loadTile(n0, r0), b0, gb);
      storeGroup(b0, gb);
    }
  }
  return Status::ok();
}

Status FilterGradientLowering::planGeometry() {
  const Tensor &x = p.tensor(n.inputs[0]), &dy = p.tensor(n.inputs[1]),
               &dwT = p.tensor(n.outputs[0]);
  xid = n.inputs[0], dyid = n.inputs[1], dwid = n.outputs[0];
  R = p.t.arrayRows, C = p.t.arrayCols;
  N = x.shape[0], H = x.shape[1], W = x.shape[2], Cx = x.shape[3];
  OH = dy.shape[1], OW = dy.shape[2], Co = dy.shape[3];
  groups = n.groups, XC = Cx, YC = Co;
  Cx /= groups;
  Co /= groups;
  if (groups > 1 && n.spaceToDepth)
    return invalidArgumentError("a grouped space-to-depth stem");
  KH = dwT.shape[0], KW = dwT.shape[1], Ci = dwT.shape[2];
  s2d = n.spaceToDepth;
  th = KH;
  tw = KW;
  sh = n.strides[0];
  sw = n.strides[1];
  dh = n.dilations[0];
  dw = n.dilations[1];
  padT = n.padding[0];
  padL = n.padding[2];
  if (s2d) {
    th = (KH + 2) / 2;
    tw = (KW + 2) / 2;
    sh = sw = dh = dw = 1;
    padT = (n.padding[0] + 1) / 2;
    padL = (n.padding[2] + 1) / 2;
  }
  m = th * tw * Cx;
  if (KH == 1 && KW == 1 && (sh > 1 || sw > 1) && groups == 1 && !s2d &&
      n.padding == std::array<int64_t, 4>{0, 0, 0, 0} && !p.onChip(xid)) {
    subH = sh, subW = sw, srcH = H, srcW = W;
    H = OH, W = OW, sh = sw = 1;
  }
  return Status::ok();
}

Status FilterGradientLowering::planTiles() {
  obw = std::min(C, Co);
  blocks = ceilDiv(Co, obw);
  // Output blocks accumulated together: every group of blocks reads all of
  // x again, so as many as half of staging holds (whole multiples of the
  // MXU count, which take them in turn).
  group = blocks;
  while (group > 1 && group * m * obw * 4 > p.budget() / 2)
    --group;
  if (group > int64_t(p.t.mxuCount))
    group = group / p.t.mxuCount * p.t.mxuCount;
  maxGroupC = std::min(group * obw, Co);
  if (m * obw * 4 > p.budget() / 2)
    return invalidArgumentError(
        "the filter gradient of one output block does not "
        "fit in staging memory");
  // One output block alone would leave the other MXUs idle: then the
  // pixel chunks alternate between MXUs, each with its own partial sum.
  split = group == 1 && p.t.mxuCount > 1 && 2 * m * obw * 4 <= p.budget() / 2;
  needCvt = !p.onChip(dwid) && p.dtype(dwid) != fb::DType::F32;
  // Two accumulators of half the rows take the bytes of one (layer4's 3x3
  // filter gradients of ResNet-50: 4,608 rows per block).
  halves = group == 1 && !split && p.t.mxuCount > 1 && !s2d && groups == 1 &&
           Cx >= 2 && !p.onChip(dwid);
  half = Cx / 2;
  int64_t left = p.budget() - (split ? 2 : group) * m * obw * 4 -
                 (needCvt ? m * obw * Planner::bytes(p.dtype(dwid)) : 0) - 4096;
  xb = Planner::bytes(p.dtype(xid)), yb = Planner::bytes(p.dtype(dyid));
  nb = 0, cnt = OH;
  for (int64_t k = N; k >= 1; k /= 2)
    if (tileBytes(k, OH) <= left) {
      nb = k;
      break;
    }
  if (nb == 0) {
    nb = 1;
    while (cnt > 1 && tileBytes(1, cnt) > left)
      cnt /= 2;
    if (tileBytes(1, cnt) > left)
      return invalidArgumentError(
          "one output row does not fit in staging memory");
  }
  return Status::ok();
}

Status FilterGradientLowering::allocateSlots() {
  int64_t maxSlab = nb * maxSlabRows(cnt) * W * Cx;
  for (int k = 0; k < 2; ++k) {
    KILN_RETURN_IF_ERROR(p.slot("x", p.dtype(xid), maxSlab, xs[k]));
    KILN_RETURN_IF_ERROR(
        p.slot("dy", p.dtype(dyid), nb * cnt * OW * maxGroupC, ys[k]));
  }
  acc.resize(static_cast<size_t>(split || halves ? 2 : group));
  for (size_t i = 0; i < acc.size(); ++i)
    KILN_RETURN_IF_ERROR(
        p.slot("acc", fb::DType::F32,
               halves ? th * tw * (i == 0 ? half : Cx - half) * obw : m * obw,
               acc[i]));
  if (needCvt)
    KILN_RETURN_IF_ERROR(p.slot("cvt", p.dtype(dwid), m * obw, cvt));
  return Status::ok();
}

FilterGradientLowering::TileView FilterGradientLowering::loadTile(int64_t n0,
                                                                  int64_t r0) {
  TileView v;
  v.n0 = n0, v.r0 = r0;
  v.tn = std::min(nb, N - n0), v.tc = std::min(cnt, OH - r0);
  v.rows = slabRows(r0, v.tc, v.ih0);
  v.xsl = xs[tileCounter % 2], v.ysl = ys[tileCounter % 2];
  ++tileCounter;
  // Resident operands are read in place (the whole tensor as the slab).
  bool xIn = p.onChip(xid), dyIn = p.onChip(dyid);
  v.xn0 = 0, v.xnb = v.tn, v.dyn0 = 0, v.dynb = v.tn, v.dyr0 = 0,
  v.dyRows = v.tc, v.dyC = groupC, v.dyC0 = groupC0;
  if (xIn) {
    v.xsl = p.home(xid);
    v.ih0 = 0;
    v.rows = H;
    v.xn0 = n0;
    v.xnb = N;
  }
  if (dyIn) {
    v.ysl = p.home(dyid);
    v.dyn0 = n0;
    v.dynb = N;
    v.dyr0 = r0;
    v.dyRows = OH;
    v.dyC = Co;
    v.dyC0 = 0;
  }
  OperandSpec src;
  src.buffer = p.home(xid);
  src.rows = {v.tn};
  src.cols = {std::max<int64_t>(v.rows, 1) * W * Cx};
  src.coords = {{H * W * Cx, n0, N, {1}, {0}},
                {1, v.ih0 * W * Cx, H * W * Cx, {0}, {1}}};
  if (subH > 0) { // every subH-th row and subW-th column
    src.cols = {std::max<int64_t>(v.rows, 1), W, Cx};
    src.coords = {{srcH * srcW * Cx, n0, N, {1}, {0, 0, 0}},
                  {subH * srcW * Cx, v.ih0, H, {0}, {1, 0, 0}},
                  {subW * Cx, 0, W, {0}, {0, 1, 0}},
                  {1, 0, Cx, {0}, {0, 0, 1}}};
  }
  if (groups > 1) { // the group's channels, packed in the slab
    src.cols = {std::max<int64_t>(v.rows, 1) * W, Cx};
    src.coords = {{H * W * XC, n0, N, {1}, {0, 0}},
                  {XC, v.ih0 * W, H * W, {0}, {1, 0}},
                  {1, xg0, xg0 + Cx, {0}, {0, 1}}};
  }
  if (v.rows > 0 && !xIn)
    p.b.dma(src, OperandSpec::matrix(v.xsl, 0, v.tn, v.rows * W * Cx,
                                     v.rows * W * Cx));
  // dy's rows of the tile, only the channels of the current blocks.
  OperandSpec dsrc;
  dsrc.buffer = p.home(dyid);
  dsrc.rows = {v.tn};
  dsrc.cols = {v.tc * OW * Co};
  dsrc.coords = {{OH * OW * Co, n0, N, {1}, {0}},
                 {1, r0 * OW * Co, OH * OW * Co, {0}, {1}}};
  if (groups > 1 || groupC < Co) {
    int64_t c0 = yg0 + groupC0;
    dsrc.cols = {v.tc * OW, groupC};
    dsrc.coords = {{OH * OW * YC, n0, N, {1}, {0, 0}},
                   {YC, r0 * OW, OH * OW, {0}, {1, 0}},
                   {1, c0, c0 + groupC, {0}, {0, 1}}};
  }
  if (!dyIn)
    p.b.dma(dsrc, OperandSpec::matrix(v.ysl, 0, v.tn, v.tc * OW * groupC,
                                      v.tc * OW * groupC));
  return v;
}

OperandSpec FilterGradientLowering::chunkInput(const TileView &v, int64_t nc,
                                               int64_t ccn, int64_t q,
                                               int64_t cch, int64_t ow0,
                                               int64_t cw) const {
  OperandSpec lhs;
  lhs.buffer = v.xsl;
  lhs.cols = {ccn, cch, cw};
  int64_t rowOff = (v.r0 + q) * sh - padT - v.ih0;
  int64_t slabStride = std::max<int64_t>(v.rows, 1) * W * Cx;
  if (s2d) {
    int64_t c4 = Cx / 4;
    lhs.rows = {th, tw, 2, 2, c4};
    lhs.coords = {{slabStride, v.xn0 + nc, v.xnb, {0, 0, 0, 0, 0}, {1, 0, 0}},
                  {W * Cx, rowOff, v.rows, {1, 0, 0, 0, 0}, {0, 1, 0}},
                  {Cx, ow0 - padL, W, {0, 1, 0, 0, 0}, {0, 0, 1}},
                  {1, 0, Cx, {0, 0, 2 * c4, c4, 1}, {0, 0, 0}}};
  } else {
    lhs.rows = {th, tw, Cx};
    lhs.coords = {{slabStride, v.xn0 + nc, v.xnb, {0, 0, 0}, {1, 0, 0}},
                  {W * Cx, rowOff, v.rows, {dh, 0, 0}, {0, sh, 0}},
                  {Cx, ow0 * sw - padL, W, {0, dw, 0}, {0, 0, sw}},
                  {1, 0, Cx, {0, 0, 1}, {0, 0, 0}}};
  }
  return lhs;
}

void FilterGradientLowering::accumulateTile(const TileView &v, int64_t b0,
                                            int64_t gb) {
  // Pixel chunks of at most R: whole images, rows of one image, or
  // segments of R pixels of a row wider than the array (VGG's first layers).
  int64_t cn = 1, ch = std::max<int64_t>(1, std::min(v.tc, R / OW));
  int64_t segment = std::min(OW, R);
  if (v.tc == OH && OH * OW <= R)
    cn = std::min(v.tn, R / (OH * OW)), ch = OH;
  for (int64_t nc = 0; nc < v.tn; nc += cn)
    for (int64_t q = 0; q < v.tc; q += ch)
      for (int64_t ow0 = 0; ow0 < OW; ow0 += segment) {
        int64_t ccn = std::min(cn, v.tn - nc), cch = std::min(ch, v.tc - q);
        int64_t cw = std::min(segment, OW - ow0);
        OperandSpec lhs = chunkInput(v, nc, ccn, q, cch, ow0, cw);
        bool other = split && chunkCounter++ % 2 == 1;
        for (int64_t bi = 0; bi < gb; ++bi) {
          int64_t oc0 = (b0 + bi) * obw, w = std::min(obw, Co - oc0);
          OperandSpec rhs;
          rhs.buffer = v.ysl;
          rhs.rows = {ccn, cch, cw};
          rhs.cols = {w};
          rhs.coords = {
              {v.dyRows * OW * v.dyC, v.dyn0 + nc, v.dynb, {1, 0, 0}, {0}},
              {OW * v.dyC, v.dyr0 + q, v.dyRows, {0, 1, 0}, {0}},
              {v.dyC, ow0, OW, {0, 0, 1}, {0}},
              {1, oc0 - v.dyC0, v.dyC, {0, 0, 0}, {1}}};
          if (other) {
            p.b.matmul(1, lhs, rhs, OperandSpec::matrix(acc[1], 0, m, w, w),
                       !firstOther);
            continue;
          }
          if (halves) {
            for (int64_t h = 0; h < 2; ++h) {
              int64_t c0 = h == 0 ? 0 : half, cc = h == 0 ? half : Cx - half;
              OperandSpec part = lhs;
              part.rows = {th, tw, cc};
              part.coords[3].offset = c0;
              p.b.matmul(uint32_t(h), part, rhs,
                         OperandSpec::matrix(acc[size_t(h)], 0, th * tw * cc,
                                             w, w),
                         !first);
            }
            continue;
          }
          p.b.matmul(uint32_t(bi % p.t.mxuCount), lhs, rhs,
                     OperandSpec::matrix(acc[size_t(bi)], 0, m, w, w), !first);
        }
        (other ? firstOther : first) = false;
      }
}

void FilterGradientLowering::storeGroup(int64_t b0, int64_t gb) {
  if (split && !firstOther)
    p.b.vector(fb::VectorOp::Add,
               {fb::Region(acc[0], 0), fb::Region(acc[1], 0)},
               {fb::Region(acc[0], 0)}, m, std::min(obw, Co));
  for (int64_t bi = 0; bi < gb; ++bi) {
    int64_t oc0 = (b0 + bi) * obw, w = std::min(obw, Co - oc0);
    for (int64_t h = 0; h < 2 && halves; ++h) {
      // Rows (tap, channel in [c0, c0 + cc)) of dW^T.
      int64_t c0 = h == 0 ? 0 : half, cc = h == 0 ? half : Cx - half;
      int64_t rows = th * tw * cc;
      uint32_t src = acc[size_t(h)];
      if (needCvt) {
        p.b.vector(fb::VectorOp::Copy, {fb::Region(src, 0)},
                   {fb::Region(cvt, 0)}, rows, w);
        src = cvt;
      }
      OperandSpec dst;
      dst.buffer = p.home(dwid);
      dst.rows = {th * tw, cc};
      dst.cols = {w};
      dst.coords = {{Ci * Co, 0, KH * KW, {1, 0}, {0}},
                    {Co, c0, Ci, {0, 1}, {0}},
                    {1, oc0, Co, {0, 0}, {1}}};
      p.b.dma(OperandSpec::matrix(src, 0, rows, w, w), dst);
    }
    if (halves)
      continue;
    if (!s2d) {
      p.storeBlock(dwid, acc[size_t(bi)], 0, m, yg0 + oc0, w, cvt);
      continue;
    }
    // Unfold (a, b, p, q, c) back onto the 7x7 filter, dropping the
    // padding tap.
    OperandSpec dst;
    dst.buffer = p.home(dwid);
    int64_t c4 = Cx / 4;
    dst.rows = {th, tw, 2, 2, c4};
    dst.cols = {w};
    int64_t k0h = (n.padding[0] % 2 == 1) ? 0 : 1,
            k0w = (n.padding[2] % 2 == 1) ? 0 : 1;
    dst.coords = {{KW * Ci * Co, -1 + k0h, KH, {2, 0, 1, 0, 0}, {0}},
                  {Ci * Co, -1 + k0w, KW, {0, 2, 0, 1, 0}, {0}},
                  {Co, 0, Ci, {0, 0, 0, 0, 1}, {0}},
                  {1, oc0, Co, {0, 0, 0, 0, 0}, {1}}};
    uint32_t src = acc[size_t(bi)];
    if (needCvt) {
      p.b.vector(fb::VectorOp::Copy, {fb::Region(src, 0)}, {fb::Region(cvt, 0)},
                 m, w);
      src = cvt;
    }
    p.b.dma(OperandSpec::matrix(src, 0, m, w, w), dst);
  }
}

} // namespace

Status Planner::lowerConv(const Node &n) {
  const Tensor &x = tensor(n.inputs[0]), &w = tensor(n.inputs[1]),
               &y = tensor(n.outputs[0]);
  ConvInstance c;
  c.x = n.inputs[0];
  c.w = n.inputs[1];
  c.y = n.outputs[0];
  c.N = x.shape[0];
  c.IH = x.shape[1];
  c.IW = x.shape[2];
  c.IC = x.shape[3];
  c.OH = c.OH2 = y.shape[1];
  c.OW = c.OW2 = y.shape[2];
  c.OC = y.shape[3];
  c.KH = w.shape[0];
  c.KW = w.shape[1];
  if (n.spaceToDepth) {
    // 7x7/2 on [N, 2H, 2W, C] as 4x4/1 on [N, H, W, 4C]; see the file
    // comment. Tap a reads input rows oh + a - 2 and filter rows 2a + p - 1.
    if (n.strides[0] != 2 || n.strides[1] != 2 || c.IC % 4 != 0 ||
        n.dilations[0] != 1 || n.dilations[1] != 1)
      return invalidArgumentError(
          "space-to-depth needs a stride-2 undilated stem");
    c.s2dC = c.IC / 4;
    int64_t taps = (c.KH + 2) / 2;
    int64_t pad = (n.padding[0] + 1) / 2;
    c.th = {taps, -1 + 2 * 0 + (n.padding[0] % 2 == 1 ? 0 : 1), 2, -pad, 1};
    int64_t padW = (n.padding[2] + 1) / 2;
    c.tw = {(c.KW + 2) / 2, -1 + (n.padding[2] % 2 == 1 ? 0 : 1), 2, -padW, 1};
  } else {
    c.ay = n.strides[0];
    c.ax = n.strides[1];
    c.th = {c.KH, 0, 1, -n.padding[0], n.dilations[0]};
    c.tw = {c.KW, 0, 1, -n.padding[2], n.dilations[1]};
  }
  if (n.groups > 1 && n.spaceToDepth)
    return invalidArgumentError("a grouped space-to-depth stem");
  if (n.moments >= 0 && n.groups > 1)
    return invalidArgumentError(
        "a grouped convolution cannot take its batch norm's statistics");
  setGroups(c, n.groups);
  c.moments = n.moments;
  // A 1x1 convolution with stride s reads one input pixel in s x s (the
  // downsampling shortcuts): its tiles load only those.
  if (c.KH == 1 && c.KW == 1 && (c.ay > 1 || c.ax > 1) && n.groups == 1 &&
      !n.spaceToDepth && n.padding == std::array<int64_t, 4>{0, 0, 0, 0} &&
      !onChip(c.x)) {
    c.subH = c.ay;
    c.subW = c.ax;
    c.srcIH = c.IH;
    c.srcIW = c.IW;
    c.IH = c.OH;
    c.IW = c.OW;
    c.ay = c.ax = 1;
  }
  return lowerInstances(*this, {c});
}

namespace {

/// The parity classes of a data gradient (see the file comment).
std::vector<ConvInstance> dataGradientClasses(const Planner &p,
                                              const Node &n) {
  const Tensor &dy = p.tensor(n.inputs[0]), &w = p.tensor(n.inputs[1]),
               &dx = p.tensor(n.outputs[0]);
  int64_t sh = n.strides[0], sw = n.strides[1], dh = n.dilations[0],
          dw = n.dilations[1];
  std::vector<ConvInstance> classes;
  auto axis = [](int64_t phase, int64_t pad, int64_t k, int64_t s, int64_t d,
                 TapAxis &a) {
    int64_t step = s / std::gcd(s, d);
    a = TapAxis();
    for (int64_t kk = 0; kk < std::min(k, step); ++kk) {
      int64_t v = phase + pad - kk * d;
      if (((v % s) + s) % s == 0) {
        a.k0 = kk;
        a.kStep = step;
        a.count = (k - kk + step - 1) / step;
        a.c0 = v / s;
        a.cStep = -step * d / s;
        return;
      }
    }
  };
  for (int64_t ph = 0; ph < sh; ++ph)
    for (int64_t pw = 0; pw < sw; ++pw) {
      ConvInstance c;
      c.x = n.inputs[0];
      c.w = n.inputs[1];
      c.y = n.outputs[0];
      c.N = dy.shape[0];
      c.IH = dy.shape[1];
      c.IW = dy.shape[2];
      c.IC = dy.shape[3];
      c.OH = dx.shape[1];
      c.OW = dx.shape[2];
      c.OC = dx.shape[3];
      c.KH = w.shape[0];
      c.KW = w.shape[1];
      c.wTransposed = true;
      c.sy = sh;
      c.sx = sw;
      c.py = ph;
      c.px = pw;
      c.OH2 = ph < c.OH ? ceilDiv(c.OH - ph, sh) : 0;
      c.OW2 = pw < c.OW ? ceilDiv(c.OW - pw, sw) : 0;
      axis(ph, n.padding[0], c.KH, sh, dh, c.th);
      axis(pw, n.padding[2], c.KW, sw, dw, c.tw);
      if (c.th.count == 0 || c.tw.count == 0)
        c.th.count = c.tw.count = 0; // no taps: the class is zero
      setGroups(c, n.groups);
      c.gradSums = n.gradSums;
      classes.push_back(c);
    }
  return classes;
}

} // namespace

Status Planner::lowerConvBackwardData(const Node &n) {
  if (n.gradSums.sums >= 0 && (n.strides[0] != 1 || n.strides[1] != 1))
    return invalidArgumentError("a strided data gradient cannot take a batch "
                                "norm's reductions");
  return lowerInstances(*this, dataGradientClasses(*this, n));
}

bool Planner::dataGradientReadsAlike(const Node &n, int64_t bytes) {
  std::vector<ConvInstance> classes = dataGradientClasses(*this, n);
  int64_t saved = regionBytes;
  ConvInstancesLowering half(*this, classes), part(*this, classes);
  regionBytes = halfBytes;
  bool alike = half.plan().isOk();
  regionBytes = bytes;
  alike = alike && part.plan().isOk() && part.sliceChannels() == half.sliceChannels();
  regionBytes = saved;
  return alike;
}

Status Planner::lowerConvBackwardFilter(const Node &n) {
  return FilterGradientLowering(*this, n).run();
}

Status Planner::lowerMatmul(const Node &n) {
  int a = n.inputs[0], bt = n.inputs[1], c = n.outputs[0];
  int bias = n.inputs.size() > 2 ? n.inputs[2] : -1;
  const Tensor &A = tensor(a), &B = tensor(bt);
  int64_t M = n.transposeA ? A.shape[1] : A.shape[0];
  int64_t K = n.transposeA ? A.shape[0] : A.shape[1];
  int64_t N = n.transposeB ? B.shape[0] : B.shape[1];
  const int64_t R = t.arrayRows, Cc = t.arrayCols;
  int64_t nbw = std::min(Cc, N);
  bool needCvt = !onChip(c) && dtype(c) != fb::DType::F32;
  int64_t ab = bytes(dtype(a)), bb = bytes(dtype(bt));
  // Staging for a contraction chunk of kc: B's kc x nbw block (two when the
  // chunks stream), and double-buffered rows of A and of the accumulator.
  auto fixedFor = [&](int64_t kc, int copies) {
    return copies * kc * nbw * bb + (bias >= 0 ? N * 4 : 0) + 4096;
  };
  auto perRowFor = [&](int64_t kc) {
    return 2 * (kc * ab + nbw * (4 + (needCvt ? 2 : 0)));
  };
  // The whole contraction at once when a K x nbw block of B fits; else in
  // chunks of array rows that the f32 accumulator sums (VGG's classifier.0,
  // K = 25,088), each as large as fits with min(M, R) rows of A.
  int64_t kc = K;
  if (fixedFor(K, 1) + perRowFor(K) > budget()) {
    int64_t rows = std::min(M, R);
    kc = 0;
    for (int64_t k = (K - 1) / R * R; k >= R && kc == 0; k -= R)
      if (fixedFor(k, 2) + rows * perRowFor(k) <= budget())
        kc = k;
    if (kc == 0 && fixedFor(R, 2) + perRowFor(R) <= budget())
      kc = R;
    if (kc == 0)
      return invalidArgumentError(
          "a matmul row does not fit in staging memory");
  }
  bool chunked = kc < K;
  int64_t fixed = fixedFor(kc, chunked ? 2 : 1), perRow = perRowFor(kc);
  int64_t mt = std::min(M, (budget() - fixed) / perRow);
  uint32_t bs[2] = {0, 0}, as[2], acc[2], cvt[2] = {0, 0};
  for (int k = 0; k < (chunked ? 2 : 1); ++k)
    KILN_RETURN_IF_ERROR(slot("b", dtype(bt), kc * nbw, bs[k]));
  for (int k = 0; k < 2; ++k) {
    KILN_RETURN_IF_ERROR(slot("a", dtype(a), mt * kc, as[k]));
    KILN_RETURN_IF_ERROR(slot("acc", fb::DType::F32, mt * nbw, acc[k]));
    if (needCvt)
      KILN_RETURN_IF_ERROR(slot("cvt", dtype(c), mt * nbw, cvt[k]));
  }
  Loc biasLoc;
  if (bias >= 0) {
    uint32_t s = 0;
    if (!onChip(bias))
      KILN_RETURN_IF_ERROR(slot("bias", dtype(bias), N, s));
    biasLoc = load(bias, 0, N, s);
  }
  int64_t counter = 0, chunkCount = 0;
  for (int64_t n0 = 0; n0 < N; n0 += nbw) {
    int64_t w = std::min(nbw, N - n0);
    // B[k0:k0+kb, n0:n0+w] as a kb x w block.
    auto bBlock = [&](int64_t k0, int64_t kb) {
      return n.transposeB
                 ? OperandSpec::transposed(home(bt), n0 * K + k0, w, kb, K)
                 : OperandSpec::matrix(home(bt), k0 * N + n0, kb, w, N);
    };
    OperandSpec bsrc = bBlock(0, K);
    // Resident operands are read in place; a whole block of B is loaded
    // once for all rows of A.
    if (!onChip(bt) && !chunked)
      b.dma(bsrc, OperandSpec::matrix(bs[0], 0, K, w, w));
    for (int64_t m0 = 0; m0 < M; m0 += mt, ++counter) {
      int64_t rows = std::min(mt, M - m0);
      uint32_t accb = acc[counter % 2];
      OperandSpec asrc = n.transposeA
                             ? OperandSpec::transposed(home(a), m0, K, rows, M)
                             : OperandSpec::matrix(home(a), m0 * K, rows, K, K);
      uint32_t mxu = uint32_t(counter % t.mxuCount);
      for (int64_t c0 = 0; c0 < K; c0 += kc, ++chunkCount) {
        int64_t cw = std::min(kc, K - c0);
        uint32_t asl = as[(chunked ? chunkCount : counter) % 2];
        uint32_t bsl = bs[chunked ? chunkCount % 2 : 0];
        // Views of A's rows and B's block for contraction rows [c0, c0 + cw)
        // whose column (row) offsets the loop below adds, relative to c0 in
        // staging and absolute in place.
        OperandSpec lhsBase = asrc;
        int64_t lhsAt = 0, rhsAt = 0;
        if (!onChip(a)) {
          OperandSpec chunk =
              n.transposeA
                  ? OperandSpec::transposed(home(a), c0 * M + m0, cw, rows, M)
                  : OperandSpec::matrix(home(a), m0 * K + c0, rows, cw, K);
          b.dma(chunk, OperandSpec::matrix(asl, 0, rows, cw, cw));
          lhsBase = OperandSpec::matrix(asl, 0, rows, cw, cw);
          lhsAt = c0;
        }
        if (!onChip(bt)) {
          if (chunked)
            b.dma(bBlock(c0, cw), OperandSpec::matrix(bsl, 0, cw, w, w));
          rhsAt = chunked ? c0 : 0;
        }
        for (int64_t k0 = c0; k0 < c0 + cw; k0 += R) {
          int64_t kb = std::min(R, c0 + cw - k0);
          // Narrow the lhs view to columns [k0, k0 + kb).
          OperandSpec lhs = lhsBase;
          lhs.cols = {kb};
          for (auto &q : lhs.coords)
            if (!q.col.empty() && q.col[0] != 0) {
              q.offset += k0 - lhsAt;
              q.bound = std::max(q.bound, k0 - lhsAt + kb);
            }
          OperandSpec rhs;
          if (onChip(bt)) {
            rhs = bsrc;
            rhs.rows = {kb};
            for (auto &q : rhs.coords)
              if (!q.row.empty() && q.row[0] != 0)
                q.offset += k0;
          } else {
            rhs = OperandSpec::matrix(bsl, (k0 - rhsAt) * w, kb, w, w);
          }
          b.matmul(mxu, lhs, rhs, OperandSpec::matrix(accb, 0, rows, w, w),
                   k0 > 0);
        }
      }
      if (bias >= 0) {
        // The bias block [n0, n0 + w) is added per row.
        b.vector(fb::VectorOp::ChannelAdd,
                 {fb::Region(accb, 0),
                  fb::Region(biasLoc.buffer, biasLoc.offset + n0)},
                 {fb::Region(accb, 0)}, rows, w);
      }
      storeBlock(c, accb, m0, rows, n0, w, cvt[counter % 2]);
    }
  }
  return Status::ok();
}

} // namespace kiln::sa
