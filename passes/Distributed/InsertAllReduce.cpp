//===- InsertAllReduce.cpp - Gradient buckets and their allreduce ---------===//

#include "passes/Distributed/InsertAllReduce.h"

#include "dialects/Kiln/IR/KilnOps.h"
#include "passes/Autodiff/Autodiff.h"

#include "mlir/IR/Builders.h"

using namespace mlir;

namespace kiln {

static int64_t sizeInBytes(Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  return type.getNumElements() *
         int64_t(type.getElementTypeBitWidth() / 8);
}

LogicalResult insertAllReduce(func::FuncOp step, int64_t bucketBytes) {
  if (bucketBytes <= 0)
    return step.emitOpError("bucket size must be positive, got ")
           << bucketBytes;
  if (!step.getOps<AllReduceOp>().empty())
    return step.emitOpError("already has allreduce ops");
  Block &block = step.front();
  auto ret = cast<func::ReturnOp>(block.getTerminator());

  // Returned gradients in the order the backward pass produces them.
  SmallVector<unsigned> indices;
  for (unsigned i = 0; i < step.getNumResults(); ++i) {
    if (!step.getResultAttr(i, kGradientOfAttr))
      continue;
    Value gradient = ret.getOperand(i);
    if (!gradient.getDefiningOp() ||
        gradient.getDefiningOp()->getBlock() != &block)
      return step.emitOpError("gradient result ")
             << i << " is not computed in the step's body";
    indices.push_back(i);
  }
  if (indices.empty())
    return step.emitOpError("returns no gradients: run --kiln-autodiff first");
  auto producedBefore = [&](unsigned a, unsigned b) {
    Operation *x = ret.getOperand(a).getDefiningOp();
    Operation *y = ret.getOperand(b).getDefiningOp();
    return x != y && x->isBeforeInBlock(y);
  };
  llvm::stable_sort(indices, producedBefore);

  SmallVector<SmallVector<unsigned>> buckets(1);
  int64_t filled = 0;
  for (unsigned index : indices) {
    buckets.back().push_back(index);
    filled += sizeInBytes(ret.getOperand(index));
    if (filled >= bucketBytes) {
      buckets.emplace_back();
      filled = 0;
    }
  }
  if (buckets.back().empty())
    buckets.pop_back();

  OpBuilder builder(step.getContext());
  for (auto [id, bucket] : llvm::enumerate(buckets)) {
    SmallVector<Value> members;
    for (unsigned index : bucket)
      members.push_back(ret.getOperand(index));
    // The bucket is complete once its last-produced gradient exists.
    builder.setInsertionPointAfter(members.back().getDefiningOp());
    auto allreduce = AllReduceOp::create(builder, members.back().getLoc(),
                                         members, int64_t(id));
    for (auto [index, averaged] : llvm::zip(bucket, allreduce.getResults()))
      ret.setOperand(index, averaged);
  }
  return success();
}

} // namespace kiln
