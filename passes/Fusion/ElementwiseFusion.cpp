//===- ElementwiseFusion.cpp - Elementwise chain fusion -------------------===//
//
// Chains of elementwise ops as one kiln.fused_elementwise (--kiln-fuse).
//
//===----------------------------------------------------------------------===//

#include "passes/Fusion/Fuse.h"

#include "dialects/Kiln/IR/KilnOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;

namespace kiln {

namespace {
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
} // namespace

void populateElementwiseFusionPatterns(RewritePatternSet &patterns) {
  patterns.add<FuseElementwiseChain>(patterns.getContext());
}
} // namespace kiln
