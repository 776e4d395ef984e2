//===- Passes.h - Kiln passes -----------------------------------*- C++ -*-===//

#ifndef KILN_PASSES_PASSES_H
#define KILN_PASSES_PASSES_H

// The enum types of pass options (Passes.td declares the options with their
// spellings).
#include "passes/Conversion/KilnToSa/SaPassOptions.h"
#include "passes/Layout/AssignLayouts.h"
#include "passes/Optimizer/Optimizer.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace kiln {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

} // namespace kiln

#endif // KILN_PASSES_PASSES_H
