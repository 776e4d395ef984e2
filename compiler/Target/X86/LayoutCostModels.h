//===- LayoutCostModels.h - What a layout costs on x86 ----------*- C++ -*-===//

#ifndef KILN_COMPILER_TARGET_X86_LAYOUTCOSTMODELS_H
#define KILN_COMPILER_TARGET_X86_LAYOUTCOSTMODELS_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace kiln {

/// Attaches the x86 target's knowledge to kiln ops as external interface
/// models: LayoutCostOpInterface on the convolutions, from oneDNN's measured
/// times per layout (`--kiln-layout`'s choice depends on it).
void registerX86TargetInterfaces(mlir::DialectRegistry &registry);

} // namespace kiln

#endif // KILN_COMPILER_TARGET_X86_LAYOUTCOSTMODELS_H
