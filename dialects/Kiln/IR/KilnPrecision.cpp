//===- KilnPrecision.cpp - PrecisionOpInterface of the forward ops --------===//
//
// The bf16 table: convolutions and dense layers compute in bf16, the loss
// needs f32, everything else follows its input.
//
//===----------------------------------------------------------------------===//

#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace kiln;

Bf16Policy Conv2DOp::getBf16Policy() { return Bf16Policy::Compute; }
SmallVector<unsigned> Conv2DOp::getPrecisionOperands() { return {0, 1}; }

Bf16Policy DenseOp::getBf16Policy() { return Bf16Policy::Compute; }
SmallVector<unsigned> DenseOp::getPrecisionOperands() { return {0, 1}; }

Bf16Policy AddOp::getBf16Policy() { return Bf16Policy::Follow; }
SmallVector<unsigned> AddOp::getPrecisionOperands() { return {0, 1}; }

Bf16Policy BroadcastBinaryOp::getBf16Policy() { return Bf16Policy::Follow; }
SmallVector<unsigned> BroadcastBinaryOp::getPrecisionOperands() {
  return {0, 1};
}

Bf16Policy BiasAddOp::getBf16Policy() { return Bf16Policy::Follow; }
SmallVector<unsigned> BiasAddOp::getPrecisionOperands() { return {0, 1}; }

Bf16Policy BatchNormTrainOp::getBf16Policy() { return Bf16Policy::Follow; }
Bf16Policy BatchNormInferenceOp::getBf16Policy() { return Bf16Policy::Follow; }
Bf16Policy ReluOp::getBf16Policy() { return Bf16Policy::Follow; }
Bf16Policy ActivationOp::getBf16Policy() { return Bf16Policy::Follow; }
Bf16Policy DropoutOp::getBf16Policy() { return Bf16Policy::Follow; }
Bf16Policy MaxPoolOp::getBf16Policy() { return Bf16Policy::Follow; }
Bf16Policy AvgPoolOp::getBf16Policy() { return Bf16Policy::Follow; }
Bf16Policy GlobalAvgPoolOp::getBf16Policy() { return Bf16Policy::Follow; }
Bf16Policy ReshapeOp::getBf16Policy() { return Bf16Policy::Follow; }
Bf16Policy SoftmaxCrossEntropyOp::getBf16Policy() { return Bf16Policy::F32; }

// Data movement runs in whatever precision arrives; a concat of mixed inputs
// is bf16 (rounding its f32 inputs as any bf16 follow op does).
Bf16Policy ConcatOp::getBf16Policy() { return Bf16Policy::Follow; }
SmallVector<unsigned> ConcatOp::getPrecisionOperands() {
  return llvm::to_vector(llvm::seq<unsigned>(0, getNumOperands()));
}
Bf16Policy SliceOp::getBf16Policy() { return Bf16Policy::Follow; }
Bf16Policy ChannelShuffleOp::getBf16Policy() { return Bf16Policy::Follow; }
Bf16Policy TransposeOp::getBf16Policy() { return Bf16Policy::Follow; }

OpFoldResult CastOp::fold(FoldAdaptor) {
  Value input = getInput();
  if (input.getType() == getType())
    return input;
  // bf16 -> f32 is exact, so rounding it back gives the bf16 value again.
  // (f32 -> bf16 -> f32 is not the identity: it rounds.)
  if (auto widened = input.getDefiningOp<CastOp>()) {
    Value narrow = widened.getInput();
    if (narrow.getType() == getType() &&
        getElementTypeOrSelf(narrow).getIntOrFloatBitWidth() <
            getElementTypeOrSelf(input).getIntOrFloatBitWidth())
      return narrow;
  }
  return {};
}
