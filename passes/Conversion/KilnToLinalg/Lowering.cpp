//===- Lowering.cpp - Shared state of the kiln-to-linalg lowering ---------===//

#include "passes/Conversion/KilnToLinalg/Lowering.h"

#include "dialects/Kiln/IR/KilnLayout.h"
#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

namespace kiln {

static MemRefType memrefTypeOf(Type tensorType) {
  auto tensor = cast<RankedTensorType>(tensorType);
  return MemRefType::get(tensor.getShape(), tensor.getElementType());
}

Value Lowering::viewAt(Location loc, int64_t offset, MemRefType type) {
  return memref::ViewOp::create(b, loc, type, arena, index(loc, offset),
                                ValueRange{});
}

Value Lowering::viewAt(Location loc, Value offset, Value size,
                       Type elementType) {
  return memref::ViewOp::create(
      b, loc, MemRefType::get({ShapedType::kDynamic}, elementType), arena,
      offset, ValueRange{size});
}

int64_t Lowering::offsetOf(Value value) const { return plan.offsetOf(value); }

Value Lowering::constantTable(Location loc, StringRef name,
                              ArrayRef<int64_t> values) {
  auto module = b.getInsertionBlock()->getParentOp()->getParentOfType<ModuleOp>();
  auto type = MemRefType::get({int64_t(values.size())}, b.getI64Type());
  SymbolTable symbols(module);
  OpBuilder gb(b.getContext()); // detached: SymbolTable::insert places it
  auto global = memref::GlobalOp::create(
      gb, loc, name, gb.getStringAttr("private"), type,
      DenseElementsAttr::get(RankedTensorType::get(type.getShape(),
                                                   gb.getI64Type()),
                             values),
      /*constant=*/true, /*alignment=*/nullptr);
  symbols.insert(global, module.getBody()->begin()); // makes the name unique
  return memref::GetGlobalOp::create(b, loc, type, global.getSymName());
}

Value Lowering::view(Value value) {
  if (Value cached = views.lookup(value))
    return cached;
  Value result =
      viewAt(value.getLoc(), plan.offsetOf(value), memrefTypeOf(value.getType()));
  views[value] = result;
  return result;
}

Value Lowering::viewAs(Value value, ArrayRef<int64_t> shape) {
  auto tensor = cast<RankedTensorType>(value.getType());
  return viewAs(value, shape, tensor.getElementType());
}

Value Lowering::viewAs(Value value, ArrayRef<int64_t> shape, Type elementType) {
  return viewAt(value.getLoc(), plan.offsetOf(value),
                MemRefType::get(shape, elementType));
}

StringRef manifestDtype(Type type) {
  if (type.isF32())
    return "f32";
  if (type.isBF16())
    return "bf16";
  if (type.isF64())
    return "f64";
  if (type.isInteger(32))
    return "i32";
  if (type.isInteger(64))
    return "i64";
  return "unknown";
}

llvm::json::Object Lowering::describe(Value value, bool activation) const {
  auto tensor = cast<RankedTensorType>(value.getType());
  llvm::json::Array shape;
  for (int64_t d : tensor.getShape())
    shape.push_back(d);
  llvm::json::Object object{{"offset", plan.offsetOf(value)},
                            {"shape", std::move(shape)},
                            {"dtype", manifestDtype(tensor.getElementType())}};
  if (activation && tensor.getRank() == 4)
    object["layout"] = getStorageLayout(value) == Layout::NChw16c ? "nChw16c"
                                                                   : "nhwc";
  return object;
}

llvm::json::Object Lowering::describeTemporary(Value view) const {
  auto type = cast<MemRefType>(view.getType());
  llvm::json::Array shape;
  for (int64_t d : type.getShape())
    shape.push_back(d);
  return llvm::json::Object{{"offset", temporaryOffsets.lookup(view)},
                            {"shape", std::move(shape)},
                            {"dtype", manifestDtype(type.getElementType())}};
}

void Lowering::emitRuntimeCall(Location loc, StringRef name, int32_t id) {
  Value idValue = arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(id));
  func::CallOp::create(b, loc, name, TypeRange{}, ValueRange{context, idValue});
}

void Lowering::emitLibraryCall(Location loc, llvm::json::Object call) {
  call["function"] = role.str();
  int32_t id = calls.size();
  calls.push_back(std::move(call));
  emitRuntimeCall(loc, kKernelCall, id);
}

Value Lowering::index(Location loc, int64_t value) {
  return arith::ConstantIndexOp::create(b, loc, value);
}

Value Lowering::f32(Location loc, double value) {
  return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(value));
}

VectorType channelLanes(Type scalar) { return VectorType::get({16}, scalar); }

Value Lowering::constant(Location loc, Type type, double value) {
  return floatConstant(b, loc, type, value);
}

Value Lowering::loadScalar(Location loc, Value value) {
  return memref::LoadOp::create(b, loc, view(value), ValueRange{});
}

void Lowering::generic(
    Location loc, ValueRange inputs, ValueRange outputs,
    ArrayRef<AffineMap> maps, ArrayRef<utils::IteratorType> iterators,
    std::function<void(OpBuilder &, Location, ValueRange)> body) {
  linalg::GenericOp::create(b, loc, TypeRange{}, inputs, outputs, maps,
                            iterators, body);
}

void Lowering::elementwise(
    Location loc, ValueRange inputs, ValueRange outputs,
    std::function<void(OpBuilder &, Location, ValueRange)> body) {
  auto rank = cast<MemRefType>(outputs.front().getType()).getRank();
  SmallVector<AffineMap> maps(inputs.size() + outputs.size(),
                              b.getMultiDimIdentityMap(rank));
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  generic(loc, inputs, outputs, maps, iterators, body);
}

void Lowering::fill(Location loc, Value memref, double value) {
  Type element = cast<MemRefType>(memref.getType()).getElementType();
  linalg::FillOp::create(b, loc, ValueRange{floatConstant(b, loc, element, value)},
                         ValueRange{memref});
}

Value Lowering::temporary(Location loc, ArrayRef<int64_t> shape,
                          Type elementType) {
  auto type = MemRefType::get(shape, elementType);
  int64_t elementBits = 0;
  if (auto vector = dyn_cast<VectorType>(elementType))
    elementBits = vector.getNumElements() *
                  vector.getElementType().getIntOrFloatBitWidth();
  else
    elementBits = elementType.getIntOrFloatBitWidth();
  int64_t bytes =
      type.getNumElements() * std::max<int64_t>(elementBits / 8, 1);
  int64_t offset = plan.scratchEnd + temporaryBytes;
  Value view = viewAt(loc, offset, type);
  temporaryOffsets[view] = offset;
  temporaryBytes += alignSlot(bytes);
  temporaryRegionBytes = std::max(temporaryRegionBytes, temporaryBytes);
  return view;
}

void Lowering::loops(Location loc, ArrayRef<int64_t> bounds,
                     std::function<void(ValueRange)> body) {
  SmallVector<Value> lower(bounds.size(), index(loc, 0));
  SmallVector<Value> upper, steps(bounds.size(), index(loc, 1));
  for (int64_t bound : bounds)
    upper.push_back(index(loc, bound));
  scf::buildLoopNest(b, loc, lower, upper, steps,
                     [&](OpBuilder &nested, Location, ValueRange ivs) {
                       OpBuilder::InsertionGuard guard(b);
                       b.setInsertionPoint(nested.getInsertionBlock(),
                                           nested.getInsertionPoint());
                       body(ivs);
                     });
}

void Lowering::parallelLoops(Location loc, ArrayRef<int64_t> bounds,
                             std::function<void(ValueRange)> body) {
  scf::ParallelOp::create(
      b, loc, ValueRange{index(loc, 0)}, ValueRange{index(loc, bounds[0])},
      ValueRange{index(loc, 1)},
      [&](OpBuilder &nested, Location, ValueRange outer) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(nested.getInsertionBlock(),
                            nested.getInsertionPoint());
        Value first = outer[0];
        if (bounds.size() == 1) {
          body(first);
          return;
        }
        loops(loc, bounds.drop_front(), [&](ValueRange inner) {
          SmallVector<Value> ivs = {first};
          ivs.append(inner.begin(), inner.end());
          body(ivs);
        });
      });
}

LogicalResult lowerOp(Lowering &l, Operation *op) {
  // The loops index each operand as its layout says; a mismatch would
  // silently compute garbage.
  if (failed(verifyLayouts(op)))
    return failure();
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case<ReluOp, ActivationOp, AddOp, ReluBackwardOp, ActivationBackwardOp,
            CastOp, FusedElementwiseOp, GlobalAvgPoolOp,
            GlobalAvgPoolBackwardOp, ReduceSumOp, BroadcastBinaryOp,
            BroadcastBinaryBackwardOp, BiasAddOp, BiasAddBackwardOp,
            arith::ConstantOp>(
          [&](Operation *op) { return lowerElementwise(l, op); })
      .Case<BatchNormTrainOp, BatchNormInferenceOp, BatchNormBackwardOp,
            FusedConv2DBatchNormTrainOp>(
          [&](Operation *op) { return lowerBatchNorm(l, op); })
      .Case<MaxPoolOp, MaxPoolBackwardOp, AvgPoolOp, AvgPoolBackwardOp>(
          [&](Operation *op) { return lowerPooling(l, op); })
      .Case<DropoutOp>([&](Operation *op) { return lowerDropout(l, op); })
      .Case<SoftmaxCrossEntropyOp, SoftmaxCrossEntropyBackwardOp>(
          [&](Operation *op) { return lowerLoss(l, op); })
      .Case<ConcatOp, SliceOp, SliceBackwardOp, ChannelShuffleOp, TransposeOp>(
          [&](Operation *op) { return lowerDataMovement(l, op); })
      .Case<SgdUpdateOp, FusedSgdUpdateOp, LarsUpdateOp, LearningRateOp>(
          [&](Operation *op) { return lowerOptimizer(l, op); })
      .Case<Conv2DOp, FusedConv2DBatchNormOp, Conv2DBackwardDataOp,
            Conv2DBackwardFilterOp, DenseOp, MatmulOp,
            FusedDenseBackwardWeightsOp, ReorderOp>(
          [&](Operation *op) { return lowerLibraryCall(l, op); })
      .Default(
          [](Operation *op) { return op->emitOpError("has no x86 lowering"); });
}

} // namespace kiln
