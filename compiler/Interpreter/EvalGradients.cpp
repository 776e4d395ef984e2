//===- EvalGradients.cpp - Backward ops built by --kiln-autodiff
//-----------===//
//
// Each backward op gets the forward shapes it needs from its result type
// (batch taken from the incoming gradient) and checks that the incoming
// gradient has the shape the forward op would have produced.
//
//===----------------------------------------------------------------------===//

#include "compiler/Interpreter/Evaluators.h"

#include "dialects/Kiln/IR/KilnOps.h"
#include "kiln/ref/ref.h"
#include "llvm/ADT/TypeSwitch.h"

#include <optional>

using namespace mlir;

namespace kiln::interp::detail {

namespace {

LogicalResult evalConvBackwardData(Conv2DBackwardDataOp op, EvalContext &ctx) {
  ref::Tensor dy = ctx.get(op.getOutputGrad()).toRef();
  ref::Tensor w = ctx.get(op.getFilter()).toRef();
  ref::Conv2dAttrs attrs =
      convAttrs(op.getStrides(), op.getPadding(), op.getDilations(),
                int64_t(op.getGroups()));
  ref::Shape xShape = resolveShape(op.getInputGrad().getType(), dy.dim(0));
  ref::Shape yShape;
  if (failed(ctx.check(
          op, ref::inferConv2dShape(xShape, w.shape, attrs, yShape))) ||
      failed(ctx.checkSameShape(op, "the output gradient", dy.shape, yShape)))
    return failure();
  ctx.setFloat(op.getInputGrad(),
               ref::conv2dBackwardData(dy, w, xShape, attrs));
  return success();
}

LogicalResult evalConvBackwardFilter(Conv2DBackwardFilterOp op,
                                     EvalContext &ctx) {
  ref::Tensor x = ctx.get(op.getInput()).toRef();
  ref::Tensor dy = ctx.get(op.getOutputGrad()).toRef();
  ref::Conv2dAttrs attrs =
      convAttrs(op.getStrides(), op.getPadding(), op.getDilations(),
                int64_t(op.getGroups()));
  ref::Shape wShape = resolveShape(op.getFilterGrad().getType(), 0);
  ref::Shape yShape;
  if (failed(ctx.check(
          op, ref::inferConv2dShape(x.shape, wShape, attrs, yShape))) ||
      failed(ctx.checkSameShape(op, "the output gradient", dy.shape, yShape)))
    return failure();
  ctx.setFloat(op.getFilterGrad(),
               ref::conv2dBackwardFilter(x, dy, wShape, attrs));
  return success();
}

LogicalResult evalBatchNormBackward(BatchNormBackwardOp op, EvalContext &ctx) {
  ref::Tensor dy = ctx.get(op.getOutputGrad()).toRef();
  ref::Tensor x = ctx.get(op.getInput()).toRef();
  ref::Tensor gamma = ctx.get(op.getScale()).toRef();
  ref::Tensor mean = ctx.get(op.getBatchMean()).toRef();
  ref::Tensor var = ctx.get(op.getBatchVar()).toRef();
  if (failed(ctx.check(
          op, ref::checkBatchNormShapes(x.shape, {&gamma, &mean, &var}))) ||
      failed(ctx.checkSameShape(op, "the output gradient", dy.shape, x.shape)))
    return failure();
  // A fused rectifier's gradient: dy masked where the forward's rectified
  // output, recomputed from x, is not positive.
  if (Value offset = op.getReluOffset()) {
    ref::Tensor beta = ctx.get(offset).toRef();
    if (failed(ctx.check(op, ref::checkBatchNormShapes(x.shape, {&beta}))))
      return failure();
    dy = ref::reluBackward(
        dy, ref::batchNormInference(x, gamma, beta, mean, var,
                                    op.getEpsilon().convertToFloat()));
  }
  ref::BatchNormGrads g = ref::batchNormBackward(
      dy, x, gamma, mean, var, op.getEpsilon().convertToFloat());
  ctx.setFloat(op.getInputGrad(), std::move(g.dx));
  ctx.setFloat(op.getScaleGrad(), std::move(g.dgamma));
  ctx.setFloat(op.getOffsetGrad(), std::move(g.dbeta));
  return success();
}

LogicalResult evalActivationBackward(ActivationBackwardOp op,
                                     EvalContext &ctx) {
  const HostTensor &dy = ctx.get(op.getOutputGrad());
  const HostTensor &x = ctx.get(op.getInput());
  if (failed(ctx.checkSameShape(op, "the output gradient", dy.shape, x.shape)))
    return failure();
  ctx.setFloat(op.getInputGrad(),
               ref::activationBackward(activationOf(op.getKind()), dy.toRef(),
                                       x.toRef()));
  return success();
}

LogicalResult evalBroadcastBinaryBackward(BroadcastBinaryBackwardOp op,
                                          EvalContext &ctx) {
  ref::Tensor dy = ctx.get(op.getOutputGrad()).toRef();
  std::optional<ref::Tensor> a, b;
  if (op.getLhs())
    a = ctx.get(op.getLhs()).toRef();
  if (op.getRhs())
    b = ctx.get(op.getRhs()).toRef();
  ref::Shape gradShape = resolveShape(op.getOperandGrad().getType(),
                                      dy.shape.empty() ? 1 : dy.dim(0));
  for (const std::optional<ref::Tensor> &t : {a, b})
    if (t && failed(ctx.check(op, ref::checkBroadcast(t->shape, dy.shape))))
      return failure();
  if (failed(ctx.check(op, ref::checkBroadcast(gradShape, dy.shape))))
    return failure();
  ctx.setFloat(op.getOperandGrad(),
               ref::broadcastBinaryBackward(
                   binaryKindOf(op.getKind()), op.getWrt() == BinaryOperand::Rhs,
                   dy, a ? &*a : nullptr, b ? &*b : nullptr, gradShape));
  return success();
}

LogicalResult evalBiasAddBackward(BiasAddBackwardOp op, EvalContext &ctx) {
  ctx.setFloat(op.getBiasGrad(),
               ref::biasAddBackward(ctx.get(op.getOutputGrad()).toRef()));
  return success();
}

LogicalResult evalSliceBackward(SliceBackwardOp op, EvalContext &ctx) {
  ref::Tensor dy = ctx.get(op.getOutputGrad()).toRef();
  int64_t axis = int64_t(op.getAxis()), start = int64_t(op.getStart()),
          inputSize = int64_t(op.getInputSize());
  ref::Shape xShape = dy.shape;
  if (axis < int64_t(xShape.size()))
    xShape[size_t(axis)] = inputSize;
  if (failed(ctx.check(op, ref::checkSlice(xShape, axis, start,
                                           axis < dy.rank() ? dy.dim(axis)
                                                            : 0))))
    return failure();
  ctx.setFloat(op.getInputGrad(),
               ref::sliceBackward(dy, axis, start, inputSize));
  return success();
}

LogicalResult evalReluBackward(ReluBackwardOp op, EvalContext &ctx) {
  const HostTensor &dy = ctx.get(op.getOutputGrad());
  const HostTensor &y = ctx.get(op.getOutput());
  if (failed(ctx.checkSameShape(op, "the output gradient", dy.shape, y.shape)))
    return failure();
  // The forward output is positive exactly where the input was.
  ctx.setFloat(op.getInputGrad(), ref::reluBackward(dy.toRef(), y.toRef()));
  return success();
}

LogicalResult evalMaxPoolBackward(MaxPoolBackwardOp op, EvalContext &ctx) {
  ref::Tensor dy = ctx.get(op.getOutputGrad()).toRef();
  ref::Tensor x = ctx.get(op.getInput()).toRef();
  ref::Pool2dAttrs attrs = poolAttrs(op);
  ref::Shape yShape;
  if (failed(ctx.check(op, ref::inferPool2dShape(x.shape, attrs, yShape))) ||
      failed(ctx.checkSameShape(op, "the output gradient", dy.shape, yShape)))
    return failure();
  ctx.setFloat(op.getInputGrad(), ref::maxPoolBackward(dy, x, attrs));
  return success();
}

LogicalResult evalAvgPoolBackward(AvgPoolBackwardOp op, EvalContext &ctx) {
  ref::Tensor dy = ctx.get(op.getOutputGrad()).toRef();
  ref::Pool2dAttrs attrs = poolAttrs(op);
  ref::Shape xShape = resolveShape(op.getInputGrad().getType(), dy.dim(0));
  ref::Shape yShape;
  if (failed(ctx.check(op, ref::inferPool2dShape(xShape, attrs, yShape))) ||
      failed(ctx.checkSameShape(op, "the output gradient", dy.shape, yShape)))
    return failure();
  ctx.setFloat(op.getInputGrad(), ref::avgPoolBackward(dy, xShape, attrs));
  return success();
}

LogicalResult evalGlobalAvgPoolBackward(GlobalAvgPoolBackwardOp op,
                                        EvalContext &ctx) {
  ref::Tensor dy = ctx.get(op.getOutputGrad()).toRef();
  ref::Shape xShape = resolveShape(op.getInputGrad().getType(), dy.dim(0));
  if (failed(ctx.checkSameShape(op, "the output gradient", dy.shape,
                                {xShape[0], xShape[3]})))
    return failure();
  if (xShape[1] * xShape[2] == 0)
    return ctx.error(op) << "cannot spread over an empty "
                         << ref::shapeToString(xShape) << " input";
  ctx.setFloat(op.getInputGrad(), ref::globalAvgPoolBackward(dy, xShape));
  return success();
}

LogicalResult evalMatmul(MatmulOp op, EvalContext &ctx) {
  const HostTensor &a = ctx.get(op.getLhs());
  const HostTensor &b = ctx.get(op.getRhs());
  bool ta = op.getTransposeLhs(), tb = op.getTransposeRhs();
  // op(a) is [m, k], op(b) is [k, n].
  int64_t m = ta ? a.shape[1] : a.shape[0], k = ta ? a.shape[0] : a.shape[1];
  int64_t kb = tb ? b.shape[1] : b.shape[0], n = tb ? b.shape[0] : b.shape[1];
  if (k != kb)
    return ctx.error(op) << "contracts " << k << " with " << kb
                         << " elements (operands "
                         << ref::shapeToString(a.shape) << " and "
                         << ref::shapeToString(b.shape) << ")";
  ref::Tensor y({m, n});
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      // Accumulated in double and rounded once, like every reference kernel.
      double sum = 0.0;
      for (int64_t p = 0; p < k; ++p) {
        float x =
            ta ? a.floats[p * a.shape[1] + i] : a.floats[i * a.shape[1] + p];
        float z =
            tb ? b.floats[j * b.shape[1] + p] : b.floats[p * b.shape[1] + j];
        sum += static_cast<double>(x) * z;
      }
      y.at(i, j) = static_cast<float>(sum);
    }
  ctx.setFloat(op.getOutput(), std::move(y));
  return success();
}

/// The sum of `x` over its leading dimension, accumulated in double.
ref::Tensor sumOverLeading(const HostTensor &x) {
  ref::Shape shape(x.shape.begin() + 1, x.shape.end());
  int64_t inner = ref::numElements(shape);
  std::vector<double> sums(static_cast<size_t>(inner), 0.0);
  for (int64_t i = 0; i < x.shape[0]; ++i)
    for (int64_t j = 0; j < inner; ++j)
      sums[j] += x.floats[i * inner + j];
  ref::Tensor y(shape);
  for (int64_t j = 0; j < inner; ++j)
    y[j] = static_cast<float>(sums[j]);
  return y;
}

LogicalResult evalReduceSum(ReduceSumOp op, EvalContext &ctx) {
  const HostTensor &x = ctx.get(op.getInput());
  if (x.shape.empty())
    return ctx.error(op) << "needs an operand of rank >= 1";
  ctx.setFloat(op.getOutput(), sumOverLeading(x));
  return success();
}

/// x^T dy and the column sums of dy, as the matmul and reduce_sum it fuses.
LogicalResult evalFusedDenseBackwardWeights(FusedDenseBackwardWeightsOp op,
                                            EvalContext &ctx) {
  const HostTensor &x = ctx.get(op.getInput());
  const HostTensor &dy = ctx.get(op.getOutputGrad());
  if (x.shape[0] != dy.shape[0])
    return ctx.error(op) << "input has " << x.shape[0]
                         << " rows but the output gradient " << dy.shape[0];
  int64_t n = x.shape[0], k = x.shape[1], m = dy.shape[1];
  ref::Tensor dw({k, m});
  for (int64_t i = 0; i < k; ++i)
    for (int64_t j = 0; j < m; ++j) {
      double sum = 0.0;
      for (int64_t p = 0; p < n; ++p)
        sum += static_cast<double>(x.floats[p * k + i]) * dy.floats[p * m + j];
      dw.at(i, j) = static_cast<float>(sum);
    }
  // Both before either is stored: storing may move the operands.
  ref::Tensor db = sumOverLeading(dy);
  ctx.setFloat(op.getWeightGrad(), std::move(dw));
  ctx.setFloat(op.getBiasGrad(), std::move(db));
  return success();
}

LogicalResult evalSoftmaxCrossEntropyBackward(SoftmaxCrossEntropyBackwardOp op,
                                              EvalContext &ctx) {
  const HostTensor &dloss = ctx.get(op.getLossGrad());
  ref::Tensor logits = ctx.get(op.getLogits()).toRef();
  std::vector<int32_t> labels = labelsOf(ctx.get(op.getLabels()));
  float smoothing = op.getLabelSmoothing().convertToFloat();
  ref::Tensor dlogits;
  if (failed(ctx.check(
          op, ref::checkSoftmaxCrossEntropy(logits, labels, smoothing))) ||
      failed(ctx.check(
          op, ref::softmaxCrossEntropyBackward(logits, labels, smoothing,
                                               dloss.floats[0], dlogits))))
    return failure();
  ctx.setFloat(op.getLogitsGrad(), std::move(dlogits));
  return success();
}

} // namespace

std::optional<LogicalResult> evaluateGradientOp(Operation *op,
                                                EvalContext &ctx) {
  return llvm::TypeSwitch<Operation *, std::optional<LogicalResult>>(op)
      .Case(
          [&](Conv2DBackwardDataOp o) { return evalConvBackwardData(o, ctx); })
      .Case([&](Conv2DBackwardFilterOp o) {
        return evalConvBackwardFilter(o, ctx);
      })
      .Case(
          [&](BatchNormBackwardOp o) { return evalBatchNormBackward(o, ctx); })
      .Case([&](ReluBackwardOp o) { return evalReluBackward(o, ctx); })
      .Case([&](SliceBackwardOp o) { return evalSliceBackward(o, ctx); })
      .Case([&](BiasAddBackwardOp o) { return evalBiasAddBackward(o, ctx); })
      .Case([&](BroadcastBinaryBackwardOp o) {
        return evalBroadcastBinaryBackward(o, ctx);
      })
      .Case([&](ActivationBackwardOp o) {
        return evalActivationBackward(o, ctx);
      })
      .Case([&](MaxPoolBackwardOp o) { return evalMaxPoolBackward(o, ctx); })
      .Case([&](AvgPoolBackwardOp o) { return evalAvgPoolBackward(o, ctx); })
      .Case([&](GlobalAvgPoolBackwardOp o) {
        return evalGlobalAvgPoolBackward(o, ctx);
      })
      .Case([&](MatmulOp o) { return evalMatmul(o, ctx); })
      .Case([&](ReduceSumOp o) { return evalReduceSum(o, ctx); })
      .Case([&](FusedDenseBackwardWeightsOp o) {
        return evalFusedDenseBackwardWeights(o, ctx);
      })
      .Case([&](SoftmaxCrossEntropyBackwardOp o) {
        return evalSoftmaxCrossEntropyBackward(o, ctx);
      })
      .Default([](Operation *) { return std::nullopt; });
}

} // namespace kiln::interp::detail
