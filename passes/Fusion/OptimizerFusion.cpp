//===- OptimizerFusion.cpp - Optimizer update fusion ----------------------===//
//
// SGD updates as one fused update, bf16 weight copies folded in
// (--kiln-fuse).
//
//===----------------------------------------------------------------------===//

#include "passes/Fusion/Fuse.h"

#include "dialects/Kiln/IR/KilnOps.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;

namespace kiln {

namespace {
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
} // namespace

void populateOptimizerFusionPatterns(RewritePatternSet &patterns) {
  patterns.add<FuseSgdUpdates, FoldCopyIntoLarsUpdate>(patterns.getContext());
}
} // namespace kiln
