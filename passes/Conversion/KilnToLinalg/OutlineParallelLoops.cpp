//===- OutlineParallelLoops.cpp - kiln-outline-parallel-loops -------------===//
//
// The generated loops run on every core through the runtime's thread pool
// (the OpenMP pool oneDNN uses, so the two never compete): each top-level
// scf.parallel of a compiled step becomes a kernel function over a range of
// its first dimension, and the step calls
//   kiln_rt_parallel_for(ctx, kernel, arena, begin, end, table, site)
// which runs the kernel on one chunk of [begin, end) per thread. Serial
// loops become kernels too, called through
//   kiln_rt_serial_call(ctx, kernel, arena, table, site)
// (not directly, so that the runtime can time them as it times parallel
// ones), and the step itself is a short sequence of calls: later passes and
// LLVM then work on many small functions instead of one huge one (the
// compile time of ResNet-50 depends on it).
//
// Every call carries a site id. The manifest's "sites" says, for each id,
// which kiln op the loop was emitted for and its line in the model (the
// location the lowering gave the loop), and "call_sites" says the same of
// each library call: the profile of a run then names the source of the time
// spent in generated code. Names stay out of the kernels, which are shared
// between call sites.
//
// A kernel reaches its data through the arena, so everything the loop uses
// from outside (views, constants, scalars loaded from the arena) is
// recomputed inside it; a loop that uses anything else stays serial. The
// byte offsets of its arena views are not baked in: they come from a
// constant table the call passes, so loops that differ only in where their
// buffers live (the repeated blocks of a ResNet, forward and eval) share one
// kernel. That divides ResNet-50's kernels by three, and LLVM's time with
// them.
//
//===----------------------------------------------------------------------===//

#include "passes/Analysis/LayerNames.h"
#include "passes/Conversion/KilnToLinalg/KilnToLinalg.h"
#include "passes/Passes.h"

#include "kiln/rt/model.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"

#include <map>

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_KILNOUTLINEPARALLELLOOPS
#include "passes/Passes.h.inc"

// The runtime's entry points, spelled by model.h.
inline constexpr llvm::StringLiteral kParallelFor = KILN_RT_PARALLEL_FOR_SYMBOL;
inline constexpr llvm::StringLiteral kSerialCall = KILN_RT_SERIAL_CALL_SYMBOL;
inline constexpr llvm::StringLiteral kKernelCall = KILN_RT_KERNEL_CALL_SYMBOL;

/// The kiln op and the model line that `loc` names: kiln-lower-to-linalg
/// gives what it emits for an op NameLoc("kiln.relu", "model.mlir":12:3),
/// which yields {"kiln.relu", "model.mlir:12"}. A binary model has no lines:
/// the ONNX importer names each op after its node, NameLoc("kiln.relu",
/// NameLoc("/layer1/Relu", "model.onnx":0:0)), which yields
/// {"kiln.relu", "model.onnx#/layer1/Relu"}, so every node keeps its own
/// profile row. Parts it cannot find are "?". (The layer is read apart:
/// layerOfLocation.)
static std::pair<std::string, std::string> describeSource(Location loc) {
  std::string op = "?", node, where = "?";
  loc->walk([&](Location inner) {
    if (auto name = dyn_cast<NameLoc>(inner)) {
      if (op == "?")
        op = name.getName().str();
      else if (node.empty())
        node = name.getName().str();
    }
    if (auto file = dyn_cast<FileLineColLoc>(inner); file && where == "?") {
      StringRef fileName = llvm::sys::path::filename(file.getFilename());
      where = file.getLine() == 0 && !node.empty()
                  ? (fileName + "#" + node).str()
                  : (fileName + ":" + Twine(file.getLine())).str();
    }
    return WalkResult::advance();
  });
  return {op, where};
}

/// `{"op", "loc", "layer"}` of the source of `loc`, for the manifest; no
/// "layer" where LayerNames names none.
static llvm::json::Object sourceJson(Location loc) {
  auto [op, where] = describeSource(loc);
  llvm::json::Object source{{"op", op}, {"loc", where}};
  if (StringRef layer = layerOfLocation(loc); !layer.empty())
    source["layer"] = layer.str();
  return source;
}

/// The source of every library call of `steps`, by call id (null for an id
/// no step calls with a constant).
static llvm::json::Array describeCallSites(ArrayRef<func::FuncOp> steps) {
  llvm::json::Array callSites;
  for (func::FuncOp step : steps)
    step.walk([&](func::CallOp call) {
      IntegerAttr id;
      if (call.getCallee() != kKernelCall || call.getNumOperands() != 2 ||
          !matchPattern(call.getOperand(1), m_Constant(&id)))
        return;
      size_t index = id.getInt();
      while (callSites.size() <= index)
        callSites.push_back(nullptr);
      callSites[index] = sourceJson(call.getLoc());
    });
  return callSites;
}

/// Adds the site tables to the module's manifest, if it has one (the
/// runtime reads them from there; model-abi.md).
static void recordSites(ModuleOp module, llvm::json::Array sites,
                        llvm::json::Array callSites) {
  auto attr = module->getAttrOfType<StringAttr>(kManifestAttr);
  if (!attr)
    return;
  llvm::Expected<llvm::json::Value> manifest =
      llvm::json::parse(attr.getValue());
  if (!manifest || !manifest->getAsObject()) {
    llvm::consumeError(manifest.takeError());
    module.emitWarning("the manifest is not a JSON object: no call sites "
                       "recorded for the profile");
    return;
  }
  llvm::json::Object &root = *manifest->getAsObject();
  root["sites"] = std::move(sites);
  root["call_sites"] = std::move(callSites);
  std::string text;
  llvm::raw_string_ostream os(text);
  os << *manifest;
  module->setAttr(kManifestAttr, StringAttr::get(module.getContext(), text));
}

/// "train" for @kiln_model_train_step.
static std::string stepRole(func::FuncOp step) {
  StringRef name = step.getSymName();
  name.consume_front(KILN_RT_MODEL_STEP_PREFIX);
  name.consume_back(KILN_RT_MODEL_STEP_SUFFIX);
  return name.str();
}

/// Declares the runtime entry point `name` once.
static void declareRuntimeFunction(ModuleOp module, SymbolTable &symbols,
                                   StringRef name, FunctionType type) {
  if (symbols.lookup(name))
    return;
  OpBuilder db = OpBuilder::atBlockBegin(module.getBody());
  auto decl = func::FuncOp::create(db, module.getLoc(), name, type);
  decl.setPrivate();
  symbols.insert(decl);
}

/// Collects into `slice` (in dependency order) the ops that compute `value`
/// from the arena argument and constants, or fails if it depends on
/// anything else.
static LogicalResult collectRecomputable(Value value, Value arena,
                                         llvm::SetVector<Operation *> &slice) {
  if (value == arena)
    return success();
  Operation *def = value.getDefiningOp();
  if (!def || def->getNumRegions() != 0)
    return failure();
  if (!isPure(def) && !isa<memref::LoadOp>(def))
    return failure();
  for (Value operand : def->getOperands())
    if (failed(collectRecomputable(operand, arena, slice)))
      return failure();
  slice.insert(def);
  return success();
}

static int64_t constantIndex(Value v) {
  if (auto c = v.getDefiningOp<arith::ConstantIndexOp>())
    return c.value();
  return -1;
}

/// Leaves one constant per value at the start of `block`, in a fixed order,
/// so that kernels are compared by what they compute, not by which constants
/// the step happened to share between their loops.
static void canonicalizeConstants(Block &block) {
  std::map<std::string, Operation *> unique;
  for (Operation &op : llvm::make_early_inc_range(block)) {
    if (!isa<arith::ConstantOp>(op))
      continue;
    std::string key;
    llvm::raw_string_ostream os(key);
    op.getAttr("value").print(os);
    auto [it, inserted] = unique.try_emplace(key, &op);
    if (!inserted) {
      op.getResult(0).replaceAllUsesWith(it->second->getResult(0));
      op.erase();
    }
  }
  for (auto &[key, op] : llvm::reverse(unique))
    op->moveBefore(&block, block.begin());
}

/// Clones `slice` and then `loop` into the entry block of `kernel`. Views of
/// the arena at constant offsets take their offset from the kernel's table
/// argument instead; the offsets go to `offsets`, in table order.
static Operation *cloneIntoKernel(func::FuncOp kernel, Value arena,
                                  ArrayRef<Operation *> slice, Operation *loop,
                                  SmallVectorImpl<int64_t> &offsets) {
  Block *entry = &kernel.front();
  Value kernelArena = entry->getArgument(0);
  Value table = entry->getArgument(3);
  OpBuilder kb = OpBuilder::atBlockBegin(entry);
  IRMapping mapping;
  mapping.map(arena, kernelArena);
  for (Operation *op : slice) {
    Operation *clone = kb.clone(*op, mapping);
    auto view = dyn_cast<memref::ViewOp>(clone);
    int64_t shift = view ? constantIndex(view.getByteShift()) : -1;
    if (shift < 0 || view.getSource() != kernelArena)
      continue;
    Location loc = view.getLoc();
    OpBuilder vb(view);
    Value slot = arith::ConstantIndexOp::create(vb, loc, offsets.size());
    Value entryValue = memref::LoadOp::create(vb, loc, table, slot);
    view.getByteShiftMutable().assign(
        arith::IndexCastOp::create(vb, loc, vb.getIndexType(), entryValue));
    offsets.push_back(shift);
  }
  Operation *clone = kb.clone(*loop, mapping);
  func::ReturnOp::create(kb, loop->getLoc());
  // The constants the views no longer use would tell kernels apart.
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(*entry)))
    if (isOpTriviallyDead(&op))
      op.erase();
  canonicalizeConstants(*entry);
  return clone;
}

/// The text of `kernel` under a fixed name: equal texts mean kernels that
/// compute the same thing from the same arguments.
static std::string kernelKey(func::FuncOp kernel) {
  std::string key;
  llvm::raw_string_ostream os(key);
  StringAttr name = kernel.getSymNameAttr();
  kernel.setSymName("kiln_kernel");
  kernel->print(os, OpPrintingFlags().useLocalScope());
  kernel.setSymNameAttr(name);
  return key;
}

namespace {
struct OutlineParallelLoopsPass
    : impl::KilnOutlineParallelLoopsBase<OutlineParallelLoopsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    SymbolTable symbols(module);
    SmallVector<func::FuncOp> steps;
    for (auto func : module.getOps<func::FuncOp>())
      if (func.getSymName().starts_with(KILN_RT_MODEL_STEP_PREFIX) &&
          !func.isExternal())
        steps.push_back(func);

    OpBuilder builder(ctx);
    auto arenaType = MemRefType::get({ShapedType::kDynamic}, builder.getI8Type());
    auto tableType = MemRefType::get({ShapedType::kDynamic}, builder.getI64Type());
    auto kernelType = builder.getFunctionType(
        {arenaType, builder.getIndexType(), builder.getIndexType(), tableType},
        {});
    auto siteType = builder.getI32Type();
    auto ptrType = LLVM::LLVMPointerType::get(ctx);
    auto parallelForType = builder.getFunctionType(
        {ptrType, kernelType, arenaType, builder.getIndexType(),
         builder.getIndexType(), tableType, siteType},
        {});
    auto serialCallType = builder.getFunctionType(
        {ptrType, kernelType, arenaType, tableType, siteType}, {});
    unsigned counter = 0;
    llvm::json::Array sites;
    llvm::StringMap<func::FuncOp> kernelsByKey;
    std::map<SmallVector<int64_t>, memref::GlobalOp> tables;
    // The offset table of one call, shared by calls with the same offsets.
    auto tableFor = [&](ArrayRef<int64_t> offsets) {
      SmallVector<int64_t> key(offsets);
      if (key.empty())
        key.push_back(0);
      memref::GlobalOp &global = tables[key];
      if (!global) {
        std::string name = "kiln_offsets_" + std::to_string(tables.size() - 1);
        OpBuilder gb = OpBuilder::atBlockBegin(module.getBody());
        auto type = MemRefType::get({int64_t(key.size())}, gb.getI64Type());
        auto value = DenseElementsAttr::get(
            RankedTensorType::get(type.getShape(), gb.getI64Type()),
            ArrayRef<int64_t>(key));
        global = memref::GlobalOp::create(
            gb, module.getLoc(), name, gb.getStringAttr("private"),
            type, value, /*constant=*/true, /*alignment=*/nullptr);
        symbols.insert(global);
      }
      return global;
    };
    for (func::FuncOp step : steps) {
      Value context = step.getArgument(0), arena = step.getArgument(1);
      std::string role = stepRole(step);
      SmallVector<Operation *> loops;
      for (Operation &op : step.front())
        if (isa<scf::ParallelOp, scf::ForOp>(op))
          loops.push_back(&op);
      for (Operation *loop : loops) {
        auto parallel = dyn_cast<scf::ParallelOp>(loop);
        bool runParallel = false;
        if (parallel) {
          int64_t lb = constantIndex(parallel.getLowerBound()[0]);
          int64_t ub = constantIndex(parallel.getUpperBound()[0]);
          int64_t stepSize = constantIndex(parallel.getStep()[0]);
          // Tiny loops are not worth waking the pool for.
          int64_t work = ub - lb;
          for (auto [l, u] : llvm::zip(parallel.getLowerBound().drop_front(),
                                       parallel.getUpperBound().drop_front())) {
            int64_t a = constantIndex(l), b = constantIndex(u);
            work *= (a >= 0 && b >= 0) ? b - a : 1;
          }
          // Serial loops inside (reductions) multiply the work per iteration.
          parallel.getBody()->walk([&](scf::ForOp inner) {
            int64_t a = constantIndex(inner.getLowerBound());
            int64_t b = constantIndex(inner.getUpperBound());
            if (a >= 0 && b > a)
              work *= b - a;
          });
          runParallel = lb >= 0 && ub >= 0 && stepSize == 1 && ub - lb >= 2 &&
                        work >= minElements;
        }
        llvm::SetVector<Value> captured;
        getUsedValuesDefinedAbove(loop->getRegion(0), captured);
        for (Value operand : loop->getOperands())
          captured.insert(operand);
        llvm::SetVector<Operation *> slice;
        if (llvm::any_of(captured, [&](Value v) {
              return v == context ||
                     failed(collectRecomputable(v, arena, slice));
            }))
          continue;

        // A serial loop that yields values stays where its results are used.
        if (loop->getNumResults() != 0)
          continue;

        // The kernel: the same loop; a parallel one over [begin, end) of its
        // first dimension. An identical kernel made earlier is reused.
        builder.setInsertionPoint(step);
        auto kernel = func::FuncOp::create(builder, loop->getLoc(),
                                           "kiln_kernel", kernelType);
        kernel.setPrivate();
        Block *entry = kernel.addEntryBlock();
        SmallVector<int64_t> offsets;
        Operation *clone =
            cloneIntoKernel(kernel, arena, slice.getArrayRef(), loop, offsets);
        if (runParallel) {
          auto parallelClone = cast<scf::ParallelOp>(clone);
          parallelClone.getLowerBoundMutable()[0].assign(entry->getArgument(1));
          parallelClone.getUpperBoundMutable()[0].assign(entry->getArgument(2));
        }
        func::FuncOp &existing = kernelsByKey[kernelKey(kernel)];
        if (existing) {
          kernel.erase();
          kernel = existing;
        } else {
          kernel.setSymName(("kiln_kernel_" + Twine(counter++)).str());
          symbols.insert(kernel);
          existing = kernel;
        }

        builder.setInsertionPoint(loop);
        Location loc = loop->getLoc();
        memref::GlobalOp global = tableFor(offsets);
        Value table = memref::CastOp::create(
            builder, loc, tableType,
            memref::GetGlobalOp::create(builder, loc, global.getType(),
                                        global.getSymName()));
        Value fn = func::ConstantOp::create(builder, loc, kernelType,
                                            SymbolRefAttr::get(kernel));
        Value site =
            arith::ConstantIntOp::create(builder, loc, siteType, sites.size());
        llvm::json::Object source = sourceJson(loc);
        source["function"] = role;
        source["kernel"] = kernel.getSymName().str();
        source["parallel"] = runParallel;
        sites.push_back(std::move(source));
        if (runParallel) {
          declareRuntimeFunction(module, symbols, kParallelFor,
                                 parallelForType);
          func::CallOp::create(builder, loc, kParallelFor, TypeRange{},
                               ValueRange{context, fn, arena,
                                          parallel.getLowerBound()[0],
                                          parallel.getUpperBound()[0], table,
                                          site});
        } else {
          declareRuntimeFunction(module, symbols, kSerialCall, serialCallType);
          func::CallOp::create(builder, loc, kSerialCall, TypeRange{},
                               ValueRange{context, fn, arena, table, site});
        }
        loop->erase();
      }
    }
    recordSites(module, std::move(sites), describeCallSites(steps));
  }
};
} // namespace
} // namespace kiln
