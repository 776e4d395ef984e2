//===- SpecializeBatch.cpp - kiln-specialize-batch ------------------------===//

#include "passes/Passes.h"

#include "dialects/Kiln/IR/KilnOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Verifier.h"

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_KILNSPECIALIZEBATCH
#include "passes/Passes.h.inc"

/// `type` with every dynamic dimension set to `batch`.
static Type specialize(Type type, int64_t batch) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || tensor.hasStaticShape())
    return type;
  SmallVector<int64_t> shape(tensor.getShape());
  for (int64_t &dim : shape)
    if (ShapedType::isDynamic(dim))
      dim = batch;
  return tensor.clone(shape);
}

namespace {
struct SpecializeBatchPass
    : impl::KilnSpecializeBatchBase<SpecializeBatchPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (batch <= 0) {
      module.emitError("kiln-specialize-batch: the batch must be positive, "
                       "got ")
          << static_cast<int64_t>(batch);
      return signalPassFailure();
    }
    for (auto func : module.getOps<func::FuncOp>()) {
      func.walk([&](Operation *op) {
        for (Region &region : op->getRegions())
          for (Block &block : region)
            for (BlockArgument arg : block.getArguments())
              arg.setType(specialize(arg.getType(), batch));
        for (OpResult result : op->getResults())
          result.setType(specialize(result.getType(), batch));
      });
      SmallVector<Type> inputs, results;
      for (Type t : func.getArgumentTypes())
        inputs.push_back(specialize(t, batch));
      for (Type t : func.getResultTypes())
        results.push_back(specialize(t, batch));
      func.setFunctionType(FunctionType::get(&getContext(), inputs, results));
    }
    // Shapes now interact (e.g. a reshape of the batch): check them again.
    if (failed(verify(module)))
      signalPassFailure();
  }
};
} // namespace
} // namespace kiln
