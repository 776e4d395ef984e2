//===- KilnInterfaces.td - Per-op knowledge of kiln ops ------*- tablegen -*-===//
//
// Passes over kiln IR are generic walks; what differs per op lives on the op
// through these interfaces (DESIGN.md §6.7).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_KILN_IR_KILNINTERFACES_TD
#define KILN_DIALECT_KILN_IR_KILNINTERFACES_TD

include "mlir/IR/OpBase.td"

def Kiln_CostOpInterface : OpInterface<"CostOpInterface"> {
  let cppNamespace = "::kiln";
  let description = [{
    An op whose arithmetic is dominated by multiply-adds (convolutions and
    matrix products). `kiln-model-stats` sums these to report a model's cost;
    the count follows the convention of published figures, which count
    convolutions and fully connected layers only.
  }];
  let methods = [
    InterfaceMethod<[{
        Returns the multiply-adds this op performs, with every dynamic
        dimension taken to be `dynamicDimSize` (1 gives the cost per example
        for a model whose batch dimension is dynamic).
      }],
      "int64_t", "getMultiplyAdds", (ins "int64_t":$dynamicDimSize)>
  ];
}

def Kiln_GradientOpInterface : OpInterface<"GradientOpInterface"> {
  let cppNamespace = "::kiln";
  let description = [{
    An op that reverse-mode autodiff can differentiate through (after
    Enzyme-MLIR's AutoDiffOpInterface). Given the gradients of its results,
    the op builds the ops computing the gradients of its operands at the
    builder's insertion point. `--kiln-autodiff` is a generic walk over this
    interface.
  }];
  let methods = [
    InterfaceMethod<[{
        `resultGradients` has one entry per result, null where the result has
        no gradient. Fills `operandGradients` with one entry per operand,
        null for operands that are not differentiable (labels, statistics).
        Fails, with a diagnostic, if a gradient is asked for that the op
        cannot provide.
      }],
      "::llvm::LogicalResult", "buildGradients",
      (ins "::mlir::OpBuilder &":$builder,
           "::mlir::ArrayRef<::mlir::Value>":$resultGradients,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGradients)>
  ];
}

def Kiln_PrecisionOpInterface : OpInterface<"PrecisionOpInterface"> {
  let cppNamespace = "::kiln";
  let description = [{
    How an op takes part in mixed precision (`--kiln-bf16`): `compute` ops
    (convolutions, dense layers) run on bf16 operands with f32 accumulation;
    `follow` ops work in whatever precision their activations arrive in;
    `f32` ops (the loss) need f32 activations. The operands the policy is
    about are the activations and weights; per-channel parameters and
    statistics stay f32 (master weights).
  }];
  let methods = [
    InterfaceMethod<"The op's bf16 policy.", "::kiln::Bf16Policy",
                    "getBf16Policy">,
    InterfaceMethod<[{
        Indices of the operands (activations, weights) whose precision the
        policy sets; by default the first.
      }],
      "::llvm::SmallVector<unsigned>", "getPrecisionOperands", (ins), [{}],
      [{ return {0}; }]>
  ];
}

def Kiln_ElementwiseOpInterface : OpInterface<"ElementwiseOpInterface"> {
  let cppNamespace = "::kiln";
  let description = [{
    An op computing each element of its single result from the elements at
    the same index of its operands, all of one shape. The op builds that
    scalar computation itself, so one loop can run a chain of such ops:
    `--kiln-fuse` joins chains into `kiln.fused_elementwise`, and the x86
    lowering emits one `linalg.generic` whose body is the chain's scalar
    bodies in order (an op alone is lowered through the same method, which
    keeps fused and unfused results bitwise equal).
  }];
  let methods = [
    InterfaceMethod<[{
        Builds, at the builder's insertion point, the result element from
        `operands` (one element per operand, of the operand's element type,
        or all of them vectors of that type: 16 lanes at a time) and returns
        it with the result's element type (a vector of it for vectors): bf16
        results are rounded there, as storing them would.
      }],
      "::mlir::Value", "buildScalar",
      (ins "::mlir::OpBuilder &":$builder, "::mlir::Location":$loc,
           "::mlir::ValueRange":$operands)>
  ];
}

def Kiln_LayoutOpInterface : OpInterface<"LayoutOpInterface"> {
  let cppNamespace = "::kiln";
  let description = [{
    An op that can compute with its activations stored either NHWC or in
    oneDNN's channel-blocked nChw16c (`--kiln-layout`). The op computes in one
    layout, recorded as its `kiln.layout` attribute (NHWC when absent): every
    layout operand must arrive stored that way and every layout result is
    stored that way. Other 4-D operands (filters) are not affected. An op
    without this interface reads and writes NHWC only.
  }];
  let methods = [
    InterfaceMethod<[{
        Indices of the activation operands whose storage follows the op's
        layout; by default every operand that is a 4-D float tensor.
      }],
      "::llvm::SmallVector<unsigned>", "getLayoutOperands", (ins), [{}],
      [{ return ::kiln::detail::fourDimensionalFloats($_op->getOperandTypes()); }]>,
    InterfaceMethod<[{
        Indices of the results stored in the op's layout; by default every
        result that is a 4-D float tensor.
      }],
      "::llvm::SmallVector<unsigned>", "getLayoutResults", (ins), [{}],
      [{ return ::kiln::detail::fourDimensionalFloats($_op->getResultTypes()); }]>,
    InterfaceMethod<[{
        Whether the op can compute in nChw16c beyond what every op needs
        for it (a multiple of 16 channels in each activation): a slice of
        the channels must also start at a block boundary.
      }],
      "bool", "canComputeBlocked", (ins), [{}], [{ return true; }]>
  ];
}

def Kiln_LayoutCostOpInterface : OpInterface<"LayoutCostOpInterface"> {
  let cppNamespace = "::kiln";
  let description = [{
    What computing in a layout costs an op whose speed depends on it (the
    library convolutions), for `--kiln-layout`'s choice. The dialect only
    declares it: the knowledge belongs to a target, which attaches it as
    external models (compiler/Target/X86). An op without it (loops that
    stream memory the same way in either layout, or no target registered)
    costs the same in every layout.
  }];
  let methods = [
    InterfaceMethod<[{
        Estimated seconds of computing in `layout` (a dynamic batch counts
        as one example).
      }],
      "double", "getLayoutCost", (ins "::kiln::Layout":$layout)>
  ];
}

// Ops of the backward pass (kiln-model-stats counts their cost separately).
def Kiln_BackwardOpTrait : NativeOpTrait<"BackwardOp"> {
  let cppNamespace = "::kiln::OpTrait";
}

#endif // KILN_DIALECT_KILN_IR_KILNINTERFACES_TD
