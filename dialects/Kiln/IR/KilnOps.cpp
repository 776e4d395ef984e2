//===- KilnOps.cpp - Operations of the kiln dialect -----------------------===//
//
// Verifiers and shape inference. Ops whose result types follow from their
// operands check everything in inferReturnTypes, so that the builder and the
// verifier share one source of truth and one set of messages.
//
//===----------------------------------------------------------------------===//

#include "dialects/Kiln/IR/KilnOps.h"
#include "dialects/Kiln/IR/ShapeRules.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace kiln;

static bool isDynamic(int64_t dim) { return ShapedType::isDynamic(dim); }

//===----------------------------------------------------------------------===//
// VariableOp
//===----------------------------------------------------------------------===//

LogicalResult VariableOp::verify() {
  RankedTensorType type = getTensorType();
  Initializer init = getInit();
  bool isFloat = isa<FloatType>(type.getElementType());
  if ((init == Initializer::HeNormal || init == Initializer::Normal) &&
      !isFloat)
    return emitOpError("initializer '")
           << stringifyInitializer(init) << "' needs a float element type, got "
           << type.getElementType();
  if (init == Initializer::HeNormal && type.getRank() < 2)
    return emitOpError("initializer 'he_normal' needs a fan-in: rank >= 2, "
                       "got rank ")
           << type.getRank();
  if (init == Initializer::Normal) {
    if (!getStd())
      return emitOpError("initializer 'normal' needs 'std'");
    if (getStd()->convertToFloat() <= 0.0f)
      return emitOpError("'std' must be positive, got ")
             << getStd()->convertToFloat();
  } else if (getStd()) {
    return emitOpError("'std' is only meaningful with initializer 'normal'");
  }
  if (init == Initializer::Constant) {
    ElementsAttr value = getValueAttr();
    if (!value)
      return emitOpError("initializer 'constant' needs a 'value'");
    if (value.getShapedType() != type)
      return emitOpError("'value' has type ")
             << value.getShapedType() << " but the variable is " << type;
  } else if (getValueAttr()) {
    return emitOpError("'value' is only meaningful with initializer "
                       "'constant'");
  }
  if (init == Initializer::Copy) {
    if (!getOfAttr())
      return emitOpError("initializer 'copy' needs 'of', the variable it "
                         "copies");
    if (getKind() != VariableKind::State)
      return emitOpError("a copy is derived state: declare it 'state'");
    if (!isFloat)
      return emitOpError("a copy needs a float element type, got ")
             << type.getElementType();
  } else if (getOfAttr()) {
    return emitOpError("'of' is only meaningful with initializer 'copy'");
  }
  return success();
}

LogicalResult VariableOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  if (!getOfAttr())
    return success();
  auto source =
      symbolTable.lookupNearestSymbolFrom<VariableOp>(*this, getOfAttr());
  if (!source)
    return emitOpError("copies '")
           << getOfAttr().getValue() << "', which is not a kiln.variable";
  if (source.getInit() == Initializer::Copy)
    return emitOpError("copies ")
           << getOfAttr() << ", which is itself a copy: copy its source";
  RankedTensorType type = getTensorType(), from = source.getTensorType();
  if (type.getShape() != from.getShape() ||
      !isa<FloatType>(from.getElementType()))
    return emitOpError("is ")
           << type << " but copies " << getOfAttr() << " of type " << from
           << ": a copy has its source's shape and a float element type";
  return success();
}

//===----------------------------------------------------------------------===//
// ReadOp / AssignOp
//===----------------------------------------------------------------------===//

/// Resolves `symbol` to a kiln.variable of type `type`, or emits an error.
static LogicalResult verifyVariableUse(Operation *op,
                                       SymbolTableCollection &symbolTable,
                                       FlatSymbolRefAttr symbol, Type type,
                                       StringRef verb) {
  auto variable =
      symbolTable.lookupNearestSymbolFrom<VariableOp>(op, symbol.getAttr());
  if (!variable)
    return op->emitOpError("'") << symbol.getValue()
                                << "' does not name a kiln.variable";
  if (variable.getType() != type)
    return op->emitOpError()
           << verb << " " << symbol << " as " << type << " but it is declared "
           << variable.getType();
  return success();
}

LogicalResult ReadOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyVariableUse(*this, symbolTable, getVariableAttr(),
                           getValue().getType(), "reads");
}

LogicalResult AssignOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyVariableUse(*this, symbolTable, getVariableAttr(),
                           getValue().getType(), "assigns");
}

//===----------------------------------------------------------------------===//
// Conv2DOp
//===----------------------------------------------------------------------===//

LogicalResult Conv2DOp::inferReturnTypes(MLIRContext *context,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  auto filter = cast<RankedTensorType>(adaptor.getFilter().getType());
  StringRef name = "kiln.conv2d";
  if (input.getElementType() != filter.getElementType())
    return emitOptionalError(loc, name, ": input element type ",
                             input.getElementType(),
                             " differs from filter element type ",
                             filter.getElementType());
  if (filter.hasStaticShape() == false)
    return emitOptionalError(loc, name, ": the filter shape must be static");
  int64_t outChannels = filter.getDimSize(3);
  if (failed(checkConvGroups(loc, name, "input", input.getDimSize(3),
                             "filter (HWIO)", filter.getDimSize(2),
                             outChannels, int64_t(adaptor.getGroups()))))
    return failure();
  if (Value bias = adaptor.getBias()) {
    int64_t biasSize = cast<RankedTensorType>(bias.getType()).getDimSize(0);
    if (biasSize != outChannels)
      return emitOptionalError(loc, name, ": bias has ", biasSize,
                               " elements but the filter has ", outChannels,
                               " output channels");
  }
  SmallVector<int64_t> spatial;
  if (failed(inferWindowSpatialSize(loc, name, input, filter.getShape().take_front(2),
                          adaptor.getStrides(), adaptor.getPadding(),
                          adaptor.getDilations(), spatial)))
    return failure();
  results.push_back(RankedTensorType::get(
      {input.getDimSize(0), spatial[0], spatial[1], filter.getDimSize(3)},
      input.getElementType()));
  return success();
}

int64_t Conv2DOp::getMultiplyAdds(int64_t dynamicDimSize) {
  auto filter = getFilter().getType();
  // Each output element costs KH * KW * Cin / groups multiply-adds: the
  // filter's input dimension is already per group.
  return numElementsWith(getOutput().getType(), dynamicDimSize) *
         filter.getDimSize(0) * filter.getDimSize(1) * filter.getDimSize(2);
}

//===----------------------------------------------------------------------===//
// Batch normalization
//===----------------------------------------------------------------------===//

LogicalResult BatchNormTrainOp::inferReturnTypes(
    MLIRContext *context, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &results) {
  FailureOr<int64_t> channels = checkBatchNormOperands(
      loc, "kiln.batch_norm_train", adaptor.getInput(),
      {{"scale", adaptor.getScale()},
       {"offset", adaptor.getOffset()},
       {"running_mean", adaptor.getRunningMean()},
       {"running_var", adaptor.getRunningVar()}});
  if (failed(channels))
    return failure();
  if (Value residual = adaptor.getResidual();
      residual && residual.getType() != adaptor.getInput().getType())
    return emitOptionalError(
        loc, "kiln.batch_norm_train: residual type ", residual.getType(),
        " differs from the input type ", adaptor.getInput().getType());
  auto stats = RankedTensorType::get({*channels}, Float32Type::get(context));
  results.push_back(adaptor.getInput().getType());
  results.append(4, stats);
  return success();
}

LogicalResult BatchNormInferenceOp::inferReturnTypes(
    MLIRContext *context, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &results) {
  if (failed(checkBatchNormOperands(loc, "kiln.batch_norm_inference",
                                    adaptor.getInput(),
                                    {{"scale", adaptor.getScale()},
                                     {"offset", adaptor.getOffset()},
                                     {"mean", adaptor.getMean()},
                                     {"variance", adaptor.getVariance()}})))
    return failure();
  results.push_back(adaptor.getInput().getType());
  return success();
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

template <typename Adaptor>
static LogicalResult inferPool(std::optional<Location> loc, StringRef name,
                               Adaptor adaptor,
                               SmallVectorImpl<Type> &results) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  ArrayRef<int64_t> padding = adaptor.getPadding();
  ArrayRef<int64_t> window = adaptor.getWindow();
  // A window made only of padding would have nothing to pool.
  for (int i = 0; i < 2; ++i)
    if (padding.size() == 4 && window.size() == 2 &&
        (padding[2 * i] >= window[i] || padding[2 * i + 1] >= window[i]))
      return emitOptionalError(loc, name, ": padding ", padding[2 * i], ", ",
                               padding[2 * i + 1],
                               " must be smaller than the window ", window[i]);
  SmallVector<int64_t> spatial;
  SmallVector<int64_t> unitDilations = {1, 1};
  if (failed(inferWindowSpatialSize(loc, name, input, window, adaptor.getStrides(),
                          padding, unitDilations, spatial,
                          static_cast<bool>(adaptor.getCeilMode()))))
    return failure();
  results.push_back(RankedTensorType::get({input.getDimSize(0), spatial[0],
                                           spatial[1], input.getDimSize(3)},
                                          input.getElementType()));
  return success();
}

LogicalResult MaxPoolOp::inferReturnTypes(MLIRContext *context,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &results) {
  return inferPool(loc, "kiln.max_pool", adaptor, results);
}

LogicalResult AvgPoolOp::inferReturnTypes(MLIRContext *context,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &results) {
  return inferPool(loc, "kiln.avg_pool", adaptor, results);
}

LogicalResult GlobalAvgPoolOp::inferReturnTypes(
    MLIRContext *context, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &results) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  results.push_back(RankedTensorType::get(
      {input.getDimSize(0), input.getDimSize(3)}, input.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// BroadcastBinaryOp
//===----------------------------------------------------------------------===//

LogicalResult BroadcastBinaryOp::inferReturnTypes(
    MLIRContext *context, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &results) {
  auto lhs = cast<RankedTensorType>(adaptor.getLhs().getType());
  auto rhs = cast<RankedTensorType>(adaptor.getRhs().getType());
  FailureOr<RankedTensorType> type =
      inferBroadcast(loc, "kiln.broadcast_binary", lhs, rhs);
  if (failed(type))
    return failure();
  results.push_back(*type);
  return success();
}

//===----------------------------------------------------------------------===//
// BiasAddOp
//===----------------------------------------------------------------------===//

LogicalResult BiasAddOp::inferReturnTypes(MLIRContext *context,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &results) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  auto bias = cast<RankedTensorType>(adaptor.getBias().getType());
  StringRef name = "kiln.bias_add";
  if (input.getRank() < 1)
    return emitOptionalError(loc, name,
                             ": the input needs a channel dimension");
  if (input.getElementType() != bias.getElementType())
    return emitOptionalError(loc, name, ": bias element type ",
                             bias.getElementType(), " differs from ",
                             input.getElementType());
  int64_t channels = input.getDimSize(input.getRank() - 1);
  if (bias.getDimSize(0) != channels)
    return emitOptionalError(loc, name, ": ", bias.getDimSize(0),
                             " biases for ", channels, " channels");
  results.push_back(input);
  return success();
}

//===----------------------------------------------------------------------===//
// DropoutOp
//===----------------------------------------------------------------------===//

LogicalResult DropoutOp::inferReturnTypes(MLIRContext *context,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &results) {
  results.push_back(adaptor.getInput().getType());
  return success();
}

LogicalResult DropoutOp::verify() {
  // A ratio of 1 would scale by infinity; importers turn ratio 0 into the
  // identity, but the op accepts it (every element kept, scale 1).
  float ratio = getRatio().convertToFloat();
  if (!(ratio >= 0.0f && ratio < 1.0f))
    return emitOpError("ratio ") << ratio << " is outside [0, 1)";
  // The stream is one 32-bit word of the Philox counter (kiln/ref/philox.h).
  if (getStream() < 0 || getStream() > 0xffffffffLL)
    return emitOpError("stream ") << getStream() << " is outside [0, 2^32)";
  return success();
}

//===----------------------------------------------------------------------===//
// DenseOp
//===----------------------------------------------------------------------===//

LogicalResult DenseOp::inferReturnTypes(MLIRContext *context,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &results) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  auto weight = cast<RankedTensorType>(adaptor.getWeight().getType());
  StringRef name = "kiln.dense";
  if (input.getElementType() != weight.getElementType())
    return emitOptionalError(loc, name, ": input element type ",
                             input.getElementType(),
                             " differs from weight element type ",
                             weight.getElementType());
  if (!weight.hasStaticShape())
    return emitOptionalError(loc, name, ": the weight shape must be static");
  if (!isDynamic(input.getDimSize(1)) &&
      input.getDimSize(1) != weight.getDimSize(0))
    return emitOptionalError(loc, name, ": input has ", input.getDimSize(1),
                             " features but the weight [K, M] expects K = ",
                             weight.getDimSize(0));
  int64_t units = weight.getDimSize(1);
  if (Value bias = adaptor.getBias()) {
    int64_t biasSize = cast<RankedTensorType>(bias.getType()).getDimSize(0);
    if (biasSize != units)
      return emitOptionalError(loc, name, ": bias has ", biasSize,
                               " elements but the layer has ", units,
                               " outputs");
  }
  results.push_back(RankedTensorType::get({input.getDimSize(0), units},
                                          input.getElementType()));
  return success();
}

int64_t DenseOp::getMultiplyAdds(int64_t dynamicDimSize) {
  return numElementsWith(getOutput().getType(), dynamicDimSize) *
         getWeight().getType().getDimSize(0);
}

//===----------------------------------------------------------------------===//
// ReshapeOp
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::verify() {
  auto in = getInput().getType();
  auto out = getOutput().getType();
  if (in.getElementType() != out.getElementType())
    return emitOpError("cannot change the element type from ")
           << in.getElementType() << " to " << out.getElementType()
           << "; use kiln.cast";
  auto dynamicOnlyInBatch = [](RankedTensorType t) {
    return llvm::all_of(t.getShape().drop_front(),
                        [](int64_t d) { return !isDynamic(d); });
  };
  if (!dynamicOnlyInBatch(in) || !dynamicOnlyInBatch(out) ||
      isDynamic(in.getDimSize(0)) != isDynamic(out.getDimSize(0)))
    return emitOpError("only the leading (batch) dimension may be dynamic, "
                       "and in both types alike");
  if (numElementsWith(in, 1) != numElementsWith(out, 1))
    return emitOpError("cannot reshape ")
           << in << " (" << numElementsWith(in, 1) << " elements) to " << out
           << " (" << numElementsWith(out, 1) << " elements)";
  return success();
}

//===----------------------------------------------------------------------===//
// SoftmaxCrossEntropyOp
//===----------------------------------------------------------------------===//

LogicalResult SoftmaxCrossEntropyOp::verify() {
  int64_t batch = getLogits().getType().getDimSize(0);
  int64_t labels = getLabels().getType().getDimSize(0);
  if (!isDynamic(batch) && !isDynamic(labels) && batch != labels)
    return emitOpError("has ") << batch << " rows of logits but " << labels
                               << " labels";
  float smoothing = getLabelSmoothing().convertToFloat();
  if (smoothing < 0.0f || smoothing >= 1.0f)
    return emitOpError("label_smoothing must be in [0, 1), got ") << smoothing;
  return success();
}

#define GET_OP_CLASSES
#include "dialects/Kiln/IR/KilnOps.cpp.inc"
