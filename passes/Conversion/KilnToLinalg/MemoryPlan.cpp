//===- MemoryPlan.cpp - Static arena layout of a training step ------------===//

#include "passes/Conversion/KilnToLinalg/MemoryPlan.h"

#include "dialects/Kiln/IR/KilnLayout.h"
#include "dialects/Kiln/IR/KilnOps.h"

#include "llvm/ADT/SmallVector.h"

using namespace mlir;

namespace kiln {

int64_t alignSlot(int64_t bytes) {
  return (bytes + kSlotAlignment - 1) / kSlotAlignment * kSlotAlignment;
}

int64_t tensorBytes(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  int64_t bits = tensor.getElementTypeBitWidth();
  return tensor.getNumElements() * std::max<int64_t>(bits / 8, 1);
}

VariableLayout layOutVariables(ModuleOp module) {
  VariableLayout layout;
  for (auto variable : module.getOps<VariableOp>()) {
    layout.offsets[variable.getSymName()] = layout.bytes;
    layout.bytes += alignSlot(tensorBytes(variable.getTensorType()));
  }
  return layout;
}

/// For ops that may write a result into the storage of one of their
/// operands: the (result, operand) pairs for which that is safe because the
/// op reads each element of the operand before writing the same element of
/// the result.
static SmallVector<std::pair<unsigned, unsigned>> inPlacePairs(Operation *op) {
  if (isa<SgdUpdateOp, LarsUpdateOp>(op))
    return {{0, 0}, {1, 2}};
  if (auto fused = dyn_cast<FusedSgdUpdateOp>(op)) {
    // new_weights[i] over weights[i], new_velocities[i] over velocities[i].
    unsigned n = fused.getWeights().size();
    SmallVector<std::pair<unsigned, unsigned>> pairs;
    for (unsigned i = 0; i < n; ++i)
      pairs.append({{i, i}, {n + i, 2 * n + i}});
    return pairs;
  }
  if (isa<BatchNormTrainOp>(op))
    return {{3, 3}, {4, 4}};
  if (isa<FusedConv2DBatchNormTrainOp>(op))
    return {{4, 4}, {5, 5}};
  return {};
}

/// The one kiln.assign among the users of `result`, if there is exactly one.
static AssignOp assignOf(Value result) {
  AssignOp found;
  for (Operation *user : result.getUsers())
    if (auto assign = dyn_cast<AssignOp>(user)) {
      if (found)
        return {};
      found = assign;
    }
  return found;
}

/// If `result` may be computed directly into the storage of the variable it
/// is assigned to, over the operand read from it, returns that assignment.
/// Other users of the result read the new value from there.
static AssignOp inPlaceAssign(Operation *op, unsigned resultIndex,
                              unsigned operandIndex) {
  AssignOp assign = assignOf(op->getResult(resultIndex));
  auto read = op->getOperand(operandIndex).getDefiningOp<ReadOp>();
  if (!assign || !read || assign.getVariable() != read.getVariable())
    return {};
  // Every other reader of the old value must run before the op overwrites it.
  for (Operation *user : read->getUsers())
    if (user != op && !user->isBeforeInBlock(op))
      return {};
  return assign;
}

/// If `result`, which only a kiln.assign uses, may be written straight into
/// the variable's storage by `op`, returns the assignment: when the old
/// value is dead by then (every read of the variable, and every user of
/// such a read, comes before `op`). `variableOf` maps the values read so
/// far, aliases included, to their variables.
static AssignOp outputAssign(Operation *op, Value result,
                             const DenseMap<Value, StringRef> &variableOf) {
  if (!result.hasOneUse())
    return {};
  auto assign = dyn_cast<AssignOp>(*result.getUsers().begin());
  if (!assign)
    return {};
  StringRef name = assign.getVariable();
  for (auto [value, variable] : variableOf)
    if (variable == name && llvm::any_of(value.getUsers(), [&](Operation *u) {
          return u == op || !u->isBeforeInBlock(op);
        }))
      return {};
  for (Operation *later = op->getNextNode(); later;
       later = later->getNextNode())
    if (auto read = dyn_cast<ReadOp>(later); read && read.getVariable() == name)
      return {};
  return assign;
}

namespace {
struct Interval {
  Value root;
  int64_t bytes;
  unsigned begin, end;
  int64_t offset = -1;
};

/// Which values share storage: each value maps to the root value owning its
/// storage, or to a variable.
struct StorageAliases {
  DenseMap<Value, Value> rootOf;
  DenseMap<Value, StringRef> variableOf;

  Value root(Value v) const {
    auto it = rootOf.find(v);
    return it == rootOf.end() ? v : it->second;
  }

  void alias(Value v, Value target) {
    if (auto it = variableOf.find(target); it != variableOf.end())
      variableOf[v] = it->second;
    else
      rootOf[v] = root(target);
  }

  /// Whether the storage of `rootValue` (which `v` shares) is read by
  /// nothing after `op`: neither `v` nor any value aliasing it, and it is
  /// not an input, a variable or a result of the function.
  bool diesAt(Value v, Operation *op, Value rootValue) const {
    if (isa<BlockArgument>(rootValue) || variableOf.count(v))
      return false;
    auto readOnlyUntil = [&](Value u) {
      return llvm::all_of(u.getUsers(), [&](Operation *user) {
        return user == op || user->isBeforeInBlock(op);
      });
    };
    if (!readOnlyUntil(rootValue))
      return false;
    for (auto [aliased, target] : rootOf)
      if (target == rootValue && !readOnlyUntil(aliased))
        return false;
    return true;
  }
};
} // namespace

/// Decides which results reuse another value's or a variable's storage, and
/// which assigns become in place (recorded in `plan`).
static LogicalResult resolveAliases(Block &block, StorageAliases &aliases,
                                    FunctionPlan &plan) {
  DenseMap<Value, StringRef> &variableOf = aliases.variableOf;
  for (Operation &op : block) {
    for (Value result : op.getResults())
      if (auto tensor = dyn_cast<RankedTensorType>(result.getType());
          tensor && !tensor.hasStaticShape())
        return op.emitOpError("has a dynamic result shape ")
               << tensor << "; run --kiln-specialize-batch first";
    if (auto read = dyn_cast<ReadOp>(op)) {
      variableOf[read.getValue()] = read.getVariable();
      continue;
    }
    if (auto reshape = dyn_cast<ReshapeOp>(op)) {
      aliases.alias(reshape.getOutput(), reshape.getInput());
      continue;
    }
    if (auto reorder = dyn_cast<ReorderOp>(op);
        reorder && isStorageNoOp(reorder)) {
      aliases.alias(reorder.getOutput(), reorder.getInput());
      continue;
    }
    if (auto allreduce = dyn_cast<AllReduceOp>(op)) {
      for (auto [result, operand] :
           llvm::zip(allreduce.getResults(), allreduce.getOperands()))
        aliases.alias(result, operand);
      continue;
    }
    // A fused convolution adds its residual in place (the library's sum
    // post-op reads the output buffer), so the output takes the residual's
    // storage when nothing reads the residual afterwards; otherwise the
    // runtime copies the residual into the output first.
    if (auto fused = dyn_cast<FusedConv2DBatchNormOp>(op);
        fused && fused.getResidual() &&
        aliases.diesAt(fused.getResidual(), &op,
                       aliases.root(fused.getResidual()))) {
      aliases.alias(fused.getOutput(), fused.getResidual());
      continue;
    }
    for (auto [resultIndex, operandIndex] : inPlacePairs(&op))
      if (AssignOp assign = inPlaceAssign(&op, resultIndex, operandIndex)) {
        variableOf[op.getResult(resultIndex)] = assign.getVariable();
        plan.inPlaceAssigns.insert(assign);
      }
    // A copy the optimizer rounds (kiln-bf16-weight-copies) goes straight
    // into its variable: otherwise the step would end copying every weight.
    if (isa<FusedSgdUpdateOp, LarsUpdateOp, CastOp>(op))
      for (Value result : op.getResults())
        if (!variableOf.count(result))
          if (AssignOp assign = outputAssign(&op, result, variableOf)) {
            variableOf[result] = assign.getVariable();
            plan.inPlaceAssigns.insert(assign);
          }
  }
  return success();
}

/// The live interval of every root value that needs scratch storage, in
/// op positions (block arguments at 0; returned values and inputs live to
/// the end of the function, where the runtime reads them).
static SmallVector<Interval> liveIntervals(Block &block,
                                           const StorageAliases &aliases) {
  DenseMap<Operation *, unsigned> position;
  unsigned index = 1;
  for (Operation &op : block)
    position[&op] = index++;
  unsigned endOfFunction = index;

  DenseMap<Value, unsigned> intervalOf;
  SmallVector<Interval> intervals;
  auto define = [&](Value v, unsigned at) {
    if (aliases.variableOf.count(v) || aliases.rootOf.count(v))
      return;
    intervalOf[v] = intervals.size();
    intervals.push_back({v, alignSlot(tensorBytes(v.getType())), at, at});
  };
  for (BlockArgument arg : block.getArguments())
    define(arg, 0);
  for (Operation &op : block)
    for (Value result : op.getResults())
      define(result, position[&op]);
  auto extend = [&](Value v, unsigned at) {
    if (aliases.variableOf.count(v))
      return;
    auto it = intervalOf.find(aliases.root(v));
    if (it != intervalOf.end())
      intervals[it->second].end = std::max(intervals[it->second].end, at);
  };
  for (Operation &op : block) {
    unsigned at = isa<func::ReturnOp>(op) ? endOfFunction : position[&op];
    for (Value operand : op.getOperands())
      extend(operand, at);
  }
  for (BlockArgument arg : block.getArguments())
    extend(arg, endOfFunction);
  return intervals;
}

/// Best fit by decreasing size: each interval takes the lowest offset that
/// does not overlap an already placed interval alive at the same time.
/// Returns the end of the scratch space used.
static int64_t placeBestFit(MutableArrayRef<Interval> intervals,
                            FunctionPlan &plan) {
  SmallVector<unsigned> order(intervals.size());
  for (unsigned i = 0; i < order.size(); ++i)
    order[i] = i;
  llvm::stable_sort(order, [&](unsigned a, unsigned b) {
    return intervals[a].bytes > intervals[b].bytes;
  });
  SmallVector<unsigned> placed;
  int64_t end = 0;
  for (unsigned i : order) {
    Interval &cur = intervals[i];
    SmallVector<std::pair<int64_t, int64_t>> busy;
    for (unsigned j : placed) {
      const Interval &other = intervals[j];
      if (other.begin <= cur.end && cur.begin <= other.end)
        busy.push_back({other.offset, other.offset + other.bytes});
    }
    llvm::sort(busy);
    int64_t offset = 0;
    for (auto [b, e] : busy) {
      if (offset + cur.bytes <= b)
        break;
      offset = std::max(offset, e);
    }
    cur.offset = offset;
    end = std::max(end, offset + cur.bytes);
    plan.unplannedBytes += cur.bytes;
    placed.push_back(i);
  }
  return end;
}

FailureOr<FunctionPlan> planFunction(func::FuncOp func,
                                     const VariableLayout &variables,
                                     int64_t scratchBegin) {
  FunctionPlan plan;
  plan.scratchBegin = scratchBegin;
  Block &block = func.front();
  StorageAliases aliases;
  if (failed(resolveAliases(block, aliases, plan)))
    return failure();
  SmallVector<Interval> intervals = liveIntervals(block, aliases);
  int64_t end = placeBestFit(intervals, plan);

  for (const Interval &interval : intervals)
    plan.offsets[interval.root] = scratchBegin + interval.offset;
  for (auto [value, target] : aliases.rootOf)
    plan.offsets[value] = plan.offsets.lookup(target);
  for (auto [value, name] : aliases.variableOf)
    plan.offsets[value] = variables.offsets.lookup(name);
  plan.scratchEnd = scratchBegin + end;
  return plan;
}

} // namespace kiln
