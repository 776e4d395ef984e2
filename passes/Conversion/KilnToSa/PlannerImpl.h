//===- PlannerImpl.h - The planner's internals ------------------*- C++ -*-===//

#ifndef KILN_PASSES_CONVERSION_KILNTOSA_PLANNERIMPL_H
#define KILN_PASSES_CONVERSION_KILNTOSA_PLANNERIMPL_H

#include "Planner.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace kiln::sa {

using kiln::Status;
using sim::OperandSpec;

/// A place on chip: a buffer and an element offset.
struct Loc {
  uint32_t buffer = 0;
  int64_t offset = 0;
  fb::Region region() const { return fb::Region(buffer, offset); }
};

class Planner {
public:
  Planner(const Graph &g, const sim::TargetConfig &t, const PlanOptions &o,
          sim::ProgramSink &sink)
      : g(g), t(t), opt(o), b(sink) {}
  Status run();

  // --- Shared by the lowerings -------------------------------------------
  const Graph &g;
  const sim::TargetConfig &t;
  const PlanOptions &opt;
  sim::ProgramBuilder b;

  const Tensor &tensor(int id) const { return g.tensors[size_t(id)]; }
  uint32_t home(int id) const { return homes[size_t(g.root(id))].buffer; }
  bool onChip(int id) const { return homes[size_t(g.root(id))].onChip; }
  fb::DType dtype(int id) const { return tensor(g.root(id)).dtype; }

  /// Staging bytes an op may use.
  int64_t budget() const { return regionBytes; }
  /// A staging slot of the current op (in its half of staging memory).
  Status slot(const std::string &what, fb::DType dtype, int64_t elems,
              uint32_t &id);

  /// Makes elements [begin, begin + count) of a tensor available on chip:
  /// its home if resident, else `staging` after a DMA.
  Loc load(int tensor, int64_t begin, int64_t count, uint32_t staging);
  /// Where to write elements [begin, ...) of a tensor: its home if
  /// resident, else `staging` (then call store()).
  Loc outLoc(int tensor, int64_t begin, uint32_t staging);
  /// Writes back a staged range of a tensor homed in HBM.
  void store(int tensor, int64_t begin, int64_t count, Loc from);
  /// Copies an f32 accumulator block (rows x cols, contiguous) into
  /// tensor rows [row0, ...) and columns [col0, ...), treating the tensor as
  /// [rows, channels]; `cvt` is a staging slot of the tensor's type, needed
  /// when the tensor is not f32 and lives in HBM.
  void storeBlock(int tensor, uint32_t acc, int64_t row0, int64_t rows,
                  int64_t col0, int64_t cols, uint32_t cvt);
  /// A contiguous element range as a 1 x count view.
  static OperandSpec range(uint32_t buffer, int64_t begin, int64_t count) {
    return OperandSpec::matrix(buffer, begin, 1, count, count);
  }
  static int64_t bytes(fb::DType d) { return d == fb::DType::BF16 ? 2 : 4; }

  // --- Lowerings (PlanOps.cpp, PlanPool.cpp, PlanConv.cpp) ----------------
  Status lowerElementwise(const Node &n);
  Status lowerBatchNorm(const Node &n);
  Status lowerBatchNormBackward(const Node &n);
  Status lowerPool(const Node &n);
  Status lowerGlobalPool(const Node &n);
  Status lowerReduceSum(const Node &n);
  Status lowerLoss(const Node &n);
  Status lowerOptimizer(const Node &n);
  Status lowerLearningRate(const Node &n);
  Status lowerAllReduce(const Node &n);
  Status lowerMatmul(const Node &n);
  Status lowerConv(const Node &n);
  Status lowerConvBackwardData(const Node &n);
  Status lowerConvBackwardFilter(const Node &n);
  /// Whether a data gradient fits `bytes` of staging with the filter
  /// slices it takes in a half (so it reads its input as often).
  bool dataGradientReadsAlike(const Node &n, int64_t bytes);
  /// Depthwise convolutions (one input channel per output channel, no
  /// channel multiplier) on the vector unit (PlanCnnOps.cpp), and the other
  /// ops of newer CNNs.
  Status lowerDepthwise(const Node &n);
  Status lowerBroadcast(const Node &n);
  Status lowerMovement(const Node &n);
  /// kiln.fused_elementwise: the chain on each tile (PlanFused.cpp).
  Status lowerFusedElementwise(const Node &n);

  static bool isConv(NodeKind k);
  static bool isMovement(NodeKind k);
  /// A depthwise convolution the vector unit runs (see docs/systolic.md).
  bool depthwise(const Node &n) const;

private:
  struct Home {
    uint32_t buffer = 0;
    bool onChip = false;
  };
  Status assignHomes();
  /// The order nodes are lowered in: single nodes, a matrix-unit node and
  /// an independent vector-unit node lowered together (interleave), a
  /// vector-unit node and the matrix-unit node reading it (pipeline), or
  /// the first pair and the matrix-unit node reading its vector op.
  void planSteps();
  void addStep(std::vector<size_t> step);
  /// Makes an interleaved pair a step of three with the data gradient
  /// that reads the vector op's output, if it may move up.
  void addPipelinedConsumer(std::vector<size_t> &step);
  bool independent(const Node &a, const Node &b) const;
  /// Whether b reads an output of a.
  bool consumes(const Node &b, const Node &a) const;
  /// Starts lowering node `index` into `bytes` of staging at `base`.
  void beginNode(const Node &n, size_t index, int64_t base, int64_t bytes);
  /// Lowers a step of three nodes (PlanOptions::interleavePipelined) when
  /// the vector op fits its share of a staging half, the data gradient the
  /// rest with the filter slices it takes in a half (smaller slices would
  /// read dy again), and the merge's estimate of the three is shorter than
  /// that of the first two interleaved and then the third; otherwise the
  /// latter.
  Status lowerTriple(const std::vector<size_t> &step);
  Status lowerNode(const Node &n);
  /// Lowers node `index` into `bytes` of staging at `base`, into `capture`
  /// if given.
  Status lowerIn(size_t index, int64_t base, int64_t bytes,
                 sim::ProgramBuilder::Capture *capture);
  /// The next staging half in lowering order.
  int64_t nextHalf();
  /// Lowers a step of one node, or two interleaved.
  Status lowerStep(const std::vector<size_t> &step);

  std::vector<Home> homes;
  std::vector<std::vector<size_t>> steps;
  /// Nodes placed in a step so far (planSteps).
  std::vector<bool> done;
  /// Each node's step (live ranges are in steps: both nodes of a step are
  /// live at once).
  std::vector<int64_t> position;
  /// Nodes begun so far: staging halves alternate in lowering order.
  size_t begun = 0;
  int64_t residentBytes = 0, halfBytes = 0, bump = 0;
  /// The current node's staging: `regionBytes` at on-chip offset
  /// `regionBase` (a half, or part of one in a step of three).
  int64_t regionBase = 0, regionBytes = 0;
  size_t nodeIndex = 0;
  int slotCount = 0;
};

// --- Helpers of the vector-unit lowerings (PlanOps.cpp) -------------------

/// Rows per tile so that `copies` tiles of `bytesPerRow` fit in `budget`.
inline int64_t tileRows(int64_t rows, int64_t bytesPerRow, int copies,
                        int64_t budget) {
  int64_t fit = budget / std::max<int64_t>(1, bytesPerRow * copies);
  return std::max<int64_t>(1, std::min(rows, fit));
}

/// Double-buffered staging slots for a set of tensors, made on first use.
class Slots {
public:
  Slots(Planner &p, std::vector<int> tensors, int64_t elems)
      : p(p), tensors(std::move(tensors)), elems(elems) {}
  /// Slot for tensor number i of the set, in buffer k (0 or 1).
  Status get(size_t i, int k, uint32_t &id) {
    auto key = std::make_pair(i, k);
    for (auto &e : made)
      if (e.first == key) {
        id = e.second;
        return Status::ok();
      }
    int t = tensors[i];
    Status s = p.slot(p.tensor(t).name.empty() ? "x" : "t" + std::to_string(t),
                      p.dtype(t), elems, id);
    if (s.isOk())
      made.push_back({key, id});
    return s;
  }

private:
  Planner &p;
  std::vector<int> tensors;
  int64_t elems;
  std::vector<std::pair<std::pair<size_t, int>, uint32_t>> made;
};

/// The vector op of an elementwise node (Relu, ReluBackward, Add, Copy,
/// Activation[Backward], BiasAdd, Dropout) and its integer attributes.
fb::VectorOp elementwiseOp(const Node &n, std::vector<int64_t> &iattrs);

/// Staging bytes of `count` f32 per-channel slots and of the alignment of
/// the two double-buffered tiles (slots are 64-byte aligned, so 24 channels
/// take 128 bytes, not 96).
inline int64_t vectorBytes(int64_t count, int64_t c) {
  int64_t aligned = (c * 4 + 63) / 64 * 64;
  return count * aligned + (aligned == c * 4 ? 0 : 4 * 64);
}

/// The reductions of a batch-norm backward in the epilogue of the op that
/// produces its dy (Node::GradSums, PlanOps.cpp): the per-channel operands
/// are placed once, then each tile of dy adds its sums while it is on chip.
class GradSumsEpilogue {
public:
  /// Places the mean, the scale and shift and the sums (zeroed).
  Status begin(Planner &p, const Node::GradSums &gs);
  bool active() const { return gs.sums >= 0; }
  bool masked() const { return gs.scaleShift >= 0; }
  /// dy and x: rows x w on chip, channels [c0, c0 + w) of the batch norm's;
  /// `mask`: a staging slot of dy's type for rows x w when masked.
  void tile(Planner &p, fb::Region dy, fb::Region x, uint32_t mask,
            int64_t rows, int64_t c0, int64_t w);
  /// Stores the sums.
  void end(Planner &p);

private:
  Node::GradSums gs;
  int64_t channels = 0;
  std::vector<Loc> vectors, sums;
};

/// Per-channel (or scalar) operands on chip for the whole op: their homes
/// if resident, else a staging slot after a DMA.
Status loadVectors(Planner &p, const std::vector<int> &ids,
                   std::vector<Loc> &locs);
/// Where to write whole small outputs (then Planner::store).
Status outVectors(Planner &p, const std::vector<int> &ids,
                  std::vector<Loc> &locs);

} // namespace kiln::sa

#endif // KILN_PASSES_CONVERSION_KILNTOSA_PLANNERIMPL_H
