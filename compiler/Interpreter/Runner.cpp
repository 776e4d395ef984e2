//===- Runner.cpp - What kiln-run does with a module
//-----------------------===//

#include "compiler/Interpreter/Runner.h"

#include "dialects/Kiln/IR/KilnDialect.h"
#include "kiln/rt/safetensors.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/Support/Format.h"

#include <cmath>

using namespace mlir;

namespace kiln::interp {

namespace {

func::FuncOp findFunction(ModuleOp module, StringRef name) {
  return SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
      module, StringAttr::get(module.getContext(), name));
}

bool isScalarF32(const HostTensor &t) {
  return t.type == DType::F32 && t.shape.empty();
}

/// The learning-rate result: the one marked `kiln.learning_rate` (as
/// --kiln-optimizer marks it), else, positionally, a scalar f32 after the
/// loss and logits of a function that takes a step argument.
std::optional<unsigned> getLearningRateResult(func::FuncOp function) {
  unsigned n = function.getNumResults();
  for (unsigned i = 0; i < n; ++i)
    if (function.getResultAttr(i, "kiln.learning_rate"))
      return i;
  auto scalarF32 =
      RankedTensorType::get({}, Float32Type::get(function.getContext()));
  if (n >= 3 && getStepArgument(function) &&
      function.getResultTypes()[2] == scalarF32)
    return 2;
  return std::nullopt;
}

LogicalResult saveResults(func::FuncOp function,
                          const std::vector<HostTensor> &results,
                          const std::string &path) {
  rt::safetensors::File file;
  for (size_t i = 0; i < results.size(); ++i)
    file.tensors.push_back(
        toSafetensors(results[i], "result" + std::to_string(i)));
  file.metadata["function"] = function.getSymName().str();
  if (Status s = rt::safetensors::write(path, file); !s.isOk())
    return function.emitError() << s.message();
  return success();
}

} // namespace

void registerInterpreterDialects(DialectRegistry &registry) {
  registry.insert<KilnDialect, arith::ArithDialect, func::FuncDialect>();
}

LogicalResult run(ModuleOp module, const RunOptions &options,
                  llvm::raw_ostream &out) {
  std::string name = options.function;
  if (name.empty())
    name = findFunction(module, "train_step") ? "train_step" : "forward";
  func::FuncOp function = findFunction(module, name);
  if (!function)
    return module.emitError() << "no function @" << name
                              << " in the module (choose one with --function)";

  FailureOr<VariableStore> store = VariableStore::declare(module);
  if (failed(store))
    return failure();
  if (!options.loadPath.empty() ? failed(store->load(options.loadPath))
                                : failed(store->initialize(options.seed)))
    return failure();

  InputOptions inputOptions = options.inputs;
  inputOptions.seed = options.seed;
  FailureOr<std::vector<HostTensor>> inputs =
      prepareInputs(function, inputOptions);
  if (failed(inputs))
    return failure();

  if (options.gradientCheck) {
    func::FuncOp forward = findFunction(module, options.forwardFunction);
    if (!forward)
      return module.emitError()
             << "--check-gradients needs the forward function @"
             << options.forwardFunction << " next to @" << name;
    GradientCheckOptions check = *options.gradientCheck;
    check.seed = options.seed;
    return checkGradients(function, forward, *inputs, *store, check, out);
  }

  std::optional<unsigned> stepArg = getStepArgument(function);
  std::optional<unsigned> lrResult = getLearningRateResult(function);
  std::vector<HostTensor> lastResults;
  for (int64_t i = 0; i < options.steps; ++i) {
    int64_t step = options.firstStep + i;
    if (stepArg)
      (*inputs)[*stepArg] = makeStepTensor(step);
    CallOptions callOptions;
    callOptions.context = "step " + std::to_string(step);
    FailureOr<CallResult> result = call(function, *inputs, *store, callOptions);
    if (failed(result))
      return failure();
    const std::vector<HostTensor> &results = result->results;
    if (!results.empty() && isScalarF32(results[0])) {
      double loss = results[0].floats[0];
      out << "step " << step << " loss " << llvm::format("%.9g", loss);
      if (lrResult && isScalarF32(results[*lrResult]))
        out << " lr "
            << llvm::format("%.9g",
                            static_cast<double>(results[*lrResult].floats[0]));
      out << "\n";
      if (!std::isfinite(loss))
        return function.emitError()
               << "(step " << step << ") the loss is " << loss << "; stopping";
    }
    if (options.printResults)
      for (size_t r = 0; r < results.size(); ++r)
        out << "result" << r << ": tensor<" << typeString(results[r]) << "> = ["
            << formatValues(results[r], options.printLimit) << "]\n";
    applyAssignments(*store, std::move(result->assignments));
    lastResults = std::move(result->results);
  }
  out.flush();

  if (!options.saveResultsPath.empty() &&
      failed(saveResults(function, lastResults, options.saveResultsPath)))
    return failure();
  if (!options.savePath.empty() && failed(store->save(options.savePath)))
    return failure();
  return success();
}

} // namespace kiln::interp
