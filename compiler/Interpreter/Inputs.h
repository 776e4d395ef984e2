//===- Inputs.h - Arguments of the interpreted function ---------*- C++ -*-===//
//
// Part of Kiln. kiln-run's arguments come from a safetensors file (tensors
// `arg0`, `arg1`, ...) or are synthesized: normal(0, 1) floats and uniform
// class labels, deterministic for the seed. The optimizer's step counter
// (the argument marked `kiln.step`, or a trailing tensor<i64>) is never read
// from either: kiln-run passes the step number.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_INTERPRETER_INPUTS_H
#define KILN_COMPILER_INTERPRETER_INPUTS_H

#include "compiler/Interpreter/HostTensor.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <optional>
#include <string>
#include <vector>

namespace kiln::interp {

struct InputOptions {
  /// A safetensors file with `arg<i>` for every argument but the step.
  std::string path;
  /// Otherwise synthesize them, with this batch size and seed.
  bool synthetic = false;
  int64_t batch = 0;
  uint64_t seed = 0;
};

/// The index of the step-counter argument of `function`, if it has one.
std::optional<unsigned> getStepArgument(mlir::func::FuncOp function);

/// The class count of a labels argument: the width of the logits of the
/// kiln.softmax_cross_entropy (or its backward) that takes the argument as
/// its labels. Failure if no such op uses it.
mlir::FailureOr<int64_t> getLabelClasses(mlir::BlockArgument labels);

/// Every argument of `function` (the step argument as step 0). Errors name
/// the argument and the file.
mlir::FailureOr<std::vector<HostTensor>>
prepareInputs(mlir::func::FuncOp function, const InputOptions &options);

/// A rank-0 i64 tensor holding `step`.
HostTensor makeStepTensor(int64_t step);

} // namespace kiln::interp

#endif // KILN_COMPILER_INTERPRETER_INPUTS_H
