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

#endif // KILN_DIALECT_KILN_IR_KILNINTERFACES_TD
