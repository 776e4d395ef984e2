//===- Bf16.cpp - Mixed precision with bf16 compute -----------------------===//
//
// A generic walk over PrecisionOpInterface: the per-op knowledge is on the
// ops (KilnPrecision.cpp). Master weights, batch-norm parameters and
// statistics stay f32; only activations and the weights a compute op reads
// are cast.
//
//===----------------------------------------------------------------------===//

#include "passes/Precision/Bf16.h"

#include "dialects/Kiln/IR/KilnOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"

using namespace mlir;

namespace kiln {

static Type withElement(Type type, Type element) {
  return cast<RankedTensorType>(type).clone(element);
}

static bool isBf16Tensor(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && t.getElementType().isBF16();
}

/// Recomputes the result types of `op` after its operands changed precision.
static LogicalResult refreshResultTypes(Operation *op) {
  if (auto infer = dyn_cast<InferTypeOpInterface>(op)) {
    SmallVector<Type> types;
    if (failed(infer.inferReturnTypes(
            op->getContext(), op->getLoc(), op->getOperands(),
            op->getAttrDictionary(), op->getPropertiesStorage(),
            op->getRegions(), types)))
      return failure();
    for (auto [result, type] : llvm::zip(op->getResults(), types))
      result.setType(type);
    return success();
  }
  // Follow ops without shape inference keep their shape and take the
  // element type of their first operand.
  Type element = cast<RankedTensorType>(op->getOperand(0).getType()).getElementType();
  for (Value result : op->getResults())
    result.setType(withElement(result.getType(), element));
  return success();
}

LogicalResult castToBf16(func::FuncOp func) {
  OpBuilder builder(func.getContext());
  Type bf16 = builder.getBF16Type(), f32 = builder.getF32Type();
  DenseMap<std::pair<Value, Type>, Value> casts;
  auto castTo = [&](Value value, Type element) -> Value {
    auto type = dyn_cast<RankedTensorType>(value.getType());
    if (!type || type.getElementType() == element)
      return value;
    Value &cached = casts[{value, element}];
    if (!cached) {
      builder.setInsertionPointAfterValue(value);
      cached = CastOp::create(builder, value.getLoc(),
                              withElement(value.getType(), element), value);
    }
    return cached;
  };

  Block &block = func.front();
  for (Operation &op : llvm::make_early_inc_range(block.without_terminator())) {
    if (isa<CastOp>(op))
      continue;
    auto precision = dyn_cast<PrecisionOpInterface>(op);
    if (!precision) {
      // Anything else sees the f32 values it was written for.
      for (OpOperand &operand : op.getOpOperands())
        if (isBf16Tensor(operand.get()))
          operand.set(castTo(operand.get(), f32));
      continue;
    }
    SmallVector<unsigned> indices = precision.getPrecisionOperands();
    Type target;
    switch (precision.getBf16Policy()) {
    case Bf16Policy::Compute:
      target = bf16;
      break;
    case Bf16Policy::F32:
      target = f32;
      break;
    case Bf16Policy::Follow:
      if (llvm::none_of(indices, [&](unsigned i) {
            return isBf16Tensor(op.getOperand(i));
          }))
        continue;
      target = bf16;
      break;
    }
    for (unsigned i : indices)
      op.setOperand(i, castTo(op.getOperand(i), target));
    if (failed(refreshResultTypes(&op)))
      return failure();
  }

  // Results keep the types the caller expects.
  auto ret = cast<func::ReturnOp>(block.getTerminator());
  for (auto [operand, type] :
       llvm::zip(ret->getOpOperands(), func.getResultTypes()))
    if (operand.get().getType() != type)
      operand.set(castTo(operand.get(),
                         cast<RankedTensorType>(type).getElementType()));

  // An input only ever used in bf16 is delivered in bf16 (the input pipeline
  // writes it that way).
  for (BlockArgument arg : block.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type || !type.getElementType().isF32() || arg.use_empty() ||
        !llvm::all_of(arg.getUsers(), [](Operation *user) {
          auto c = dyn_cast<CastOp>(user);
          return c && c.getOutput().getType().getElementType().isBF16();
        }))
      continue;
    arg.setType(withElement(type, bf16));
    for (Operation *user : llvm::make_early_inc_range(arg.getUsers())) {
      user->getResult(0).replaceAllUsesWith(arg);
      user->erase();
    }
  }
  func.setFunctionType(FunctionType::get(func.getContext(),
                                         block.getArgumentTypes(),
                                         func.getResultTypes()));
  return success();
}

namespace {
/// cast(conv2d_backward_filter(...) : bf16) : f32 -> conv2d_backward_filter
/// producing f32: the library accumulates in f32 anyway, so the gradient
/// keeps its precision.
struct FoldCastIntoFilterGradient : OpRewritePattern<CastOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CastOp cast,
                                PatternRewriter &rewriter) const override {
    auto grad = cast.getInput().getDefiningOp<Conv2DBackwardFilterOp>();
    if (!grad || !grad->hasOneUse() ||
        !cast.getOutput().getType().getElementType().isF32())
      return failure();
    // The gradient's location, not the cast's (which autodiff put at the
    // weight's read): profiles attribute the call to its convolution.
    auto f32Grad = Conv2DBackwardFilterOp::create(
        rewriter, grad.getLoc(), cast.getOutput().getType(), grad.getInput(),
        grad.getOutputGrad(), grad.getStridesAttr(), grad.getPaddingAttr(),
        grad.getDilationsAttr(), grad.getGroupsAttr());
    rewriter.replaceOp(cast, f32Grad);
    rewriter.eraseOp(grad);
    return success();
  }
};
} // namespace

void populateCastFoldingPatterns(RewritePatternSet &patterns) {
  patterns.add<FoldCastIntoFilterGradient>(patterns.getContext());
}

} // namespace kiln
