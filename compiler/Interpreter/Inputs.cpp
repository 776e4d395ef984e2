//===- Inputs.cpp - Arguments of the interpreted function -----------------===//

#include "compiler/Interpreter/Inputs.h"

#include "compiler/Interpreter/Interpreter.h"

#include "dialects/Kiln/IR/KilnOps.h"
#include "kiln/ref/bf16.h"
#include "kiln/ref/synthetic.h"
#include "kiln/rt/safetensors.h"

#include <set>

using namespace mlir;

namespace kiln::interp {

namespace st = rt::safetensors;

std::optional<unsigned> getStepArgument(func::FuncOp function) {
  unsigned n = function.getNumArguments();
  for (unsigned i = 0; i < n; ++i)
    if (function.getArgAttr(i, "kiln.step"))
      return i;
  // Without the marker, a trailing rank-0 i64 is the step (what
  // --kiln-optimizer appends).
  if (n > 0) {
    auto type = dyn_cast<RankedTensorType>(function.getArgumentTypes()[n - 1]);
    if (type && type.getRank() == 0 && type.getElementType().isInteger(64))
      return n - 1;
  }
  return std::nullopt;
}

FailureOr<int64_t> getLabelClasses(BlockArgument labels) {
  for (Operation *user : labels.getUsers()) {
    Value logits;
    if (auto loss = dyn_cast<SoftmaxCrossEntropyOp>(user);
        loss && loss.getLabels() == labels)
      logits = loss.getLogits();
    else if (auto grad = dyn_cast<SoftmaxCrossEntropyBackwardOp>(user);
             grad && grad.getLabels() == labels)
      logits = grad.getLogits();
    if (!logits)
      continue;
    int64_t classes = cast<RankedTensorType>(logits.getType()).getDimSize(1);
    if (!ShapedType::isDynamic(classes) && classes > 0)
      return classes;
  }
  return failure();
}

HostTensor makeStepTensor(int64_t step) {
  HostTensor t = HostTensor::zeros(DType::I64, {});
  t.ints[0] = step;
  return t;
}

namespace {

std::string argName(unsigned i) { return "arg" + std::to_string(i); }

FailureOr<HostTensor> synthesize(func::FuncOp function, unsigned index,
                                 const InputOptions &options) {
  auto type = cast<RankedTensorType>(function.getArgumentTypes()[index]);
  ref::Shape shape(type.getShape().begin(), type.getShape().end());
  for (int64_t &d : shape)
    if (ShapedType::isDynamic(d))
      d = options.batch;
  FailureOr<DType> element = getElementType(type);
  // Each argument draws from its own stream, so adding an argument does not
  // change the others.
  ref::SyntheticArgument stream(options.seed, argName(index));
  if (succeeded(element) && isFloat(*element)) {
    HostTensor t = HostTensor::zeros(*element, shape);
    for (size_t i = 0; i < t.floats.size(); ++i) {
      t.floats[i] = stream.value(i);
      if (*element == DType::BF16)
        t.floats[i] = ref::roundToBf16(t.floats[i]);
    }
    return t;
  }
  if (succeeded(element) && *element == DType::I32 && shape.size() == 1) {
    FailureOr<int64_t> classes = getLabelClasses(function.getArgument(index));
    if (failed(classes))
      return function.emitError()
             << "cannot synthesize argument " << index << " (" << type
             << "): no kiln.softmax_cross_entropy with static logits takes it "
                "as labels; pass --inputs";
    HostTensor t = HostTensor::zeros(DType::I32, shape);
    for (size_t i = 0; i < t.ints.size(); ++i)
      t.ints[i] = static_cast<int64_t>(
          stream.label(i, static_cast<uint64_t>(*classes)));
    return t;
  }
  return function.emitError() << "cannot synthesize argument " << index
                              << " of type " << type << "; pass --inputs";
}

} // namespace

FailureOr<std::vector<HostTensor>> prepareInputs(func::FuncOp function,
                                                 const InputOptions &options) {
  std::optional<unsigned> stepArg = getStepArgument(function);
  unsigned n = function.getNumArguments();
  std::vector<HostTensor> inputs(n);
  if (stepArg)
    inputs[*stepArg] = makeStepTensor(0);

  if (options.synthetic) {
    if (options.batch <= 0)
      return function.emitError()
             << "--synthetic-inputs needs a positive --batch";
    for (unsigned i = 0; i < n; ++i) {
      if (stepArg && i == *stepArg)
        continue;
      FailureOr<HostTensor> t = synthesize(function, i, options);
      if (failed(t))
        return failure();
      inputs[i] = std::move(*t);
    }
    return inputs;
  }

  if (options.path.empty()) {
    if (n == (stepArg ? 1u : 0u))
      return inputs;
    return function.emitError()
           << "@" << function.getSymName() << " takes " << n
           << " arguments: pass --inputs=FILE or "
              "--synthetic-inputs --batch=N";
  }
  st::File file;
  if (Status s = st::read(options.path, file); !s.isOk())
    return function.emitError() << s.message();
  std::set<std::string> expected;
  for (unsigned i = 0; i < n; ++i) {
    if (stepArg && i == *stepArg)
      continue;
    std::string name = argName(i);
    expected.insert(name);
    const st::Tensor *entry = file.find(name);
    if (!entry)
      return function.emitError()
             << options.path << " has no '" << name << "' for argument " << i
             << " of @" << function.getSymName();
    if (Status s = fromSafetensors(*entry, inputs[i]); !s.isOk())
      return function.emitError()
             << options.path << ": '" << name << "': " << s.message();
    std::string mismatch = describeMismatch(
        inputs[i], cast<RankedTensorType>(function.getArgumentTypes()[i]));
    if (!mismatch.empty())
      return function.emitError()
             << options.path << ": '" << name << "' " << mismatch;
  }
  for (const st::Tensor &t : file.tensors)
    if (!expected.count(t.name))
      return function.emitError()
             << options.path << " holds '" << t.name << "', which is not an "
             << "argument kiln-run reads (arg0.."
             << "arg" << (n ? n - 1 : 0)
             << (stepArg ? ", without the step argument" : "") << ")";
  return inputs;
}

} // namespace kiln::interp
