//===- AssignLayouts.cpp - Per-op activation layouts ----------------------===//
//
// Every LayoutOpInterface op of a function body is a node labelled NHWC
// (source side of the cut) or nChw16c (sink side). A node pays its own
// estimated time in the layout it gets (an edge source -> op of the extra
// time blocked, or op -> sink of the extra time NHWC; from the source,
// unbounded, for an op that cannot compute blocked), and a value whose
// producer and readers disagree pays one reorder, however many readers
// disagree (a hyperedge, see below). Two labels and these costs make a
// minimum s-t cut, solved exactly by max-flow: the ops from which the sink
// is still reachable in the residual graph are the nChw16c ones.
//
//===----------------------------------------------------------------------===//

#include "passes/Layout/AssignLayouts.h"

#include "dialects/Kiln/IR/KilnOps.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

#include <deque>
#include <limits>

using namespace mlir;

namespace kiln {

namespace {
/// Edmonds-Karp max-flow on a small graph with double capacities.
class MinCut {
public:
  static constexpr int kSource = 0, kSink = 1;
  static constexpr double kInfinite = std::numeric_limits<double>::infinity();

  explicit MinCut(int nodes) : adjacent(nodes) {}

  int addNode() {
    adjacent.emplace_back();
    return int(adjacent.size()) - 1;
  }

  void addEdge(int from, int to, double capacity) {
    if (capacity <= 0 || from == to)
      return;
    adjacent[from].push_back(edges.size());
    edges.push_back({to, capacity});
    adjacent[to].push_back(edges.size());
    edges.push_back({from, 0.0}); // residual
  }

  /// Runs max-flow; returns, per node, whether it goes to the sink side.
  /// Of the minimum cuts this picks the one with the fewest sink-side nodes,
  /// so that ties (ops indifferent to their layout) stay on the source side.
  std::vector<bool> solve() {
    while (augment()) {
    }
    return reachingSink();
  }

private:
  struct Edge {
    int to;
    double capacity;
  };
  std::vector<std::vector<int>> adjacent;
  std::vector<Edge> edges;

  static bool open(double capacity) { return capacity > 1e-15; }

  bool augment() {
    std::vector<int> via(adjacent.size(), -1);
    std::deque<int> queue = {kSource};
    std::vector<bool> seen(adjacent.size(), false);
    seen[kSource] = true;
    while (!queue.empty() && !seen[kSink]) {
      int node = queue.front();
      queue.pop_front();
      for (int e : adjacent[node]) {
        int next = edges[e].to;
        if (!seen[next] && open(edges[e].capacity)) {
          seen[next] = true;
          via[next] = e;
          queue.push_back(next);
        }
      }
    }
    if (!seen[kSink])
      return false;
    double flow = kInfinite;
    for (int node = kSink; node != kSource; node = edges[via[node] ^ 1].to)
      flow = std::min(flow, edges[via[node]].capacity);
    if (flow == kInfinite) // an all-infinite path: nothing can be cut
      return false;
    for (int node = kSink; node != kSource; node = edges[via[node] ^ 1].to) {
      edges[via[node]].capacity -= flow;
      edges[via[node] ^ 1].capacity += flow;
    }
    return true;
  }

  /// The nodes from which the sink is still reachable in the residual
  /// graph (a breadth-first search backwards from the sink).
  std::vector<bool> reachingSink() {
    std::vector<bool> seen(adjacent.size(), false);
    std::deque<int> queue = {kSink};
    seen[kSink] = true;
    while (!queue.empty()) {
      int node = queue.front();
      queue.pop_front();
      for (int e : adjacent[node]) {
        // e leaves `node`; its pair e ^ 1 enters it from edges[e].to.
        int from = edges[e].to;
        if (!seen[from] && open(edges[e ^ 1].capacity)) {
          seen[from] = true;
          queue.push_back(from);
        }
      }
    }
    return seen;
  }
};

/// The ops of a function body that take part: LayoutOpInterface ops with at
/// least one activation operand or result.
bool isLayoutNode(Operation *op) {
  auto layoutOp = dyn_cast<LayoutOpInterface>(op);
  return layoutOp && (!layoutOp.getLayoutOperands().empty() ||
                      !layoutOp.getLayoutResults().empty());
}

bool isLayoutResult(Value value) {
  auto result = dyn_cast<OpResult>(value);
  if (!result || !isLayoutNode(result.getOwner()))
    return false;
  return llvm::is_contained(
      cast<LayoutOpInterface>(result.getOwner()).getLayoutResults(),
      result.getResultNumber());
}
/// The activations `op` reads and writes in its layout.
SmallVector<Value> layoutValues(LayoutOpInterface op) {
  SmallVector<Value> values;
  for (unsigned i : op.getLayoutOperands())
    values.push_back(op->getOperand(i));
  for (unsigned i : op.getLayoutResults())
    values.push_back(op->getResult(i));
  return values;
}

/// The 4-D values of `body` that hold filters or their gradients rather
/// than activations: what a LayoutOpInterface op declares 4-D but not an
/// activation (a convolution's filter and filter gradient), and everything
/// sharing an op with one of those (casts of weights to bf16, sums of filter
/// gradients). Such ops are no layout nodes: filters stay HWIO.
llvm::DenseSet<Value> filterValues(Block &body) {
  llvm::DenseSet<Value> filters;
  for (auto op : body.getOps<LayoutOpInterface>()) {
    SmallVector<unsigned> operands = op.getLayoutOperands();
    SmallVector<unsigned> results = op.getLayoutResults();
    for (unsigned i : detail::fourDimensionalFloats(op->getOperandTypes()))
      if (!llvm::is_contained(operands, i))
        filters.insert(op->getOperand(i));
    for (unsigned i : detail::fourDimensionalFloats(op->getResultTypes()))
      if (!llvm::is_contained(results, i))
        filters.insert(op->getResult(i));
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (auto op : body.getOps<LayoutOpInterface>()) {
      SmallVector<Value> values = layoutValues(op);
      if (!llvm::any_of(values, [&](Value v) { return filters.contains(v); }))
        continue;
      for (Value v : values)
        changed |= filters.insert(v).second;
    }
  }
  return filters;
}
} // namespace

double reorderSeconds(Value value) {
  // A reorder reads and writes every element once; about 10 GB/s on two
  // cores for the strided side of the copy. A dynamic batch counts 1, as in
  // the ops' costs (getMultiplyAdds(1)).
  auto type = cast<RankedTensorType>(value.getType());
  int64_t elements = 1;
  for (int64_t d : type.getShape())
    elements *= ShapedType::isDynamic(d) ? 1 : d;
  int64_t bytes = type.getElementType().getIntOrFloatBitWidth() / 8;
  return double(2 * elements * bytes) / 10e9;
}

/// What computing in `layout` costs `op`, by its target's model
/// (LayoutCostOpInterface; the same in every layout without one).
static double layoutCost(Operation *op, Layout layout) {
  auto cost = dyn_cast<LayoutCostOpInterface>(op);
  return cost ? cost.getLayoutCost(layout) : 0.0;
}

llvm::DenseMap<Operation *, Layout> chooseLayouts(func::FuncOp func,
                                                   LayoutMode mode) {
  llvm::DenseMap<Operation *, Layout> layouts;
  if (func.isExternal())
    return layouts;
  Block &body = func.getBody().front();
  llvm::DenseSet<Value> filters = filterValues(body);
  llvm::MapVector<Operation *, int> nodes;
  for (Operation &op : body)
    if (isLayoutNode(&op) &&
        llvm::none_of(layoutValues(cast<LayoutOpInterface>(op)),
                      [&](Value v) { return filters.contains(v); }))
      nodes.insert({&op, int(nodes.size()) + 2});
  if (mode == LayoutMode::Nhwc || nodes.empty()) {
    for (auto &[op, node] : nodes)
      layouts[op] = Layout::NHWC;
    return layouts;
  }

  MinCut cut(nodes.size() + 2);
  llvm::SetVector<Value> values;
  for (auto &[op, node] : nodes) {
    auto layoutOp = cast<LayoutOpInterface>(op);
    for (Value value : layoutValues(layoutOp))
      values.insert(value);
    if (!canComputeIn(op, Layout::NChw16c)) {
      cut.addEdge(MinCut::kSource, node, MinCut::kInfinite);
      continue;
    }
    // In Blocked mode every op that can prefers nChw16c by far more than
    // any reorder costs.
    double blockedExtra =
        mode == LayoutMode::Blocked
            ? -1.0
            : layoutCost(op, Layout::NChw16c) - layoutCost(op, Layout::NHWC);
    if (blockedExtra > 0)
      cut.addEdge(MinCut::kSource, node, blockedExtra);
    else
      cut.addEdge(node, MinCut::kSink, -blockedExtra);
  }

  // One reorder per value whose producer and readers disagree, however many
  // readers disagree: a hyperedge over the value's nodes, built from two
  // auxiliary nodes. `any` is on the sink side iff some member is (edges
  // any -> member can't be cut) and costs the reorder then; `all` is on the
  // source side iff some member is and costs the reorder then. Together
  // they cost one reorder more when the members disagree than when they
  // agree (a constant offset, which does not change the cut). A value made
  // or read by something that needs NHWC has the source as a member: it
  // costs a reorder iff some node member is blocked, `any` alone.
  for (Value value : values) {
    SmallVector<int> members;
    bool nhwcMember = !isLayoutResult(value);
    if (!nhwcMember)
      members.push_back(nodes.lookup(value.getDefiningOp()));
    for (OpOperand &use : value.getUses()) {
      Operation *user = use.getOwner();
      auto layoutUser = dyn_cast<LayoutOpInterface>(user);
      if (!nodes.count(user) ||
          !llvm::is_contained(layoutUser.getLayoutOperands(),
                              use.getOperandNumber()))
        nhwcMember = true;
      else if (!llvm::is_contained(members, nodes.lookup(user)))
        members.push_back(nodes.lookup(user));
    }
    if (members.size() + (nhwcMember ? 1 : 0) < 2)
      continue;
    double reorder = reorderSeconds(value);
    int any = cut.addNode();
    cut.addEdge(MinCut::kSource, any, reorder);
    for (int member : members)
      cut.addEdge(any, member, MinCut::kInfinite);
    if (nhwcMember)
      continue;
    int all = cut.addNode();
    cut.addEdge(all, MinCut::kSink, reorder);
    for (int member : members)
      cut.addEdge(member, all, MinCut::kInfinite);
  }

  std::vector<bool> blocked = cut.solve();
  for (auto &[op, node] : nodes)
    layouts[op] = blocked[node] ? Layout::NChw16c : Layout::NHWC;
  return layouts;
}

int64_t applyLayouts(func::FuncOp func,
                     const llvm::DenseMap<Operation *, Layout> &layouts) {
  for (auto &[op, layout] : layouts)
    setComputeLayout(op, layout);
  if (func.isExternal())
    return 0;
  int64_t reorders = 0;
  llvm::DenseMap<std::pair<Value, unsigned>, Value> converted;
  for (Operation &op : func.getBody().front()) {
    for (OpOperand &use : op.getOpOperands()) {
      std::optional<Layout> expected = getExpectedLayout(use);
      if (!expected || *expected == getStorageLayout(use.get()))
        continue;
      auto key = std::make_pair(use.get(), unsigned(*expected));
      Value &reordered = converted[key];
      if (!reordered) {
        OpBuilder builder(&op);
        reordered = ReorderOp::create(builder, use.get().getLoc(),
                                      use.get().getType(), use.get(), *expected);
        ++reorders;
      }
      use.set(reordered);
    }
  }
  return reorders;
}

} // namespace kiln
