//===- WeightCopies.cpp - bf16 copies of the master weights ---------------===//
//
// After --kiln-bf16 every bf16 compute op reads `kiln.cast (kiln.read @w)`:
// one pass over each weight per step, and per function, that redoes the
// rounding the optimizer could have done once while it had the new weight in
// registers. Here each such weight gets a bf16 copy variable that the
// functions read instead, and that the step assigns the rounded new weight;
// --kiln-fuse then folds that rounding into the fused update's loop.
//
//===----------------------------------------------------------------------===//

#include "passes/Precision/Bf16.h"

#include "dialects/Kiln/IR/KilnOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"

#include "llvm/ADT/MapVector.h"

using namespace mlir;

namespace kiln {

/// The element type of a kiln tensor value (casts and reads have ranked
/// tensor types).
static Type elementTypeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getElementType();
}

LogicalResult keepBf16WeightCopies(ModuleOp module) {
  SymbolTable symbols(module);
  // The bf16 casts of each f32 parameter's reads, in program order.
  llvm::MapVector<Operation *, SmallVector<CastOp>> castsOf;
  module.walk([&](CastOp cast) {
    auto read = cast.getInput().getDefiningOp<ReadOp>();
    if (!read || !elementTypeOf(cast.getOutput()).isBF16() ||
        !elementTypeOf(read.getValue()).isF32())
      return;
    auto variable = symbols.lookup<VariableOp>(read.getVariable());
    if (variable && variable.isParameter())
      castsOf[variable].push_back(cast);
  });

  OpBuilder builder(module.getContext());
  for (auto &[op, casts] : castsOf) {
    auto weight = cast<VariableOp>(op);
    std::string name = (weight.getSymName() + ".bf16").str();
    if (symbols.lookup(name))
      return weight.emitOpError("needs a bf16 copy @")
             << name << ", but that name is taken";
    auto copyType = weight.getTensorType().clone(builder.getBF16Type());
    builder.setInsertionPointAfter(weight);
    auto copy = VariableOp::create(
        builder, weight.getLoc(),
        VariableKindAttr::get(builder.getContext(), VariableKind::State),
        builder.getStringAttr(name), TypeAttr::get(copyType),
        InitializerAttr::get(builder.getContext(), Initializer::Copy),
        FloatAttr(), ElementsAttr(),
        FlatSymbolRefAttr::get(weight.getSymNameAttr()));
    auto copySymbol = FlatSymbolRefAttr::get(copy.getSymNameAttr());

    for (CastOp cast : casts) {
      auto read = cast.getInput().getDefiningOp<ReadOp>();
      builder.setInsertionPoint(cast);
      Value rounded =
          ReadOp::create(builder, cast.getLoc(), copyType, copySymbol);
      cast.getOutput().replaceAllUsesWith(rounded);
      cast.erase();
      if (read.getValue().use_empty())
        read.erase();
    }
    // The step that updates the weight updates its copy: reads see round(w)
    // of the weight they would have read.
    SmallVector<AssignOp> assigns;
    module.walk([&](AssignOp assign) {
      if (assign.getVariable() == weight.getSymName())
        assigns.push_back(assign);
    });
    for (AssignOp assign : assigns) {
      builder.setInsertionPointAfter(assign);
      Value rounded =
          CastOp::create(builder, assign.getLoc(), copyType, assign.getValue());
      AssignOp::create(builder, assign.getLoc(), copySymbol, rounded);
    }
  }
  return success();
}

} // namespace kiln
