//===- Passes.td - Kiln passes -------------------------------*- tablegen -*-===//
//
// Every Kiln pass, grouped by stage and alphabetical within a group. Flags are
// `kiln-<verb>-<noun>`; passes are thin drivers over public pattern and
// analysis functions.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PASSES_PASSES_TD
#define KILN_PASSES_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// Training step
//===----------------------------------------------------------------------===//

def KilnAutodiff : Pass<"kiln-autodiff", "mlir::ModuleOp"> {
  let summary = "Builds the training step: forward, loss and parameter gradients";
  let description = [{
    Differentiates the forward function (whose first result is the scalar
    loss) in reverse mode and adds a training-step function that returns the
    forward results followed by the gradient of every parameter, in
    declaration order, each result marked `kiln.gradient_of = @parameter`.
    The forward function's `kiln.assign`s (batch-norm running statistics)
    stay in the step. Each op's gradient comes from its GradientOpInterface;
    an op the loss depends on that has none is an error naming the op.
  }];
  let options = [
    Option<"forwardFunction", "forward", "std::string", /*default=*/"\"forward\"",
           "The function to differentiate">,
    Option<"stepFunction", "step", "std::string", /*default=*/"\"train_step\"",
           "The name of the training-step function to create">
  ];
  let dependentDialects = ["mlir::arith::ArithDialect"];
}

//===----------------------------------------------------------------------===//
// Analysis
//===----------------------------------------------------------------------===//

def KilnModelStats : Pass<"kiln-model-stats", "mlir::ModuleOp"> {
  let summary = "Prints a model's parameter count and multiply-adds per example";
  let description = [{
    Counts the elements of every `parameter` variable (and, separately, of the
    `state` variables), and sums the multiply-adds of every op implementing
    `CostOpInterface` in each function. A dynamic batch dimension is counted
    as 1, so a model file reports its cost per example; a function with a
    static batch reports per step and per example. The numbers follow the
    published convention (convolutions and dense layers), so ResNet-50 v1.5
    reports 25,557,032 parameters and 4.09 G multiply-adds per 224x224 image.
    Changes nothing.
  }];
  let options = [
    Option<"perOp", "per-op", "bool", /*default=*/"false",
           "Also list the multiply-adds of every counted op">
  ];
}

#endif // KILN_PASSES_PASSES_TD
