//===- InitAll.h - Register what Kiln uses ----------------------*- C++ -*-===//
//
// Kiln's tools register only the dialects and passes Kiln uses, so an input
// that strays outside them is rejected early with a clear message.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_INITALL_H
#define KILN_COMPILER_INITALL_H

#include "mlir/IR/DialectRegistry.h"

namespace kiln {

/// Adds every dialect a Kiln program may contain at any stage.
void registerAllKilnDialects(mlir::DialectRegistry &registry);

/// Registers Kiln's passes and pipelines, and the upstream passes its
/// pipelines use, with the global pass registry (for `kiln-opt`).
void registerAllKilnPasses();

} // namespace kiln

#endif // KILN_COMPILER_INITALL_H
