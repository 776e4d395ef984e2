//===- InsertAllReducePass.cpp - kiln-insert-allreduce --------------------===//

#include "passes/Distributed/InsertAllReduce.h"
#include "passes/Passes.h"

#include "dialects/Kiln/IR/KilnOps.h"

namespace kiln {
#define GEN_PASS_DEF_KILNINSERTALLREDUCE
#include "passes/Passes.h.inc"

namespace {
struct InsertAllReducePass
    : impl::KilnInsertAllReduceBase<InsertAllReducePass> {
  using Base::Base;
  void runOnOperation() override {
    mlir::ModuleOp module = getOperation();
    auto step = module.lookupSymbol<mlir::func::FuncOp>(stepFunction);
    if (!step) {
      module.emitError("kiln-insert-allreduce: no function @") << stepFunction;
      return signalPassFailure();
    }
    if (failed(insertAllReduce(step, bucketBytes)))
      signalPassFailure();
  }
};
} // namespace
} // namespace kiln
