//===- KilnInterfaces.h - Per-op knowledge of kiln ops ----------*- C++ -*-===//

#ifndef KILN_DIALECT_KILN_IR_KILNINTERFACES_H
#define KILN_DIALECT_KILN_IR_KILNINTERFACES_H

#include "mlir/IR/OpDefinition.h"

#include "dialects/Kiln/IR/KilnInterfaces.h.inc"

#endif // KILN_DIALECT_KILN_IR_KILNINTERFACES_H
