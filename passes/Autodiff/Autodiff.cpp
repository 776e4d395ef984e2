//===- Autodiff.cpp - Reverse-mode differentiation of kiln functions ------===//
//
// A generic reverse walk: every op whose results carry a gradient builds the
// gradients of its operands through GradientOpInterface; gradients reaching
// one value from several uses are summed. Backward ops are emitted after the
// forward ops in reverse order, so the last layer's gradients come first
// (what gradient bucketing and overlap rely on).
//
//===----------------------------------------------------------------------===//

#include "passes/Autodiff/Autodiff.h"

#include "dialects/Kiln/IR/KilnOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/MapVector.h"

using namespace mlir;

namespace kiln {

namespace {
/// Gradients accumulated so far, keyed by the forward value.
class GradientMap {
public:
  explicit GradientMap(OpBuilder &builder) : builder(builder) {}

  void accumulate(Value value, Value gradient) {
    auto [it, inserted] = gradients.try_emplace(value, gradient);
    if (!inserted)
      it->second = AddOp::create(builder, gradient.getLoc(), it->second,
                                 gradient);
  }
  Value lookup(Value value) const { return gradients.lookup(value); }

private:
  OpBuilder &builder;
  DenseMap<Value, Value> gradients;
};
} // namespace

/// Erases ops of `block` whose results are unused and that have no effects,
/// such as the gradient of the input images.
static void eraseDeadOps(Block &block) {
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(block)))
    if (isOpTriviallyDead(&op))
      op.erase();
}

FailureOr<func::FuncOp> buildTrainStep(func::FuncOp forward,
                                       StringRef stepName) {
  auto module = forward->getParentOfType<ModuleOp>();
  SymbolTable symbols(module);
  if (symbols.lookup(stepName))
    return forward.emitOpError("cannot create the training step '")
           << stepName << "': the module already has that symbol";
  if (!forward.getBody().hasOneBlock())
    return forward.emitOpError("must have a single block to be differentiated");
  auto lossType = RankedTensorType::get({}, Float32Type::get(module.getContext()));
  if (forward.getNumResults() == 0 || forward.getResultTypes()[0] != lossType)
    return forward.emitOpError(
        "must return the scalar loss (tensor<f32>) as its first result");

  func::FuncOp step = forward.clone();
  step.setSymName(stepName);
  symbols.insert(step, std::next(Block::iterator(forward)));

  Block &block = step.front();
  auto ret = cast<func::ReturnOp>(block.getTerminator());
  SmallVector<Operation *> forwardOps;
  for (Operation &op : block.without_terminator())
    forwardOps.push_back(&op);

  OpBuilder builder(ret);
  GradientMap gradients(builder);
  Location loc = ret.getLoc();
  Value one = arith::ConstantOp::create(
      builder, loc, DenseElementsAttr::get(lossType, builder.getF32FloatAttr(1.0f)));
  gradients.accumulate(ret.getOperand(0), one);

  llvm::MapVector<StringAttr, Value> parameterGradients;
  for (Operation *op : llvm::reverse(forwardOps)) {
    if (auto read = dyn_cast<ReadOp>(op)) {
      auto variable = symbols.lookup<VariableOp>(read.getVariable());
      Value gradient = gradients.lookup(read.getValue());
      if (!variable || !variable.isParameter() || !gradient)
        continue;
      StringAttr name = variable.getSymNameAttr();
      auto [it, inserted] = parameterGradients.try_emplace(name, gradient);
      if (!inserted)
        it->second = AddOp::create(builder, loc, it->second, gradient);
      continue;
    }
    SmallVector<Value> resultGradients;
    for (Value result : op->getResults())
      resultGradients.push_back(gradients.lookup(result));
    if (llvm::none_of(resultGradients, [](Value v) { return v; }))
      continue;
    // A constant (an op without operands, such as a scalar an imported
    // model divides by) passes its gradient nowhere.
    if (op->getNumOperands() == 0)
      continue;
    auto differentiable = dyn_cast<GradientOpInterface>(op);
    if (!differentiable)
      return op->emitOpError("is not differentiable, but the loss depends on "
                             "it");
    SmallVector<Value> operandGradients;
    if (failed(differentiable.buildGradients(builder, resultGradients,
                                             operandGradients)))
      return failure();
    for (auto [operand, gradient] :
         llvm::zip(op->getOperands(), operandGradients)) {
      if (!gradient)
        continue;
      // A gradient has its value's type (e.g. an f32 bias of a bf16 layer).
      if (gradient.getType() != operand.getType())
        gradient = CastOp::create(builder, gradient.getLoc(), operand.getType(),
                                  gradient);
      gradients.accumulate(operand, gradient);
    }
  }

  // Results: the forward results, then one gradient per parameter in
  // declaration order.
  SmallVector<Value> results(ret.getOperands());
  SmallVector<StringAttr> gradientOf;
  for (auto variable : module.getOps<VariableOp>()) {
    if (!variable.isParameter())
      continue;
    Value gradient = parameterGradients.lookup(variable.getSymNameAttr());
    if (!gradient) {
      if (!parameterGradients.empty())
        variable.emitWarning("parameter @")
            << variable.getSymName() << " does not affect the loss of @"
            << forward.getSymName() << "; it will not be trained";
      continue;
    }
    results.push_back(gradient);
    gradientOf.push_back(variable.getSymNameAttr());
  }
  ret->setOperands(results);
  unsigned numForwardResults = forward.getNumResults();
  step.setFunctionType(FunctionType::get(
      module.getContext(), step.getArgumentTypes(), ValueRange(results).getTypes()));
  for (auto [i, name] : llvm::enumerate(gradientOf))
    step.setResultAttr(numForwardResults + i, kGradientOfAttr,
                       FlatSymbolRefAttr::get(name));
  eraseDeadOps(block);
  return step;
}

} // namespace kiln
