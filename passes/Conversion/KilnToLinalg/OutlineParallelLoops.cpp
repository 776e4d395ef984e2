//===- OutlineParallelLoops.cpp - kiln-outline-parallel-loops -------------===//
//
// The generated loops run on every core through the runtime's thread pool
// (the OpenMP pool oneDNN uses, so the two never compete): each top-level
// scf.parallel of a compiled step becomes a kernel function over a range of
// its first dimension, and the step calls
//   kiln_rt_parallel_for(ctx, kernel, arena, begin, end)
// which runs the kernel on one chunk of [begin, end) per thread. Serial
// loops become kernels called directly, so that the step itself is a short
// sequence of calls: later passes and LLVM then work on many small
// functions instead of one huge one (the compile time of ResNet-50 depends
// on it).
//
// A kernel reaches its data through the arena, so everything the loop uses
// from outside (views, constants, scalars loaded from the arena) is
// recomputed inside it; a loop that uses anything else stays serial.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/RegionUtils.h"

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_KILNOUTLINEPARALLELLOOPS
#include "passes/Passes.h.inc"

inline constexpr llvm::StringLiteral kParallelFor = "kiln_rt_parallel_for";

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
      if (func.getSymName().starts_with("kiln_model_") && !func.isExternal())
        steps.push_back(func);

    OpBuilder builder(ctx);
    auto arenaType = MemRefType::get({ShapedType::kDynamic}, builder.getI8Type());
    auto kernelType = builder.getFunctionType(
        {arenaType, builder.getIndexType(), builder.getIndexType()}, {});
    bool declared = false;
    unsigned counter = 0;
    for (func::FuncOp step : steps) {
      Value context = step.getArgument(0), arena = step.getArgument(1);
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
        // first dimension.
        builder.setInsertionPoint(step);
        std::string name = ("kiln_kernel_" + Twine(counter++)).str();
        auto kernel = func::FuncOp::create(builder, loop->getLoc(), name, kernelType);
        kernel.setPrivate();
        symbols.insert(kernel);
        Block *entry = kernel.addEntryBlock();
        OpBuilder kb = OpBuilder::atBlockBegin(entry);
        IRMapping mapping;
        mapping.map(arena, entry->getArgument(0));
        for (Operation *op : slice)
          kb.clone(*op, mapping);
        Operation *clone = kb.clone(*loop, mapping);
        func::ReturnOp::create(kb, loop->getLoc());
        builder.setInsertionPoint(loop);
        if (!runParallel) {
          Value zero = arith::ConstantIndexOp::create(builder, loop->getLoc(), 0);
          func::CallOp::create(builder, loop->getLoc(), kernel,
                               ValueRange{arena, zero, zero});
          loop->erase();
          continue;
        }
        auto parallelClone = cast<scf::ParallelOp>(clone);
        parallelClone.getLowerBoundMutable()[0].assign(entry->getArgument(1));
        parallelClone.getUpperBoundMutable()[0].assign(entry->getArgument(2));

        if (!declared) {
          OpBuilder db = OpBuilder::atBlockBegin(module.getBody());
          auto decl = func::FuncOp::create(
              db, module.getLoc(), kParallelFor,
              db.getFunctionType({LLVM::LLVMPointerType::get(ctx), kernelType,
                                  arenaType, db.getIndexType(),
                                  db.getIndexType()},
                                 {}));
          decl.setPrivate();
          declared = true;
        }
        Value fn = func::ConstantOp::create(builder, loop->getLoc(), kernelType,
                                            SymbolRefAttr::get(kernel));
        func::CallOp::create(builder, loop->getLoc(), kParallelFor, TypeRange{},
                             ValueRange{context, fn, arena,
                                        parallel.getLowerBound()[0],
                                        parallel.getUpperBound()[0]});
        loop->erase();
      }
    }
  }
};
} // namespace
} // namespace kiln
