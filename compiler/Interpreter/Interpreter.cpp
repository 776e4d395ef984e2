//===- Interpreter.cpp - The walker and the value store
//--------------------===//
//
// Executes a function's single block in order. Values live in a frame keyed
// by SSA value and are dropped after their last use, so a ResNet-50 step
// holds no more activations than its backward pass needs. After each op the
// walker checks every result against its static type (element type, rank,
// static dimensions) and rounds bf16-typed results to bf16.
//
//===----------------------------------------------------------------------===//

#include "compiler/Interpreter/Interpreter.h"

#include "compiler/Interpreter/Evaluators.h"

#include "dialects/Kiln/IR/InitialValue.h"
#include "dialects/Kiln/IR/KilnOps.h"
#include "kiln/ref/bf16.h"
#include "passes/Analysis/LayerNames.h"
#include "kiln/ref/check.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cstring>

using namespace mlir;

namespace kiln::interp {

FailureOr<DType> getElementType(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return failure();
  Type e = tensor.getElementType();
  if (e.isF32())
    return DType::F32;
  if (e.isBF16())
    return DType::BF16;
  if (e.isF64())
    return DType::F64;
  if (e.isSignlessInteger(32))
    return DType::I32;
  if (e.isSignlessInteger(64))
    return DType::I64;
  return failure();
}

std::string describeMismatch(const HostTensor &value, RankedTensorType type) {
  auto describe = [&] {
    std::string s;
    llvm::raw_string_ostream os(s);
    os << "has runtime type tensor<" << typeString(value)
       << ">, but its type is " << type;
    return s;
  };
  FailureOr<DType> element = getElementType(type);
  if (failed(element) || *element != value.type ||
      type.getRank() != static_cast<int64_t>(value.shape.size()))
    return describe();
  for (int64_t i = 0; i < type.getRank(); ++i)
    if (!type.isDynamicDim(i) &&
        type.getDimSize(i) != value.shape[static_cast<size_t>(i)])
      return describe();
  return "";
}

/// An APFloat of any semantics as a double (exact for f32, bf16, f64).
static double toDouble(APFloat value) {
  bool losesInfo = false;
  value.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven,
                &losesInfo);
  return value.convertToDouble();
}

/// A dense_resource (an imported model's large initializer) from its bytes.
static FailureOr<HostTensor> tensorFromBytes(ShapedType type,
                                             ArrayRef<char> bytes) {
  FailureOr<DType> element = getElementType(type);
  if (failed(element) || !type.hasStaticShape())
    return failure();
  HostTensor t = HostTensor::zeros(
      *element, ref::Shape(type.getShape().begin(), type.getShape().end()));
  auto load = [&](auto zero, int64_t i) {
    std::memcpy(&zero, bytes.data() + i * sizeof(zero), sizeof(zero));
    return zero;
  };
  int64_t n = t.numElements();
  switch (*element) {
  case DType::F32:
    std::memcpy(t.floats.data(), bytes.data(), bytes.size());
    break;
  case DType::BF16:
    for (int64_t i = 0; i < n; ++i)
      t.floats[i] = ref::bf16BitsToFloat(load(uint16_t(), i));
    break;
  case DType::F64:
    std::memcpy(t.doubles.data(), bytes.data(), bytes.size());
    break;
  case DType::I32:
    for (int64_t i = 0; i < n; ++i)
      t.ints[i] = load(int32_t(), i);
    break;
  case DType::I64:
    std::memcpy(t.ints.data(), bytes.data(), bytes.size());
    break;
  }
  return t;
}

FailureOr<HostTensor> tensorFromAttr(ElementsAttr attr) {
  if (isa<DenseResourceElementsAttr>(attr)) {
    llvm::Expected<ArrayRef<char>> bytes = getInitialValueBytes(attr);
    if (!bytes) {
      llvm::consumeError(bytes.takeError());
      return failure();
    }
    return tensorFromBytes(cast<ShapedType>(attr.getType()), *bytes);
  }
  auto dense = dyn_cast<DenseElementsAttr>(attr);
  if (!dense)
    return failure();
  auto type = cast<ShapedType>(dense.getType());
  FailureOr<DType> element = getElementType(type);
  if (failed(element) || !type.hasStaticShape())
    return failure();
  HostTensor t = HostTensor::zeros(
      *element, ref::Shape(type.getShape().begin(), type.getShape().end()));
  if (isInteger(*element)) {
    size_t i = 0;
    for (const APInt &v : dense.getValues<APInt>())
      t.ints[i++] = v.getSExtValue();
  } else {
    size_t i = 0;
    for (const APFloat &v : dense.getValues<APFloat>()) {
      double d = toDouble(v);
      if (*element == DType::F64)
        t.doubles[i++] = d;
      else
        t.floats[i++] = static_cast<float>(d);
    }
  }
  return t;
}

void applyAssignments(VariableStore &store,
                      std::vector<Assignment> assignments) {
  for (Assignment &a : assignments)
    if (HostTensor *variable = store.lookup(a.variable))
      *variable = std::move(a.value);
}

namespace detail {

const HostTensor &EvalContext::get(Value v) const {
  auto it = frame.find(v);
  // The walker binds every operand before its user runs (SSA dominance in a
  // single block); a miss is a bug in the interpreter, not in the input.
  if (it == frame.end())
    ref::fatalError(__FILE__, __LINE__, "kiln-run: use of an unbound value");
  return it->second;
}

HostTensor &EvalContext::getMutable(Value v) {
  return const_cast<HostTensor &>(
      static_cast<const EvalContext *>(this)->get(v));
}

void EvalContext::set(Value v, HostTensor tensor) {
  frame[v] = std::move(tensor);
}

void EvalContext::setFloat(Value v, ref::Tensor tensor) {
  FailureOr<DType> type = getElementType(v.getType());
  set(v, HostTensor::fromRef(std::move(tensor),
                             succeeded(type) ? *type : DType::F32));
}

InFlightDiagnostic EvalContext::error(Operation *op) {
  InFlightDiagnostic diag = op->emitOpError();
  if (!options.context.empty())
    diag << "(" << options.context << ") ";
  // The layer as the profile and kiln-sim name it: a model line alone says
  // little in an imported model, where every op has the file's location.
  // Computed on the error path only (one walk of the block).
  if (std::string layer = layerNameOf(op); !layer.empty())
    diag << "in " << layer << ": ";
  return diag;
}

LogicalResult EvalContext::check(Operation *op, const kiln::Status &status) {
  if (status.isOk())
    return success();
  return error(op) << status.message();
}

FailureOr<std::vector<uint8_t>>
EvalContext::nextReluMask(Operation *op, const std::vector<float> &x) {
  std::vector<uint8_t> mask;
  size_t index = relus++;
  if (const KinkPattern *frozen = options.frozenKinks) {
    if (index >= frozen->reluMasks.size() ||
        frozen->reluMasks[index].size() != x.size())
      return error(op) << "does not fit the frozen kink pattern";
    mask = frozen->reluMasks[index];
  } else {
    mask.resize(x.size());
    for (size_t i = 0; i < x.size(); ++i)
      mask[i] = x[i] > 0.0f ? 1 : 0;
  }
  if (options.recordKinks)
    options.recordKinks->reluMasks.push_back(mask);
  return mask;
}

FailureOr<std::vector<int64_t>>
EvalContext::nextPoolWinners(Operation *op, std::vector<int64_t> computed) {
  size_t index = pools++;
  if (const KinkPattern *frozen = options.frozenKinks) {
    if (index >= frozen->poolWinners.size() ||
        frozen->poolWinners[index].size() != computed.size())
      return error(op) << "does not fit the frozen kink pattern";
    computed = frozen->poolWinners[index];
  }
  if (options.recordKinks)
    options.recordKinks->poolWinners.push_back(computed);
  return computed;
}

static std::string shapeText(const ref::Shape &shape) {
  return ref::shapeToString(shape);
}

LogicalResult EvalContext::checkSameShape(Operation *op, const char *what,
                                          const ref::Shape &actual,
                                          const ref::Shape &expected) {
  if (actual == expected)
    return success();
  return error(op) << what << " has shape " << shapeText(actual)
                   << ", expected " << shapeText(expected);
}

ref::Shape resolveShape(Type type, int64_t batch) {
  auto tensor = cast<RankedTensorType>(type);
  ref::Shape shape(tensor.getShape().begin(), tensor.getShape().end());
  for (int64_t &d : shape)
    if (ShapedType::isDynamic(d))
      d = batch;
  return shape;
}

ref::Activation activationOf(ActivationKind kind) {
  switch (kind) {
  case ActivationKind::Sigmoid:
    return ref::Activation::Sigmoid;
  case ActivationKind::SiLU:
    return ref::Activation::SiLU;
  case ActivationKind::ReLU6:
    return ref::Activation::ReLU6;
  case ActivationKind::HardSigmoid:
    return ref::Activation::HardSigmoid;
  case ActivationKind::HardSwish:
    return ref::Activation::HardSwish;
  }
  llvm_unreachable("unknown activation kind");
}

ref::BinaryKind binaryKindOf(BinaryKind kind) {
  switch (kind) {
  case BinaryKind::Add:
    return ref::BinaryKind::Add;
  case BinaryKind::Sub:
    return ref::BinaryKind::Sub;
  case BinaryKind::Mul:
    return ref::BinaryKind::Mul;
  case BinaryKind::Div:
    return ref::BinaryKind::Div;
  }
  llvm_unreachable("unknown binary kind");
}

ref::Conv2dAttrs convAttrs(ArrayRef<int64_t> strides, ArrayRef<int64_t> padding,
                           ArrayRef<int64_t> dilations, int64_t groups) {
  ref::Conv2dAttrs attrs;
  std::copy(strides.begin(), strides.end(), attrs.strides.begin());
  std::copy(padding.begin(), padding.end(), attrs.padding.begin());
  std::copy(dilations.begin(), dilations.end(), attrs.dilations.begin());
  attrs.groups = groups;
  return attrs;
}

std::vector<int32_t> labelsOf(const HostTensor &labels) {
  return std::vector<int32_t>(labels.ints.begin(), labels.ints.end());
}

} // namespace detail

namespace {

using detail::EvalContext;

/// kiln.read, kiln.assign, kiln.reorder, arith.constant: the ops that are not
/// kernels.
std::optional<LogicalResult> evaluateCoreOp(Operation *op, EvalContext &ctx) {
  return llvm::TypeSwitch<Operation *, std::optional<LogicalResult>>(op)
      .Case([&](ReadOp read) -> LogicalResult {
        const HostTensor *value = ctx.store.lookup(read.getVariable());
        if (!value)
          return ctx.error(op)
                 << "@" << read.getVariable() << " is not a declared variable";
        ctx.set(read.getValue(), *value);
        return success();
      })
      .Case([&](AssignOp assign) -> LogicalResult {
        ctx.assignments.push_back(
            {assign.getVariable().str(), ctx.get(assign.getValue())});
        return success();
      })
      .Case([&](ReorderOp reorder) -> LogicalResult {
        // Layouts are storage; the interpreter's tensors are logical.
        ctx.set(reorder.getOutput(), ctx.get(reorder.getInput()));
        return success();
      })
      .Case([&](arith::ConstantOp constant) -> LogicalResult {
        auto elements = dyn_cast<ElementsAttr>(constant.getValue());
        FailureOr<HostTensor> value =
            elements ? tensorFromAttr(elements) : FailureOr<HostTensor>();
        if (failed(value))
          return ctx.error(op)
                 << "kiln-run supports only dense tensor constants of f32, "
                    "bf16, f64, i32 or i64";
        ctx.set(constant.getResult(), std::move(*value));
        return success();
      })
      .Default([](Operation *) { return std::nullopt; });
}

LogicalResult evaluateAndCheck(Operation *op, EvalContext &ctx);

/// kiln.fused_elementwise: its body, op by op, as the ops it fused ran.
LogicalResult evaluateFusedElementwise(FusedElementwiseOp fused,
                                       EvalContext &ctx) {
  Block &body = fused.getBody().front();
  for (auto [arg, input] : llvm::zip(body.getArguments(), fused.getInputs()))
    ctx.set(arg, ctx.get(input));
  for (Operation &op : body.without_terminator())
    if (failed(evaluateAndCheck(&op, ctx)))
      return failure();
  for (auto [result, value] : llvm::zip(
           fused.getResults(), cast<YieldOp>(body.getTerminator()).getValues()))
    ctx.set(result, ctx.get(value));
  for (BlockArgument arg : body.getArguments())
    ctx.erase(arg);
  for (Operation &op : body.without_terminator())
    for (Value v : op.getResults())
      ctx.erase(v);
  return success();
}

LogicalResult evaluate(Operation *op, EvalContext &ctx) {
  if (auto fused = dyn_cast<FusedElementwiseOp>(op))
    return evaluateFusedElementwise(fused, ctx);
  for (auto family : {evaluateCoreOp, detail::evaluateLayerOp,
                      detail::evaluateGradientOp, detail::evaluateTrainingOp})
    if (std::optional<LogicalResult> result = family(op, ctx))
      return *result;
  return ctx.error(op) << "is not supported by kiln-run (it executes the kiln "
                          "dialect, arith.constant and func.return)";
}

/// Evaluates `op`, rounds its bf16 results to bf16 and checks every result
/// against its static type.
LogicalResult evaluateAndCheck(Operation *op, EvalContext &ctx) {
  if (failed(evaluate(op, ctx)))
    return failure();
  for (OpResult r : op->getResults()) {
    auto type = dyn_cast<RankedTensorType>(r.getType());
    if (!type)
      return ctx.error(op) << "result " << r.getResultNumber()
                           << " is not a ranked tensor";
    HostTensor &value = ctx.getMutable(r);
    if (type.getElementType().isBF16() && ctx.options.roundBf16)
      for (float &x : value.floats)
        x = ref::roundToBf16(x);
    std::string mismatch = describeMismatch(value, type);
    if (!mismatch.empty())
      return ctx.error(op) << "result " << r.getResultNumber() << " "
                           << mismatch;
  }
  return success();
}

/// For each op of `block`, the values whose last use it is (values without
/// uses die at their definition).
DenseMap<Operation *, SmallVector<Value, 4>> computeLastUses(Block &block) {
  DenseMap<Operation *, unsigned> position;
  SmallVector<Operation *> ops;
  for (Operation &op : block) {
    position[&op] = ops.size();
    ops.push_back(&op);
  }
  DenseMap<Operation *, SmallVector<Value, 4>> lastUses;
  auto note = [&](Value v, Operation *definer) {
    Operation *last = definer;
    for (Operation *user : v.getUsers()) {
      Operation *inBlock = block.findAncestorOpInBlock(*user);
      if (inBlock && (!last || position[inBlock] > position[last]))
        last = inBlock;
    }
    if (last)
      lastUses[last].push_back(v);
  };
  for (BlockArgument arg : block.getArguments())
    note(arg, nullptr);
  for (Operation &op : block)
    for (Value result : op.getResults())
      note(result, &op);
  return lastUses;
}

} // namespace

FailureOr<CallResult> call(func::FuncOp function,
                           ArrayRef<HostTensor> arguments,
                           const VariableStore &store,
                           const CallOptions &options) {
  auto fail = [&]() {
    InFlightDiagnostic diag = function.emitError();
    if (!options.context.empty())
      diag << "(" << options.context << ") ";
    return diag;
  };
  if (function.isExternal() || !function.getBody().hasOneBlock())
    return fail() << "kiln-run needs @" << function.getSymName()
                  << " to have a body of one block";
  Block &block = function.front();
  if (arguments.size() != block.getNumArguments())
    return fail() << "@" << function.getSymName() << " takes "
                  << block.getNumArguments() << " arguments, got "
                  << arguments.size();

  EvalContext ctx(store, options);
  for (auto [i, arg] : llvm::enumerate(block.getArguments())) {
    std::string mismatch =
        describeMismatch(arguments[i], cast<RankedTensorType>(arg.getType()));
    if (!mismatch.empty())
      return fail() << "argument " << i << " of @" << function.getSymName()
                    << " " << mismatch;
    ctx.set(arg, arguments[i]);
  }

  DenseMap<Operation *, SmallVector<Value, 4>> lastUses =
      computeLastUses(block);
  auto die = [&](Operation *op) {
    auto it = lastUses.find(op);
    if (it != lastUses.end())
      for (Value v : it->second)
        ctx.erase(v);
  };
  die(nullptr);

  CallResult result;
  for (Operation &op : block) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      for (Value v : ret.getOperands())
        result.results.push_back(ctx.get(v));
      result.assignments = std::move(ctx.assignments);
      return result;
    }
    if (failed(evaluateAndCheck(&op, ctx)))
      return failure();
    die(&op);
  }
  return fail() << "@" << function.getSymName() << " has no func.return";
}

} // namespace kiln::interp
