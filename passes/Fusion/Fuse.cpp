//===- Fuse.cpp - Fusion patterns of the training step --------------------===//

#include "passes/Fusion/Fuse.h"

#include "dialects/Kiln/IR/KilnOps.h"
#include "kiln/rt/kernel_rules.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "passes/Passes.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_KILNFUSE
#include "passes/Passes.h.inc"

namespace {
/// relu(batch_norm(x).output) -> batch_norm(x) relu, when the relu is the
/// only user of the normalized output.
template <typename BatchNormOp>
struct FuseBatchNormRelu : OpRewritePattern<ReluOp> {
  using OpRewritePattern<ReluOp>::OpRewritePattern;
  LogicalResult matchAndRewrite(ReluOp relu,
                                PatternRewriter &rewriter) const override {
    auto bn = relu.getInput().template getDefiningOp<BatchNormOp>();
    if (!bn || bn.getRelu() || !bn.getOutput().hasOneUse())
      return failure();
    rewriter.modifyOpInPlace(bn, [&] { bn.setRelu(true); });
    rewriter.replaceOp(relu, bn.getOutput());
    return success();
  }
};

/// add(batch_norm_train(x).output, r) -> batch_norm_train(x) residual r,
/// when the add is the only user of the normalized output and r is defined
/// before the batch norm (which keeps its place): the residual connection
/// of a ResNet block, added in the normalizing pass. Of a downsampling
/// block's two batch norms, the later one takes the earlier one's output.
struct FuseResidualIntoBatchNormTrain : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AddOp add,
                                PatternRewriter &rewriter) const override {
    for (unsigned i = 0; i < 2; ++i) {
      auto bn = add->getOperand(i).getDefiningOp<BatchNormTrainOp>();
      Value residual = add->getOperand(1 - i);
      if (!bn || bn.getRelu() || bn.getResidual() ||
          !bn.getOutput().hasOneUse() ||
          residual.getType() != bn.getOutput().getType() ||
          add.getOutput().getType() != bn.getOutput().getType())
        continue;
      Operation *def = residual.getDefiningOp();
      bool definedBefore =
          def ? def->getBlock() == bn->getBlock() && def->isBeforeInBlock(bn)
              : residual.getParentBlock() == bn->getBlock();
      if (!definedBefore)
        continue;
      rewriter.setInsertionPoint(bn);
      auto fused = BatchNormTrainOp::create(
          rewriter, bn.getLoc(), bn.getInput(), bn.getScale(), bn.getOffset(),
          bn.getRunningMean(), bn.getRunningVar(), residual,
          bn.getEpsilonAttr(), bn.getMomentumAttr(), UnitAttr());
      rewriter.replaceOp(add, fused.getOutput());
      rewriter.replaceOp(bn, fused.getResults());
      return success();
    }
    return failure();
  }
};

/// batch_norm_backward(relu_backward(dy, y), x, ...) -> batch_norm_backward(dy,
/// x, ..., relu_offset beta), when y is batch_norm_train(x) of the same
/// statistics, rectified (by its relu flag or a relu op) or not, without a
/// residual: the mask is recomputed from x while the gradient is read, and y
/// need not be read.
struct FuseReluBackwardIntoBatchNormBackward
    : OpRewritePattern<BatchNormBackwardOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(BatchNormBackwardOp bn,
                                PatternRewriter &rewriter) const override {
    auto mask = bn.getOutputGrad().getDefiningOp<ReluBackwardOp>();
    if (!mask || bn.getReluOffset() || !mask->hasOneUse())
      return failure();
    // y > 0 exactly where the normalized value is, rectified or not.
    Value y = mask.getOutput();
    if (auto relu = y.getDefiningOp<ReluOp>())
      y = relu.getInput();
    auto forward = y.getDefiningOp<BatchNormTrainOp>();
    if (!forward || forward.getOutput() != y || forward.getResidual() ||
        forward.getInput() != bn.getInput() ||
        forward.getScale() != bn.getScale() ||
        forward.getBatchMean() != bn.getBatchMean() ||
        forward.getBatchVar() != bn.getBatchVar() ||
        forward.getEpsilon() != bn.getEpsilon())
      return failure();
    rewriter.replaceOpWithNewOp<BatchNormBackwardOp>(
        bn, mask.getOutputGrad(), bn.getInput(), bn.getScale(),
        bn.getBatchMean(), bn.getBatchVar(), forward.getOffset(),
        bn.getEpsilonAttr());
    rewriter.eraseOp(mask);
    return success();
  }
};

/// batch_norm_inference(conv2d(x, w)) -> fused_conv2d_batch_norm, when the
/// batch norm is the convolution's only user: fixed statistics make the
/// batch norm a per-channel scale and shift of the convolution's output.
struct FuseConvBatchNormInference : OpRewritePattern<BatchNormInferenceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(BatchNormInferenceOp bn,
                                PatternRewriter &rewriter) const override {
    auto conv = bn.getInput().getDefiningOp<Conv2DOp>();
    if (!conv || !conv->hasOneUse() ||
        conv.getOutput().getType() != bn.getOutput().getType())
      return failure();
    rewriter.replaceOpWithNewOp<FusedConv2DBatchNormOp>(
        bn, bn.getOutput().getType(), conv.getInput(), conv.getFilter(),
        bn.getScale(), bn.getOffset(), bn.getMean(), bn.getVariance(),
        /*residual=*/Value(), conv.getStridesAttr(), conv.getPaddingAttr(),
        conv.getDilationsAttr(), bn.getEpsilonAttr(), bn.getReluAttr());
    rewriter.eraseOp(conv);
    return success();
  }
};

/// Whether the x86 runtime runs `conv` on its fused-tile Winograd kernel,
/// the one kernel that takes an output's statistics as it writes it (the
/// runtime's rule, kiln/rt/kernel_rules.h). After any other kernel the
/// runtime reads the output once more for the statistics, which the batch
/// norm's own pass does faster (Fashion-MNIST ResNet-20: the stem, strided
/// and 1x1 convolutions 0.1-0.3 ms slower per call each).
static bool kernelTakesStatistics(Conv2DOp conv) {
  RankedTensorType x = conv.getInput().getType(),
                   y = conv.getOutput().getType();
  ArrayRef<int64_t> w = conv.getFilter().getType().getShape();
  ArrayRef<int64_t> strides = conv.getStrides(),
                    dilations = conv.getDilations(),
                    padding = conv.getPadding();
  rt::ConvGeometry geometry;
  geometry.kernelH = w[0];
  geometry.kernelW = w[1];
  geometry.strideH = strides[0];
  geometry.strideW = strides[1];
  geometry.dilationH = dilations[0];
  geometry.dilationW = dilations[1];
  geometry.padTop = padding[0];
  geometry.padBottom = padding[1];
  geometry.padLeft = padding[2];
  geometry.padRight = padding[3];
  geometry.inputChannels = w[2];
  geometry.outputChannels = w[3];
  if (!ShapedType::isDynamic(y.getDimSize(1)) &&
      !ShapedType::isDynamic(y.getDimSize(2)))
    geometry.outputPixels = y.getDimSize(1) * y.getDimSize(2);
  return rt::fusedTileWinogradApplies(rt::ConvPass::Forward, geometry,
                                      x.getElementType().isBF16());
}

/// batch_norm_train(conv2d(x, w)) -> fused_conv2d_batch_norm_train at the
/// batch norm's place, residual and relu included, when the convolution's
/// kernel takes the batch statistics as it writes (kernelTakesStatistics)
/// and every other reader of its output (the batch-norm backward) comes
/// after the batch norm.
struct FuseConvBatchNormTrain : OpRewritePattern<BatchNormTrainOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(BatchNormTrainOp bn,
                                PatternRewriter &rewriter) const override {
    auto conv = bn.getInput().getDefiningOp<Conv2DOp>();
    if (!conv || conv->getBlock() != bn->getBlock() ||
        !kernelTakesStatistics(conv))
      return failure();
    for (Operation *user : conv->getUsers())
      if (user != bn &&
          (user->getBlock() != bn->getBlock() || !bn->isBeforeInBlock(user)))
        return failure();
    rewriter.setInsertionPoint(bn);
    // The convolution's location: a profile by model line keeps the
    // convolution, most of the op's time, on its own line.
    auto fused = FusedConv2DBatchNormTrainOp::create(
        rewriter, conv.getLoc(), conv.getOutput().getType(),
        bn.getOutput().getType(), bn.getBatchMean().getType(),
        bn.getBatchVar().getType(), bn.getNewRunningMean().getType(),
        bn.getNewRunningVar().getType(), conv.getInput(), conv.getFilter(),
        bn.getScale(), bn.getOffset(), bn.getRunningMean(), bn.getRunningVar(),
        bn.getResidual(), conv.getStridesAttr(), conv.getPaddingAttr(),
        conv.getDilationsAttr(), bn.getEpsilonAttr(), bn.getMomentumAttr(),
        bn.getReluAttr());
    rewriter.replaceOp(bn, fused->getResults().drop_front());
    rewriter.replaceOp(conv, fused.getConvOutput());
    return success();
  }
};

/// The fused convolution whose output `value` is, if nothing else reads that
/// output and it has neither a residual nor a relu yet (the order of the
/// fused op is conv, batch norm, residual, relu).
static FusedConv2DBatchNormOp openFusedConv(Value value) {
  auto fused = value.getDefiningOp<FusedConv2DBatchNormOp>();
  if (!fused || !fused->hasOneUse() || fused.getRelu())
    return nullptr;
  return fused;
}

/// add(fused_conv2d_batch_norm(...), r) -> fused_conv2d_batch_norm(...)
/// residual r: the residual connection of a ResNet block.
struct FuseResidualIntoConv : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AddOp add,
                                PatternRewriter &rewriter) const override {
    for (unsigned i = 0; i < 2; ++i) {
      FusedConv2DBatchNormOp fused = openFusedConv(add->getOperand(i));
      Value residual = add->getOperand(1 - i);
      if (!fused || fused.getResidual() ||
          residual.getType() != add.getOutput().getType() ||
          fused.getOutput().getType() != add.getOutput().getType())
        continue;
      // The add's place: the residual is defined before it.
      rewriter.setInsertionPoint(add);
      auto merged = FusedConv2DBatchNormOp::create(
          rewriter, fused.getLoc(), add.getOutput().getType(), fused.getInput(),
          fused.getFilter(), fused.getScale(), fused.getOffset(),
          fused.getMean(), fused.getVariance(), residual,
          fused.getStridesAttr(), fused.getPaddingAttr(),
          fused.getDilationsAttr(), fused.getEpsilonAttr(), UnitAttr());
      rewriter.replaceOp(add, merged.getOutput());
      rewriter.eraseOp(fused);
      return success();
    }
    return failure();
  }
};

/// relu(fused_conv2d_batch_norm(...)) -> fused_conv2d_batch_norm(...) relu.
struct FuseReluIntoConv : OpRewritePattern<ReluOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReluOp relu,
                                PatternRewriter &rewriter) const override {
    FusedConv2DBatchNormOp fused = openFusedConv(relu.getInput());
    if (!fused)
      return failure();
    rewriter.modifyOpInPlace(
        fused, [&] { fused.setReluAttr(rewriter.getUnitAttr()); });
    rewriter.replaceOp(relu, fused.getOutput());
    return success();
  }
};

/// matmul(x, dy) transpose_lhs and reduce_sum(dy) -> one
/// fused_dense_backward_weights: a dense layer's weight and bias gradients,
/// which both read its output gradient. The fused op takes the place of the
/// earlier of the two, where x must already be defined.
struct FuseDenseWeightAndBiasGradients : OpRewritePattern<ReduceSumOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReduceSumOp sum,
                                PatternRewriter &rewriter) const override {
    Value dy = sum.getInput();
    auto dyType = dyn_cast<RankedTensorType>(dy.getType());
    if (!dyType || dyType.getRank() != 2)
      return failure();
    for (Operation *user : dy.getUsers()) {
      auto matmul = dyn_cast<MatmulOp>(user);
      if (!matmul || matmul.getRhs() != dy || !matmul.getTransposeLhs() ||
          matmul.getTransposeRhs() || matmul->getBlock() != sum->getBlock() ||
          matmul.getOutput().getType().getElementType() !=
              dyType.getElementType() ||
          matmul.getLhs().getType().getElementType() != dyType.getElementType())
        continue;
      Operation *first = matmul->isBeforeInBlock(sum) ? matmul.getOperation()
                                                      : sum.getOperation();
      Operation *x = matmul.getLhs().getDefiningOp();
      if (x && x->getBlock() == first->getBlock() && !x->isBeforeInBlock(first))
        continue;
      rewriter.setInsertionPoint(first);
      auto fused = FusedDenseBackwardWeightsOp::create(
          rewriter, matmul.getLoc(), matmul.getOutput().getType(),
          sum.getOutput().getType(), matmul.getLhs(), dy);
      rewriter.replaceOp(matmul, fused.getWeightGrad());
      rewriter.replaceOp(sum, fused.getBiasGrad());
      return success();
    }
    return failure();
  }
};

/// Whether `op` computes elementwise over one shape: an op implementing
/// ElementwiseOpInterface, or a chain already fused.
static bool isElementwise(Operation *op) {
  return op && (isa<FusedElementwiseOp>(op) ||
                (isa<ElementwiseOpInterface>(op) && op->getNumResults() == 1));
}

/// Clones `op` (a fused chain: its body) with `mapping` at `b`'s insertion
/// point and returns the values standing for its results.
static SmallVector<Value> inlineElementwise(OpBuilder &b, Operation *op,
                                            IRMapping &mapping) {
  auto fused = dyn_cast<FusedElementwiseOp>(op);
  if (!fused)
    return b.clone(*op, mapping)->getResults();
  Block &body = fused.getBody().front();
  for (auto [arg, input] : llvm::zip(body.getArguments(), fused.getInputs()))
    mapping.map(arg, mapping.lookupOrDefault(input));
  for (Operation &inner : body.without_terminator())
    b.clone(inner, mapping);
  return llvm::map_to_vector(cast<YieldOp>(body.getTerminator()).getValues(),
                             [&](Value v) { return mapping.lookup(v); });
}

/// consumer(producer(...)) -> kiln.fused_elementwise running both, when both
/// are elementwise over one shape. The fused op takes the consumer's place;
/// a producer result that is used elsewhere is yielded too, which is only
/// possible when those uses come after the consumer (else nothing fuses and
/// the value is materialized as before). Applied to a fixpoint this grows
/// whole chains.
struct FuseElementwiseChain : RewritePattern {
  FuseElementwiseChain(MLIRContext *context)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, context) {}

  LogicalResult matchAndRewrite(Operation *consumer,
                                PatternRewriter &rewriter) const override {
    // Ops inside a fused body are already one loop.
    if (!isElementwise(consumer) ||
        isa<FusedElementwiseOp>(consumer->getParentOp()))
      return failure();
    ArrayRef<int64_t> shape =
        cast<RankedTensorType>(consumer->getResult(0).getType()).getShape();
    Operation *producer = nullptr;
    for (Value operand : consumer->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (!isElementwise(def) || def->getBlock() != consumer->getBlock() ||
          cast<RankedTensorType>(operand.getType()).getShape() != shape)
        continue;
      bool usesAfterConsumer = llvm::all_of(def->getUsers(), [&](Operation *u) {
        return u == consumer || (u->getBlock() == consumer->getBlock() &&
                                 consumer->isBeforeInBlock(u));
      });
      if (usesAfterConsumer) {
        producer = def;
        break;
      }
    }
    if (!producer)
      return failure();

    // Operands: those of the producer, then the consumer's other ones.
    llvm::SetVector<Value> inputs;
    inputs.insert(producer->operand_begin(), producer->operand_end());
    for (Value operand : consumer->getOperands())
      if (operand.getDefiningOp() != producer)
        inputs.insert(operand);
    // Results: the consumer's, then the producer's that are used elsewhere.
    SmallVector<Value> kept, replaced(consumer->getResults());
    for (Value result : producer->getResults())
      if (llvm::any_of(result.getUsers(),
                       [&](Operation *u) { return u != consumer; }))
        kept.push_back(result);
    replaced.append(kept);

    rewriter.setInsertionPoint(consumer);
    auto fused = FusedElementwiseOp::create(rewriter, consumer->getLoc(),
                                            ValueRange(replaced).getTypes(),
                                            inputs.getArrayRef());
    Block *body = rewriter.createBlock(
        &fused.getBody(), {}, ValueRange(inputs.getArrayRef()).getTypes(),
        SmallVector<Location>(inputs.size(), consumer->getLoc()));
    IRMapping mapping;
    mapping.map(inputs.getArrayRef(), body->getArguments());
    SmallVector<Value> producerValues =
        inlineElementwise(rewriter, producer, mapping);
    mapping.map(producer->getResults(), producerValues);
    SmallVector<Value> yielded = inlineElementwise(rewriter, consumer, mapping);
    for (Value result : kept)
      yielded.push_back(mapping.lookup(result));
    YieldOp::create(rewriter, consumer->getLoc(), yielded);

    rewriter.replaceAllUsesWith(replaced, fused.getResults());
    rewriter.eraseOp(consumer);
    rewriter.eraseOp(producer);
    return success();
  }
};

/// The hyperparameters updates must share to run as one fused update, and
/// the element type of the copies they write (null for none).
struct SgdKey {
  Value learningRate;
  float momentum, weightDecay;
  bool nesterov;
  Type copyElement;
  bool operator==(const SgdKey &o) const {
    return learningRate == o.learningRate && momentum == o.momentum &&
           weightDecay == o.weightDecay && nesterov == o.nesterov &&
           copyElement == o.copyElement;
  }
};

/// The cast of an sgd_update's new weight to another element type (the
/// copy --kiln-bf16-weight-copies assigns), which the fused update folds in.
static CastOp copyCastOf(SgdUpdateOp update) {
  for (Operation *user : update.getNewWeight().getUsers())
    if (auto cast = dyn_cast<CastOp>(user))
      return cast;
  return {};
}

static Type elementOf(Value tensor) {
  return cast<RankedTensorType>(tensor.getType()).getElementType();
}

template <typename Op> static SgdKey keyOf(Op op, Type copyElement) {
  return {op.getLearningRate(), op.getMomentum().convertToFloat(),
          op.getWeightDecay().convertToFloat(), op.getNesterov(), copyElement};
}

static std::optional<SgdKey> sgdKeyOf(Operation *op) {
  if (auto update = dyn_cast<SgdUpdateOp>(op)) {
    CastOp copy = copyCastOf(update);
    return keyOf(update, copy ? elementOf(copy.getOutput()) : Type());
  }
  if (auto update = dyn_cast<FusedSgdUpdateOp>(op))
    return keyOf(update, update.getNewCopies().empty()
                             ? Type()
                             : elementOf(update.getNewCopies().front()));
  return std::nullopt;
}

/// All SGD updates of a block that share learning rate, momentum, weight
/// decay, nesterov and whether their new weight is cast to a copy -> one
/// kiln.fused_sgd_update at the last of them, which also writes the copies
/// (a single update with a copy is worth fusing for that alone). Results
/// read before that point (other than by kiln.assign, which takes effect at
/// the end of the step wherever it stands, and by the copy's cast) keep
/// their update out of the group.
struct FuseSgdUpdates : RewritePattern {
  FuseSgdUpdates(MLIRContext *context)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, context) {}

  LogicalResult matchAndRewrite(Operation *root,
                                PatternRewriter &rewriter) const override {
    std::optional<SgdKey> key = sgdKeyOf(root);
    if (!key)
      return failure();
    SmallVector<Operation *> group;
    for (Operation &op : *root->getBlock())
      if (sgdKeyOf(&op) == key)
        group.push_back(&op);
    // What the fused update replaces: the updates' results and the copies'
    // casts.
    auto replaced = [&](Operation *op) {
      SmallVector<Operation *> ops{op};
      if (auto update = dyn_cast<SgdUpdateOp>(op); update && key->copyElement)
        ops.push_back(copyCastOf(update));
      return ops;
    };
    // Drop updates whose results are needed before the last update, until
    // the group is stable (dropping one moves the last one earlier).
    bool changed = true;
    while (changed && !group.empty()) {
      changed = false;
      Operation *last = group.back();
      llvm::erase_if(group, [&](Operation *op) {
        SmallVector<Operation *> ops = replaced(op);
        bool early = op != last && llvm::any_of(ops, [&](Operation *r) {
                       return llvm::any_of(r->getUsers(), [&](Operation *u) {
                         return !isa<AssignOp>(u) &&
                                !llvm::is_contained(ops, u) &&
                                (u->getBlock() != last->getBlock() ||
                                 u->isBeforeInBlock(last));
                       });
                     });
        changed |= early;
        return early;
      });
    }
    bool foldsCopy = key->copyElement && group.size() == 1 &&
                     isa<SgdUpdateOp>(group.front());
    if ((group.size() < 2 && !foldsCopy) || !llvm::is_contained(group, root))
      return failure();

    SmallVector<Value> weights, gradients, velocities;
    for (Operation *op : group) {
      if (auto update = dyn_cast<SgdUpdateOp>(op)) {
        weights.push_back(update.getWeight());
        gradients.push_back(update.getGradient());
        velocities.push_back(update.getVelocity());
        continue;
      }
      auto fused = cast<FusedSgdUpdateOp>(op);
      llvm::append_range(weights, fused.getWeights());
      llvm::append_range(gradients, fused.getGradients());
      llvm::append_range(velocities, fused.getVelocities());
    }
    Operation *last = group.back();
    rewriter.setInsertionPoint(last);
    SmallVector<Type> types(ValueRange(weights).getTypes()), copyTypes;
    if (key->copyElement)
      for (Type type : types)
        copyTypes.push_back(
            cast<RankedTensorType>(type).clone(key->copyElement));
    auto fused = FusedSgdUpdateOp::create(
        rewriter, last->getLoc(), types, types, copyTypes, weights, gradients,
        velocities, key->learningRate, rewriter.getF32FloatAttr(key->momentum),
        rewriter.getF32FloatAttr(key->weightDecay),
        key->nesterov ? rewriter.getUnitAttr() : nullptr);
    unsigned n = weights.size(), i = 0;
    Operation *anchor = fused;
    for (Operation *op : group) {
      unsigned count = isa<SgdUpdateOp>(op)
                           ? 1
                           : cast<FusedSgdUpdateOp>(op).getWeights().size();
      SmallVector<Value> results(fused.getNewWeights().slice(i, count));
      llvm::append_range(results, fused.getNewVelocities().slice(i, count));
      SmallVector<Operation *> ops = replaced(op);
      if (isa<FusedSgdUpdateOp>(op))
        llvm::append_range(results, fused.getNewCopies().slice(i, count));
      // Assignments of the results move after the fused update, in order.
      SmallVector<Operation *> early;
      for (Operation *r : ops)
        for (Operation *user : r->getUsers())
          if (!llvm::is_contained(ops, user) && user->isBeforeInBlock(fused))
            early.push_back(user);
      llvm::sort(early, [](Operation *a, Operation *b) {
        return a->isBeforeInBlock(b);
      });
      for (Operation *user : early) {
        rewriter.moveOpAfter(user, anchor);
        anchor = user;
      }
      if (ops.size() == 2)
        rewriter.replaceOp(ops[1], fused.getNewCopies()[i]);
      i += count;
      rewriter.replaceOp(op, results);
    }
    assert(i == n && "every parameter of the group is placed");
    (void)n;
    return success();
  }
};

/// cast(lars_update(...).new_weight) -> the update's `copy` result: LARS
/// stays per parameter, but its loop can round the new weight as well.
struct FoldCopyIntoLarsUpdate : OpRewritePattern<CastOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CastOp cast,
                                PatternRewriter &rewriter) const override {
    auto update = cast.getInput().getDefiningOp<LarsUpdateOp>();
    if (!update || update.getNewCopy() ||
        cast.getInput() != update.getNewWeight())
      return failure();
    rewriter.setInsertionPoint(update);
    auto folded = LarsUpdateOp::create(
        rewriter, update.getLoc(), update.getNewWeight().getType(),
        update.getNewVelocity().getType(), cast.getOutput().getType(),
        update.getWeight(), update.getGradient(), update.getVelocity(),
        update.getLearningRate(), update.getMomentumAttr(), update.getEtaAttr(),
        update.getWeightDecayAttr(), update.getEpsilonAttr(),
        update.getFormAttr(), update.getSkipAdaptationAttr());
    rewriter.replaceOp(cast, folded.getNewCopy());
    rewriter.replaceOp(update,
                       {folded.getNewWeight(), folded.getNewVelocity()});
    return success();
  }
};

struct FusePass : impl::KilnFuseBase<FusePass> {
  using Base::Base;
  void runOnOperation() override {
    // Batch norm + relu (and residual) first: where a relu or add could go
    // either into a batch norm or into an elementwise chain, the batch norm
    // takes it (one pass less, and the chain fusion then starts from what
    // is left). Likewise a
    // residual add and relu go into a fused convolution before any chain.
    auto apply = [&](void (*populate)(RewritePatternSet &)) {
      RewritePatternSet patterns(&getContext());
      populate(patterns);
      return applyPatternsGreedily(getOperation(), std::move(patterns));
    };
    if (failed(apply(populateBatchNormReluFusionPatterns)) ||
        failed(apply(populateDenseGradientFusionPatterns)) ||
        (convBatchNorm && failed(apply(populateConvBatchNormFusionPatterns))) ||
        (convBatchNormTrain &&
         failed(apply(populateConvBatchNormTrainFusionPatterns))) ||
        (elementwiseChains &&
         failed(apply(populateElementwiseFusionPatterns))) ||
        (optimizerUpdates && failed(apply(populateOptimizerFusionPatterns))))
      signalPassFailure();
  }
};
} // namespace

void populateBatchNormReluFusionPatterns(RewritePatternSet &patterns) {
  patterns.add<FuseBatchNormRelu<BatchNormTrainOp>,
               FuseBatchNormRelu<BatchNormInferenceOp>,
               FuseResidualIntoBatchNormTrain,
               FuseReluBackwardIntoBatchNormBackward>(patterns.getContext());
}

void populateDenseGradientFusionPatterns(RewritePatternSet &patterns) {
  patterns.add<FuseDenseWeightAndBiasGradients>(patterns.getContext());
}

void populateConvBatchNormFusionPatterns(RewritePatternSet &patterns) {
  patterns
      .add<FuseConvBatchNormInference, FuseResidualIntoConv, FuseReluIntoConv>(
          patterns.getContext());
}

void populateConvBatchNormTrainFusionPatterns(RewritePatternSet &patterns) {
  patterns.add<FuseConvBatchNormTrain>(patterns.getContext());
}

void populateElementwiseFusionPatterns(RewritePatternSet &patterns) {
  patterns.add<FuseElementwiseChain>(patterns.getContext());
}

void populateOptimizerFusionPatterns(RewritePatternSet &patterns) {
  patterns.add<FuseSgdUpdates, FoldCopyIntoLarsUpdate>(patterns.getContext());
}
} // namespace kiln
