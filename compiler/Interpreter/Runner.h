//===- Runner.h - What kiln-run does with a module --------------*- C++ -*-===//
//
// Part of Kiln. The logic behind the kiln-run command line (the tool is a
// thin main that fills RunOptions): set up the variables, build the inputs,
// call the function for a number of steps printing the loss (and learning
// rate), or check its gradients; save variables and results.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_INTERPRETER_RUNNER_H
#define KILN_COMPILER_INTERPRETER_RUNNER_H

#include "compiler/Interpreter/GradientCheck.h"
#include "compiler/Interpreter/Inputs.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>

namespace kiln::interp {

struct RunOptions {
  /// The function to run; empty means `train_step` if the module has one,
  /// else `forward`.
  std::string function;
  /// Initializes variables (and synthetic inputs) deterministically.
  uint64_t seed = 0;
  /// Variables from this safetensors file instead of their initializers.
  std::string loadPath;
  /// Writes every variable here after the run.
  std::string savePath;
  InputOptions inputs;
  /// Calls of the function; the step argument, if any, counts from
  /// `firstStep`.
  int64_t steps = 1;
  int64_t firstStep = 0;
  /// Prints every result of every call, up to `printLimit` values each.
  bool printResults = false;
  size_t printLimit = 16;
  /// Writes the last call's results as result0, result1, ...
  std::string saveResultsPath;
  /// Checks the gradients instead of running steps.
  std::optional<GradientCheckOptions> gradientCheck;
  /// The forward function a gradient check differentiates.
  std::string forwardFunction = "forward";
};

/// Adds the dialects kiln-run executes (kiln, arith, func).
void registerInterpreterDialects(mlir::DialectRegistry &registry);

/// Runs `module` as `options` say, printing to `out`; errors are emitted as
/// diagnostics. Fails on any error, a non-finite loss or a failed gradient
/// check.
mlir::LogicalResult run(mlir::ModuleOp module, const RunOptions &options,
                        llvm::raw_ostream &out);

} // namespace kiln::interp

#endif // KILN_COMPILER_INTERPRETER_RUNNER_H
