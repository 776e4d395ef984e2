//===- EvalLayers.cpp - Forward ops: layers and the loss
//-------------------===//

#include "compiler/Interpreter/Evaluators.h"

#include "dialects/Kiln/IR/KilnOps.h"
#include "kiln/ref/ref.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

namespace kiln::interp::detail {

namespace {

/// The input element (flat index) that wins each max-pool window, found as
/// the kernel does: the first maximum in row-major scan order; padding
/// never wins.
std::vector<int64_t> maxPoolWinners(const ref::Tensor &x,
                                    const ref::Pool2dAttrs &a,
                                    const ref::Shape &yShape) {
  std::vector<int64_t> winners;
  winners.reserve(static_cast<size_t>(ref::numElements(yShape)));
  for (int64_t n = 0; n < yShape[0]; ++n)
    for (int64_t oh = 0; oh < yShape[1]; ++oh)
      for (int64_t ow = 0; ow < yShape[2]; ++ow)
        for (int64_t c = 0; c < yShape[3]; ++c) {
          int64_t best = -1;
          for (int64_t kh = 0; kh < a.window[0]; ++kh)
            for (int64_t kw = 0; kw < a.window[1]; ++kw) {
              int64_t ih = oh * a.strides[0] - a.padding[0] + kh;
              int64_t iw = ow * a.strides[1] - a.padding[2] + kw;
              if (ih < 0 || ih >= x.dim(1) || iw < 0 || iw >= x.dim(2))
                continue;
              int64_t at = ((n * x.dim(1) + ih) * x.dim(2) + iw) * x.dim(3) + c;
              if (best < 0 || x[at] > x[best])
                best = at;
            }
          winners.push_back(best);
        }
  return winners;
}

/// The convolution of a conv2d or a fused convolution, in f32, with the
/// groups and the bias of a conv2d (the fused ones have neither).
template <typename ConvOp>
FailureOr<ref::Tensor> convolve(ConvOp op, EvalContext &ctx,
                                int64_t groups = 1, Value bias = {}) {
  ref::Tensor x = ctx.get(op.getInput()).toRef();
  ref::Tensor w = ctx.get(op.getFilter()).toRef();
  ref::Conv2dAttrs attrs =
      convAttrs(op.getStrides(), op.getPadding(), op.getDilations(), groups);
  ref::Shape yShape;
  if (failed(ctx.check(op,
                       ref::inferConv2dShape(x.shape, w.shape, attrs, yShape))))
    return failure();
  if (!bias)
    return ref::conv2d(x, w, attrs);
  ref::Tensor b = ctx.get(bias).toRef();
  if (failed(ctx.checkSameShape(op, "the bias", b.shape, {yShape[3]})))
    return failure();
  return ref::conv2d(x, w, attrs, &b);
}

LogicalResult evalConv(Conv2DOp op, EvalContext &ctx) {
  FailureOr<ref::Tensor> y =
      convolve(op, ctx, int64_t(op.getGroups()), op.getBias());
  if (failed(y))
    return failure();
  ctx.setFloat(op.getOutput(), std::move(*y));
  return success();
}

/// A training batch norm of `x` (a kiln.batch_norm_train's input, or the
/// rounded convolution output of a kiln.fused_conv2d_batch_norm_train).
template <typename TrainOp>
LogicalResult evalBatchNormTrainOf(TrainOp op, const ref::Tensor &x,
                                   EvalContext &ctx) {
  ref::Tensor gamma = ctx.get(op.getScale()).toRef();
  ref::Tensor beta = ctx.get(op.getOffset()).toRef();
  ref::Tensor mean = ctx.get(op.getRunningMean()).toRef();
  ref::Tensor var = ctx.get(op.getRunningVar()).toRef();
  if (failed(ctx.check(op, ref::checkBatchNormShapes(
                               x.shape, {&gamma, &beta, &mean, &var}))))
    return failure();
  ref::BatchNormTrainResult r = ref::batchNormTrain(
      x, gamma, beta, mean, var, op.getEpsilon().convertToFloat(),
      op.getMomentum().convertToFloat());
  // A fused residual, then a fused rectifier (--kiln-fuse), apply to the
  // normalized output before it is rounded to its element type.
  if (Value residual = op.getResidual()) {
    ref::Tensor add = ctx.get(residual).toRef();
    if (add.shape != r.y.shape)
      return op.emitOpError("residual shape differs from the input's");
    for (int64_t i = 0; i < r.y.size(); ++i)
      r.y[i] += add[i];
  }
  ctx.setFloat(op.getOutput(), op.getRelu() ? ref::relu(r.y) : std::move(r.y));
  ctx.setFloat(op.getBatchMean(), std::move(r.batchMean));
  ctx.setFloat(op.getBatchVar(), std::move(r.batchVar));
  ctx.setFloat(op.getNewRunningMean(), std::move(r.newRunningMean));
  ctx.setFloat(op.getNewRunningVar(), std::move(r.newRunningVar));
  return success();
}

LogicalResult evalBatchNormTrain(BatchNormTrainOp op, EvalContext &ctx) {
  return evalBatchNormTrainOf(op, ctx.get(op.getInput()).toRef(), ctx);
}

/// The convolution, rounded to its element type as stored, then the batch
/// norm of that (the op's definition).
LogicalResult evalFusedConvBatchNormTrain(FusedConv2DBatchNormTrainOp op,
                                          EvalContext &ctx) {
  FailureOr<ref::Tensor> conv = convolve(op, ctx);
  if (failed(conv))
    return failure();
  ctx.setFloat(op.getConvOutput(), std::move(*conv));
  return evalBatchNormTrainOf(op, ctx.get(op.getConvOutput()).toRef(), ctx);
}

LogicalResult evalBatchNormInference(BatchNormInferenceOp op,
                                     EvalContext &ctx) {
  ref::Tensor x = ctx.get(op.getInput()).toRef();
  ref::Tensor gamma = ctx.get(op.getScale()).toRef();
  ref::Tensor beta = ctx.get(op.getOffset()).toRef();
  ref::Tensor mean = ctx.get(op.getMean()).toRef();
  ref::Tensor var = ctx.get(op.getVariance()).toRef();
  if (failed(ctx.check(op, ref::checkBatchNormShapes(
                               x.shape, {&gamma, &beta, &mean, &var}))))
    return failure();
  ref::Tensor y = ref::batchNormInference(x, gamma, beta, mean, var,
                                          op.getEpsilon().convertToFloat());
  ctx.setFloat(op.getOutput(), op.getRelu() ? ref::relu(y) : std::move(y));
  return success();
}

/// Convolution, batch norm, residual and relu in f32, rounded to the
/// element type once, at the end (the op's definition).
LogicalResult evalFusedConvBatchNorm(FusedConv2DBatchNormOp op,
                                     EvalContext &ctx) {
  FailureOr<ref::Tensor> conv = convolve(op, ctx);
  if (failed(conv))
    return failure();
  ref::Tensor gamma = ctx.get(op.getScale()).toRef();
  ref::Tensor beta = ctx.get(op.getOffset()).toRef();
  ref::Tensor mean = ctx.get(op.getMean()).toRef();
  ref::Tensor var = ctx.get(op.getVariance()).toRef();
  if (failed(ctx.check(op, ref::checkBatchNormShapes(
                               conv->shape, {&gamma, &beta, &mean, &var}))))
    return failure();
  ref::Tensor y = ref::batchNormInference(*conv, gamma, beta, mean, var,
                                          op.getEpsilon().convertToFloat());
  if (Value residual = op.getResidual()) {
    const HostTensor &r = ctx.get(residual);
    if (failed(ctx.checkSameShape(op, "the residual", r.shape, y.shape)))
      return failure();
    y = ref::add(y, r.toRef());
  }
  ctx.setFloat(op.getOutput(), op.getRelu() ? ref::relu(y) : std::move(y));
  return success();
}

LogicalResult evalRelu(ReluOp op, EvalContext &ctx) {
  const HostTensor &x = ctx.get(op.getInput());
  if (!ctx.options.frozenKinks && !ctx.options.recordKinks) {
    ctx.setFloat(op.getOutput(), ref::relu(x.toRef()));
    return success();
  }
  FailureOr<std::vector<uint8_t>> mask = ctx.nextReluMask(op, x.floats);
  if (failed(mask))
    return failure();
  ref::Tensor y(x.shape);
  for (size_t i = 0; i < y.data.size(); ++i)
    y.data[i] = (*mask)[i] ? x.floats[i] : 0.0f;
  ctx.setFloat(op.getOutput(), std::move(y));
  return success();
}

LogicalResult evalActivation(ActivationOp op, EvalContext &ctx) {
  const HostTensor &x = ctx.get(op.getInput());
  ctx.setFloat(op.getOutput(),
               ref::activation(activationOf(op.getKind()), x.toRef()));
  return success();
}

LogicalResult evalBroadcastBinary(BroadcastBinaryOp op, EvalContext &ctx) {
  ref::Tensor a = ctx.get(op.getLhs()).toRef();
  ref::Tensor b = ctx.get(op.getRhs()).toRef();
  ref::Shape shape;
  if (failed(ctx.check(op, ref::inferBroadcast(a.shape, b.shape, shape))))
    return failure();
  ctx.setFloat(op.getOutput(),
               ref::broadcastBinary(binaryKindOf(op.getKind()), a, b));
  return success();
}

LogicalResult evalBiasAdd(BiasAddOp op, EvalContext &ctx) {
  ref::Tensor x = ctx.get(op.getInput()).toRef();
  ref::Tensor b = ctx.get(op.getBias()).toRef();
  if (failed(ctx.checkSameShape(op, "the bias", b.shape,
                                {x.shape.empty() ? 0 : x.shape.back()})))
    return failure();
  ctx.setFloat(op.getOutput(), ref::biasAdd(x, b));
  return success();
}

LogicalResult evalDropout(DropoutOp op, EvalContext &ctx) {
  const HostTensor &x = ctx.get(op.getInput());
  const HostTensor &step = ctx.get(op.getStep());
  if (step.ints[0] < 0)
    return ctx.error(op) << "step " << step.ints[0] << " is negative";
  ref::DropoutAttrs attrs;
  attrs.ratio = op.getRatio().convertToFloat();
  attrs.seed = static_cast<uint64_t>(op.getSeed());
  attrs.step = static_cast<uint64_t>(step.ints[0]);
  attrs.stream = static_cast<uint32_t>(op.getStream());
  if (failed(ctx.check(op, ref::checkDropout(attrs))))
    return failure();
  ctx.setFloat(op.getOutput(), ref::dropout(x.toRef(), attrs));
  return success();
}

LogicalResult evalAdd(AddOp op, EvalContext &ctx) {
  const HostTensor &a = ctx.get(op.getLhs());
  const HostTensor &b = ctx.get(op.getRhs());
  if (failed(ctx.checkSameShape(op, "the right operand", b.shape, a.shape)))
    return failure();
  ctx.setFloat(op.getOutput(), ref::add(a.toRef(), b.toRef()));
  return success();
}

template <typename PoolOp> LogicalResult evalPool(PoolOp op, EvalContext &ctx) {
  ref::Tensor x = ctx.get(op.getInput()).toRef();
  ref::Pool2dAttrs attrs = poolAttrs(op);
  ref::Shape yShape;
  if (failed(ctx.check(op, ref::inferPool2dShape(x.shape, attrs, yShape))))
    return failure();
  if constexpr (std::is_same_v<PoolOp, MaxPoolOp>) {
    if (!ctx.options.frozenKinks && !ctx.options.recordKinks) {
      ctx.setFloat(op.getOutput(), ref::maxPool(x, attrs));
      return success();
    }
    FailureOr<std::vector<int64_t>> winners =
        ctx.nextPoolWinners(op, maxPoolWinners(x, attrs, yShape));
    if (failed(winners))
      return failure();
    ref::Tensor y(yShape);
    for (size_t i = 0; i < y.data.size(); ++i)
      y.data[i] = x.data[static_cast<size_t>((*winners)[i])];
    ctx.setFloat(op.getOutput(), std::move(y));
  } else {
    ctx.setFloat(op.getOutput(), ref::avgPool(x, attrs));
  }
  return success();
}

LogicalResult evalGlobalAvgPool(GlobalAvgPoolOp op, EvalContext &ctx) {
  ref::Tensor x = ctx.get(op.getInput()).toRef();
  if (x.dim(1) * x.dim(2) == 0)
    return ctx.error(op) << "cannot average over an empty "
                         << ref::shapeToString(x.shape) << " input";
  ctx.setFloat(op.getOutput(), ref::globalAvgPool(x));
  return success();
}

LogicalResult evalDense(DenseOp op, EvalContext &ctx) {
  ref::Tensor x = ctx.get(op.getInput()).toRef();
  ref::Tensor w = ctx.get(op.getWeight()).toRef();
  ref::Tensor bias;
  if (op.getBias())
    bias = ctx.get(op.getBias()).toRef();
  ref::Shape yShape;
  if (failed(ctx.check(op, ref::inferDenseShape(
                               x.shape, w.shape,
                               op.getBias() ? &bias.shape : nullptr, yShape))))
    return failure();
  ctx.setFloat(op.getOutput(),
               op.getBias() ? ref::dense(x, w, bias) : ref::dense(x, w));
  return success();
}

LogicalResult evalReshape(ReshapeOp op, EvalContext &ctx) {
  const HostTensor &x = ctx.get(op.getInput());
  // The one dynamic dimension (the batch) takes whatever the static ones
  // leave of the element count.
  auto type = cast<RankedTensorType>(op.getOutput().getType());
  int64_t staticProduct = 1;
  for (int64_t d : type.getShape())
    if (!ShapedType::isDynamic(d))
      staticProduct *= d;
  int64_t batch = staticProduct == 0 ? 0 : x.numElements() / staticProduct;
  ref::Shape shape = resolveShape(type, batch);
  if (failed(ctx.check(op, ref::checkReshape(x.shape, shape))))
    return failure();
  HostTensor y = x;
  y.shape = shape;
  ctx.set(op.getOutput(), std::move(y));
  return success();
}

LogicalResult evalConcat(ConcatOp op, EvalContext &ctx) {
  std::vector<ref::Tensor> inputs;
  std::vector<ref::Shape> shapes;
  for (Value input : op.getInputs()) {
    inputs.push_back(ctx.get(input).toRef());
    shapes.push_back(inputs.back().shape);
  }
  ref::Shape shape;
  int64_t axis = int64_t(op.getAxis());
  if (failed(ctx.check(op, ref::inferConcatShape(shapes, axis, shape))))
    return failure();
  ctx.setFloat(op.getOutput(), ref::concat(inputs, axis));
  return success();
}

LogicalResult evalSlice(SliceOp op, EvalContext &ctx) {
  ref::Tensor x = ctx.get(op.getInput()).toRef();
  int64_t axis = int64_t(op.getAxis()), start = int64_t(op.getStart()),
          size = int64_t(op.getSize());
  if (failed(ctx.check(op, ref::checkSlice(x.shape, axis, start, size))))
    return failure();
  ctx.setFloat(op.getOutput(), ref::slice(x, axis, start, size));
  return success();
}

LogicalResult evalChannelShuffle(ChannelShuffleOp op, EvalContext &ctx) {
  ref::Tensor x = ctx.get(op.getInput()).toRef();
  int64_t groups = int64_t(op.getGroups());
  if (failed(ctx.check(op, ref::checkChannelShuffle(x.shape, groups))))
    return failure();
  ctx.setFloat(op.getOutput(), ref::channelShuffle(x, groups));
  return success();
}

LogicalResult evalTranspose(TransposeOp op, EvalContext &ctx) {
  ref::Tensor x = ctx.get(op.getInput()).toRef();
  std::vector<int64_t> permutation(op.getPermutation().begin(),
                                   op.getPermutation().end());
  if (failed(ctx.check(op, ref::checkTranspose(x.shape, permutation))))
    return failure();
  ctx.setFloat(op.getOutput(), ref::transpose(x, permutation));
  return success();
}

LogicalResult evalCast(CastOp op, EvalContext &ctx) {
  // The walker rounds the result if its type is bf16; widening is exact.
  ctx.setFloat(op.getOutput(), ctx.get(op.getInput()).toRef());
  return success();
}

LogicalResult evalSoftmaxCrossEntropy(SoftmaxCrossEntropyOp op,
                                      EvalContext &ctx) {
  ref::Tensor logits = ctx.get(op.getLogits()).toRef();
  std::vector<int32_t> labels = labelsOf(ctx.get(op.getLabels()));
  float smoothing = op.getLabelSmoothing().convertToFloat();
  if (failed(ctx.check(
          op, ref::checkSoftmaxCrossEntropy(logits, labels, smoothing))))
    return failure();
  double loss = 0.0;
  if (failed(ctx.check(
          op, ref::softmaxCrossEntropy(logits, labels, smoothing, loss))))
    return failure();
  HostTensor result = HostTensor::zeros(DType::F32, {});
  result.floats[0] = static_cast<float>(loss);
  result.wide = loss;
  ctx.set(op.getLoss(), std::move(result));
  return success();
}

} // namespace

std::optional<LogicalResult> evaluateLayerOp(Operation *op, EvalContext &ctx) {
  return llvm::TypeSwitch<Operation *, std::optional<LogicalResult>>(op)
      .Case([&](Conv2DOp o) { return evalConv(o, ctx); })
      .Case([&](BatchNormTrainOp o) { return evalBatchNormTrain(o, ctx); })
      .Case([&](BatchNormInferenceOp o) {
        return evalBatchNormInference(o, ctx);
      })
      .Case([&](FusedConv2DBatchNormOp o) {
        return evalFusedConvBatchNorm(o, ctx);
      })
      .Case([&](FusedConv2DBatchNormTrainOp o) {
        return evalFusedConvBatchNormTrain(o, ctx);
      })
      .Case([&](ReluOp o) { return evalRelu(o, ctx); })
      .Case([&](ActivationOp o) { return evalActivation(o, ctx); })
      .Case([&](DropoutOp o) { return evalDropout(o, ctx); })
      .Case([&](AddOp o) { return evalAdd(o, ctx); })
      .Case([&](BiasAddOp o) { return evalBiasAdd(o, ctx); })
      .Case([&](BroadcastBinaryOp o) { return evalBroadcastBinary(o, ctx); })
      .Case([&](MaxPoolOp o) { return evalPool(o, ctx); })
      .Case([&](AvgPoolOp o) { return evalPool(o, ctx); })
      .Case([&](GlobalAvgPoolOp o) { return evalGlobalAvgPool(o, ctx); })
      .Case([&](DenseOp o) { return evalDense(o, ctx); })
      .Case([&](ReshapeOp o) { return evalReshape(o, ctx); })
      .Case([&](CastOp o) { return evalCast(o, ctx); })
      .Case([&](ConcatOp o) { return evalConcat(o, ctx); })
      .Case([&](SliceOp o) { return evalSlice(o, ctx); })
      .Case([&](ChannelShuffleOp o) { return evalChannelShuffle(o, ctx); })
      .Case([&](TransposeOp o) { return evalTranspose(o, ctx); })
      .Case([&](SoftmaxCrossEntropyOp o) {
        return evalSoftmaxCrossEntropy(o, ctx);
      })
      .Default([](Operation *) { return std::nullopt; });
}

} // namespace kiln::interp::detail
