//===- LayerNames.cpp - The model layer an op belongs to ------------------===//

#include "passes/Analysis/LayerNames.h"

#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"

using namespace mlir;

namespace kiln {

StringRef layerOfVariable(StringRef name) {
  size_t dot = name.rfind('.');
  return dot == StringRef::npos ? name : name.take_front(dot);
}

namespace {

/// The variables of the module around `block`, by name.
llvm::StringMap<VariableOp> variablesAround(Block &block) {
  llvm::StringMap<VariableOp> variables;
  Operation *parent = block.getParentOp();
  auto module = parent ? parent->getParentOfType<ModuleOp>() : ModuleOp();
  if (module)
    for (auto variable : module.getOps<VariableOp>())
      variables[variable.getSymName()] = variable;
  return variables;
}

/// The role of ops that belong to no layer, or "".
StringRef roleOf(Operation *op) {
  if (isa<SoftmaxCrossEntropyOp, SoftmaxCrossEntropyBackwardOp>(op))
    return "loss";
  if (isa<SgdUpdateOp, LarsUpdateOp, FusedSgdUpdateOp, LearningRateOp>(op))
    return "optimizer";
  if (isa<AllReduceOp>(op))
    return "allreduce";
  return "";
}

} // namespace

LayerNames::LayerNames(Block &block) {
  llvm::StringMap<VariableOp> variables = variablesAround(block);
  // The variable a name stands for: a copy's source (`w.bf16` is `w`). The
  // hop bound only keeps malformed IR (a cycle of copies) from looping.
  auto source = [&](StringRef name) -> VariableOp {
    VariableOp variable = variables.lookup(name);
    for (int hops = 0; variable && variable.getInit() == Initializer::Copy &&
                       variable.getOf() && hops < 8;
         ++hops) {
      VariableOp next = variables.lookup(*variable.getOf());
      if (!next)
        break;
      variable = next;
    }
    return variable;
  };
  // The variable `v` was read from, through casts and reorders.
  auto readFrom = [&](Value v) -> VariableOp {
    while (Operation *def = v.getDefiningOp()) {
      if (auto cast = dyn_cast<CastOp>(def))
        v = cast.getInput();
      else if (auto reorder = dyn_cast<ReorderOp>(def))
        v = reorder.getInput();
      else if (auto read = dyn_cast<ReadOp>(def))
        return source(read.getVariable());
      else
        return VariableOp();
    }
    return VariableOp();
  };
  auto layerOf = [&](VariableOp variable) {
    // The symbol's StringAttr lives as long as the context.
    return layerOfVariable(variable.getSymNameAttr().getValue());
  };

  // Rule 3: the layer of the ops named so far at each location; a location
  // shared by ops of different layers (several ops on one line of
  // hand-written IR) names none.
  llvm::DenseMap<Location, StringRef> byLocation;
  const StringRef ambiguous = "\x01";
  // Ops of the backward pass: gradient ops and what computes on gradients.
  llvm::DenseSet<Operation *> gradientOps;

  for (Operation &op : block) {
    StringRef name = roleOf(&op);
    if (name.empty()) {
      VariableOp parameter, state;
      auto consider = [&](VariableOp variable) {
        if (!variable)
          return;
        VariableOp &slot = variable.isParameter() ? parameter : state;
        if (!slot)
          slot = variable;
      };
      if (auto read = dyn_cast<ReadOp>(op))
        consider(source(read.getVariable()));
      else if (auto assign = dyn_cast<AssignOp>(op))
        consider(source(assign.getVariable()));
      for (Value operand : op.getOperands())
        consider(readFrom(operand));
      if (VariableOp variable = parameter ? parameter : state)
        name = layerOf(variable);
    }
    if (name.empty() && !isa<UnknownLoc>(op.getLoc())) {
      StringRef shared = byLocation.lookup(op.getLoc());
      if (!shared.empty() && shared != ambiguous)
        name = shared;
    }
    // Rule 4, forward values first: a gradient op whose forward op was
    // fused away (a ReLU into its batch norm) still reads the forward
    // activation, while its gradient operand comes from the next layer.
    bool gradient = op.hasTrait<OpTrait::BackwardOp>();
    StringRef fromGradient;
    for (Value operand : op.getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (!def)
        continue;
      bool defIsGradient = gradientOps.contains(def);
      gradient |= defIsGradient;
      StringRef producer = names.lookup(def);
      if (producer.empty())
        continue;
      if (!defIsGradient && name.empty())
        name = producer;
      if (defIsGradient && fromGradient.empty())
        fromGradient = producer;
    }
    if (gradient)
      gradientOps.insert(&op);
    if (name.empty())
      name = fromGradient;
    if (name.empty())
      continue;
    names[&op] = name;
    // Reads, casts and reorders may sit anywhere (a pass inserts them with
    // a neighbour's location): they say nothing about a line's layer.
    if (!isa<ReadOp, CastOp, ReorderOp>(op) &&
        !isa<UnknownLoc>(op.getLoc())) {
      auto [it, inserted] = byLocation.try_emplace(op.getLoc(), name);
      if (!inserted && it->second != name)
        it->second = ambiguous;
    }
  }
}

/// The key of the fused location's metadata dictionary.
static constexpr llvm::StringLiteral kLayerKey = "kiln.layer";

Location locationWithLayer(Location loc, StringRef layer) {
  if (layer.empty())
    return loc;
  MLIRContext *context = loc->getContext();
  auto metadata = DictionaryAttr::get(
      context, {NamedAttribute(StringAttr::get(context, kLayerKey),
                               StringAttr::get(context, layer))});
  return FusedLoc::get(context, {loc}, metadata);
}

StringRef layerOfLocation(Location loc) {
  StringRef layer;
  loc->walk([&](Location inner) {
    auto fused = dyn_cast<FusedLoc>(inner);
    auto metadata =
        fused ? dyn_cast_or_null<DictionaryAttr>(fused.getMetadata()) : nullptr;
    if (auto name = metadata ? metadata.getAs<StringAttr>(kLayerKey)
                             : StringAttr()) {
      layer = name.getValue();
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return layer;
}

std::string layerNameOf(Operation *op) {
  Block *block = op->getBlock();
  if (!block)
    return "";
  return LayerNames(*block).lookup(op).str();
}

} // namespace kiln
