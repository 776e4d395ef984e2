//===- KilnToLinalg.cpp - Lower planned training steps for x86 ------------===//

#include "passes/Conversion/KilnToLinalg/KilnToLinalg.h"

#include "passes/Conversion/KilnToLinalg/Lowering.h"
#include "passes/Conversion/KilnToLinalg/MemoryPlan.h"
#include "passes/Analysis/LayerNames.h"
#include "passes/Optimizer/Optimizer.h"
#include "passes/Passes.h"

#include "dialects/Kiln/IR/KilnLayout.h"
#include "dialects/Kiln/IR/KilnOps.h"
#include "kiln/rt/model.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_KILNLOWERTOLINALG
#include "passes/Passes.h.inc"

static llvm::json::Array shapeJson(ArrayRef<int64_t> shape) {
  llvm::json::Array array;
  for (int64_t d : shape)
    array.push_back(d);
  return array;
}

/// The manifest's variables. A constant initializer above
/// kManifestValueLimit elements goes into `initialValues` (name -> value
/// attribute) and the JSON only refers to it: a large model's values would
/// otherwise be ~15 bytes of text per parameter, in the IR and the object.
static llvm::json::Array
describeVariables(ModuleOp module, const VariableLayout &layout,
                  SmallVectorImpl<NamedAttribute> &initialValues) {
  llvm::json::Array variables;
  for (auto variable : module.getOps<VariableOp>()) {
    RankedTensorType type = variable.getTensorType();
    llvm::json::Object object{
        {"name", variable.getSymName()},
        {"kind", stringifyVariableKind(variable.getKind())},
        {"offset", layout.offsets.lookup(variable.getSymName())},
        {"shape", shapeJson(type.getShape())},
        {"dtype", manifestDtype(type.getElementType())},
        {"init", stringifyInitializer(variable.getInit())}};
    if (FlatSymbolRefAttr source = variable.getOfAttr())
      object["of"] = source.getValue();
    if (auto std = variable.getStd())
      object["std"] = std->convertToDouble();
    if (ElementsAttr value = variable.getValueAttr()) {
      auto dense = dyn_cast<DenseElementsAttr>(value);
      if (value.getNumElements() > kManifestValueLimit &&
          !(dense && dense.isSplat())) {
        object["data"] = llvm::json::Object{{"bytes", tensorBytes(type)},
                                            {"in", kInitialValuesAttr}};
        initialValues.push_back(
            NamedAttribute(variable.getSymNameAttr(), value));
      } else if (value.getNumElements() > kManifestValueLimit) {
        // A large splat: the schema's single value for all elements.
        object["value"] = llvm::json::Array{
            (*dense.getValues<APFloat>().begin()).convertToDouble()};
      } else {
        llvm::json::Array values;
        for (APFloat v : value.getValues<APFloat>())
          values.push_back(v.convertToDouble());
        object["value"] = std::move(values);
      }
    }
    variables.push_back(std::move(object));
  }
  return variables;
}

/// The manifest's "optimizer" entry: one object per kind of update with
/// the same attributes ({"update": "sgd_update", "parameters": 4,
/// "attributes": {"momentum": 0.9, ...}}), in the order first met in the
/// train step. The runtime compares it across data-parallel ranks, whose
/// manifests are otherwise identical for SGD and LARS. Every op of the
/// dialect named *_update counts, with all its attributes, so that a new
/// optimizer form or attribute is compared without a change here; a fused
/// update counts each of its parameters.
static llvm::json::Array describeOptimizer(ModuleOp module) {
  llvm::json::Array entries;
  auto train = module.lookupSymbol<func::FuncOp>("train_step");
  if (!train)
    return entries;
  SmallVector<std::pair<std::string, llvm::json::Object>> kinds;
  SmallVector<int64_t> counts;
  train.walk([&](Operation *op) {
    StringRef name = op->getName().stripDialect();
    if (!isa_and_nonnull<KilnDialect>(op->getDialect()) ||
        !name.ends_with("_update"))
      return;
    int64_t parameters = 1;
    if (auto fused = dyn_cast<FusedSgdUpdateOp>(op))
      parameters = static_cast<int64_t>(fused.getWeights().size());
    llvm::json::Object attributes;
    std::string key = name.str();
    for (NamedAttribute attr : op->getAttrDictionary()) {
      StringRef attrName = attr.getName().getValue();
      if (attrName.starts_with("kiln.") || attrName.ends_with("SegmentSizes"))
        continue;
      Attribute value = attr.getValue();
      std::string text;
      llvm::raw_string_ostream os(text);
      value.print(os);
      key += " " + attrName.str() + "=" + text;
      if (auto f = dyn_cast<FloatAttr>(value))
        attributes[attrName] = f.getValueAsDouble();
      else if (auto i = dyn_cast<IntegerAttr>(value))
        attributes[attrName] = i.getValue().getSExtValue();
      else if (auto b = dyn_cast<BoolAttr>(value))
        attributes[attrName] = b.getValue();
      else if (isa<UnitAttr>(value))
        attributes[attrName] = true;
      else if (auto s = dyn_cast<StringAttr>(value))
        attributes[attrName] = s.getValue();
      else
        attributes[attrName] = text;
    }
    // One entry per update kind and attributes, whether fused or not.
    key.erase(0, key.rfind("fused_", 0) == 0 ? 6 : 0);
    for (size_t i = 0; i < kinds.size(); ++i)
      if (kinds[i].first == key) {
        counts[i] += parameters;
        return;
      }
    kinds.push_back({key, std::move(attributes)});
    counts.push_back(parameters);
  });
  for (size_t i = 0; i < kinds.size(); ++i) {
    std::string update = kinds[i].first.substr(0, kinds[i].first.find(' '));
    entries.push_back(llvm::json::Object{
        {"update", update},
        {"parameters", counts[i]},
        {"attributes", std::move(kinds[i].second)}});
  }
  return entries;
}

/// What the profile calls `op`: its name, and for a fused op the ops it
/// fused, e.g. "kiln.fused_elementwise(add+relu)".
static std::string sourceName(Operation *op) {
  std::string name = op->getName().getStringRef().str();
  if (op->getNumRegions() != 1 || op->getRegion(0).empty())
    return name;
  SmallVector<StringRef> inner;
  for (Operation &nested : op->getRegion(0).front().without_terminator())
    inner.push_back(nested.getName().stripDialect());
  return inner.empty() ? name : name + "(" + llvm::join(inner, "+") + ")";
}

/// Gives every op emitted for `source` (the range [begin, end) of the step,
/// nested ops included) the location NameLoc(<source's name>, <source's
/// location> in `layer`), so that the kernels outlined later, and the
/// profile of their call sites, name the kiln op, its layer and its line in
/// the model (kiln-outline-parallel-loops). One location per kiln op: cheap
/// to build.
static void attributeToSource(Operation *source, StringRef layer,
                              Block::iterator begin, Block::iterator end) {
  Location loc =
      NameLoc::get(StringAttr::get(source->getContext(), sourceName(source)),
                   locationWithLayer(source->getLoc(), layer));
  for (Operation &op : llvm::make_range(begin, end))
    op.walk([&](Operation *nested) { nested->setLoc(loc); });
}

namespace {
/// Lowers one kiln function into `@kiln_model_<role>_step`.
class FunctionLowering {
public:
  FunctionLowering(ModuleOp module, func::FuncOp func, StringRef role,
                   const FunctionPlan &plan, const VariableLayout &variables,
                   llvm::json::Array &calls, llvm::json::Array &buckets)
      : module(module), func(func), role(role), plan(plan),
        variables(variables), calls(calls), buckets(buckets) {}

  FailureOr<llvm::json::Object> run();
  /// The end of the function's scratch, temporaries included (after run).
  int64_t getScratchEnd() const { return scratchEnd; }

private:
  LogicalResult describeInterface(Lowering &l, llvm::json::Object &inputs,
                                  llvm::json::Object &outputs);

  ModuleOp module;
  func::FuncOp func;
  StringRef role;
  const FunctionPlan &plan;
  const VariableLayout &variables;
  llvm::json::Array &calls;
  llvm::json::Array &buckets;
  int64_t scratchEnd = 0;
};
} // namespace

LogicalResult FunctionLowering::describeInterface(Lowering &l,
                                                  llvm::json::Object &inputs,
                                                  llvm::json::Object &outputs) {
  Block &block = func.front();
  for (BlockArgument arg : block.getArguments()) {
    unsigned i = arg.getArgNumber();
    StringRef name = func.getArgAttr(i, "kiln.step") ? "step"
                     : i == 0                        ? "images"
                     : i == 1                        ? "labels"
                                                     : "";
    if (name.empty())
      return func.emitOpError("argument ")
             << i << " is not one the runtime provides (images, labels, step)";
    inputs[name] = l.describe(arg);
  }
  auto ret = cast<func::ReturnOp>(block.getTerminator());
  for (auto [i, value] : llvm::enumerate(ret.getOperands())) {
    StringRef name = func.getResultAttr(i, "kiln.learning_rate") ? "learning_rate"
                     : i == 0                                    ? "loss"
                     : i == 1                                    ? "logits"
                                                                 : "";
    if (name.empty())
      return func.emitOpError("result ")
             << i << " is not one the runtime reads (loss, logits, learning rate)";
    outputs[name] = l.describe(value);
  }
  return success();
}

FailureOr<llvm::json::Object> FunctionLowering::run() {
  MLIRContext *ctx = module.getContext();
  OpBuilder builder(ctx);
  builder.setInsertionPoint(func);
  auto ptrType = LLVM::LLVMPointerType::get(ctx);
  auto arenaType = MemRefType::get({ShapedType::kDynamic}, builder.getI8Type());
  std::string symbol =
      (KILN_RT_MODEL_STEP_PREFIX + role + KILN_RT_MODEL_STEP_SUFFIX).str();
  auto lowered = func::FuncOp::create(
      builder, func.getLoc(), symbol,
      builder.getFunctionType({ptrType, arenaType}, {}));
  lowered->setAttr("llvm.emit_c_interface", builder.getUnitAttr());
  Block *entry = lowered.addEntryBlock();
  builder.setInsertionPointToStart(entry);

  Lowering l(builder, plan, entry->getArgument(0), entry->getArgument(1), role,
             calls);
  llvm::json::Object inputs, outputs;
  if (failed(describeInterface(l, inputs, outputs)))
    return failure();

  // Allreduce results not yet waited for, by value.
  DenseMap<Value, int64_t> pendingBucket;
  llvm::SetVector<int64_t> pending;
  auto waitFor = [&](int64_t bucket, Location loc) {
    if (!pending.remove(bucket))
      return;
    l.emitRuntimeCall(loc, kAllReduceWait, bucket);
  };
  SmallVector<AssignOp> copies;
  // Before lowering: the rule reads the kiln ops around each op.
  LayerNames layers(func.front());

  for (Operation &op : func.front()) {
    for (Value operand : op.getOperands())
      if (auto it = pendingBucket.find(operand); it != pendingBucket.end())
        waitFor(it->second, op.getLoc());
    if (isa<ReadOp, ReshapeOp>(op))
      continue;
    // Its result shares its input's storage (MemoryPlan).
    if (auto reorder = dyn_cast<ReorderOp>(op);
        reorder && isStorageNoOp(reorder))
      continue;
    if (auto assign = dyn_cast<AssignOp>(op)) {
      if (!plan.inPlaceAssigns.contains(assign))
        copies.push_back(assign);
      continue;
    }
    if (auto allreduce = dyn_cast<AllReduceOp>(op)) {
      int64_t id = buckets.size();
      llvm::json::Array tensors;
      for (Value gradient : allreduce.getGradients())
        tensors.push_back(l.describe(gradient));
      buckets.push_back(llvm::json::Object{{"id", id},
                                           {"function", role.str()},
                                           {"tensors", std::move(tensors)}});
      l.emitRuntimeCall(op.getLoc(), kAllReduceStart, id);
      for (Value result : allreduce.getResults())
        pendingBucket[result] = id;
      pending.insert(id);
      continue;
    }
    if (isa<func::ReturnOp>(op))
      continue;
    l.beginOp();
    Operation *last = entry->empty() ? nullptr : &entry->back();
    if (failed(lowerOp(l, &op)))
      return failure();
    attributeToSource(&op, layers.lookup(&op),
                      last ? std::next(Block::iterator(last)) : entry->begin(),
                      entry->end());
  }
  Location end = func.front().getTerminator()->getLoc();
  for (int64_t bucket : SmallVector<int64_t>(pending.begin(), pending.end()))
    waitFor(bucket, end);
  // State updates not computed in place land after every read of the old
  // values.
  for (AssignOp assign : copies) {
    auto type = cast<RankedTensorType>(assign.getValue().getType());
    Value target = l.viewAt(assign.getLoc(),
                            variables.offsets.lookup(assign.getVariable()),
                            MemRefType::get(type.getShape(), type.getElementType()));
    memref::CopyOp::create(builder, assign.getLoc(), l.view(assign.getValue()),
                           target);
  }
  func::ReturnOp::create(builder, end);

  scratchEnd = plan.scratchEnd + l.getTemporaryRegionBytes();
  return llvm::json::Object{{"symbol", symbol},
                            {"inputs", std::move(inputs)},
                            {"outputs", std::move(outputs)},
                            {"scratch", llvm::json::Array{plan.scratchBegin,
                                                          scratchEnd}},
                            {"scratch_unplanned_bytes", plan.unplannedBytes}};
}

static void declareRuntime(ModuleOp module) {
  MLIRContext *ctx = module.getContext();
  OpBuilder builder(ctx);
  builder.setInsertionPointToStart(module.getBody());
  auto type = builder.getFunctionType(
      {LLVM::LLVMPointerType::get(ctx), builder.getI32Type()}, {});
  for (StringRef name : {kKernelCall, kAllReduceStart, kAllReduceWait}) {
    auto decl = func::FuncOp::create(builder, module.getLoc(), name, type);
    decl.setPrivate();
  }
}

LogicalResult lowerKilnToLinalg(ModuleOp module) {
  VariableLayout variables = layOutVariables(module);
  SmallVector<NamedAttribute> initialValues;
  llvm::json::Array optimizer = describeOptimizer(module);
  int64_t scratchBegin = alignSlot(variables.bytes);
  llvm::json::Array calls, buckets;
  llvm::json::Object functions;
  int64_t arenaBytes = scratchBegin;
  int64_t batch = 0;
  SmallVector<func::FuncOp> lowered;
  for (auto [symbol, role] : {std::pair<StringRef, StringRef>{"train_step", "train"},
                              {"eval_step", "eval"}}) {
    auto func = module.lookupSymbol<func::FuncOp>(symbol);
    if (!func)
      continue;
    FailureOr<FunctionPlan> plan = planFunction(func, variables, scratchBegin);
    if (failed(plan))
      return failure();
    FunctionLowering lowering(module, func, role, *plan, variables, calls,
                              buckets);
    FailureOr<llvm::json::Object> description = lowering.run();
    if (failed(description))
      return failure();
    functions[role] = std::move(*description);
    arenaBytes = std::max(arenaBytes, lowering.getScratchEnd());
    if (auto images = dyn_cast<RankedTensorType>(func.getArgumentTypes()[0]))
      batch = images.getDimSize(0);
  }
  if (functions.empty())
    return module.emitError("nothing to lower: the module has neither "
                            "@train_step nor @eval_step");

  llvm::json::Object manifest{
      {"abi", KILN_RT_MODEL_ABI_VERSION},
      {"model", module.getSymName() ? *module.getSymName() : "model"},
      {"batch", batch},
      {"arena_bytes", arenaBytes},
      {"persistent_bytes", variables.bytes},
      {"variables", describeVariables(module, variables, initialValues)},
      {"functions", std::move(functions)},
      {"calls", std::move(calls)},
      {"buckets", std::move(buckets)}};
  if (!optimizer.empty())
    manifest["optimizer"] = std::move(optimizer);
  module.walk([&](LearningRateOp op) {
    manifest["schedule"] = scheduleManifestEntry(op);
  });

  // The kiln program is now fully represented by the lowered functions.
  for (Operation &op : llvm::make_early_inc_range(*module.getBody()))
    if (isa<VariableOp>(op) ||
        (isa<func::FuncOp>(op) &&
         !cast<func::FuncOp>(op).getSymName().starts_with(
             KILN_RT_MODEL_STEP_PREFIX)))
      op.erase();
  declareRuntime(module);
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::json::Value(std::move(manifest));
  module->setAttr(kManifestAttr, StringAttr::get(module.getContext(), text));
  // The attributes themselves (a dense_resource is a handle: nothing is
  // copied), so that the values live as long as the module that needs them.
  if (!initialValues.empty())
    module->setAttr(kInitialValuesAttr,
                    DictionaryAttr::get(module.getContext(), initialValues));
  return success();
}

namespace {
struct LowerToLinalgPass : impl::KilnLowerToLinalgBase<LowerToLinalgPass> {
  using Base::Base;
  void runOnOperation() override {
    if (failed(lowerKilnToLinalg(getOperation())))
      signalPassFailure();
  }
};
} // namespace
} // namespace kiln
