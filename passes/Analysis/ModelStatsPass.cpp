//===- ModelStatsPass.cpp - kiln-model-stats ------------------------------===//

#include "passes/Analysis/ModelStats.h"
#include "passes/Passes.h"

#include "dialects/Kiln/IR/KilnOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace kiln {
#define GEN_PASS_DEF_KILNMODELSTATS
#include "passes/Passes.h.inc"
} // namespace kiln

namespace kiln {
namespace {
struct ModelStatsPass : impl::KilnModelStatsBase<ModelStatsPass> {
  using Base::Base;
  void runOnOperation() override {
    printModelStats(computeModelStats(getOperation()), llvm::outs(), perOp);
    markAllAnalysesPreserved();
  }
};
} // namespace
} // namespace kiln
