//===- SaDialect.h - The sa dialect -----------------------------*- C++ -*-===//

#ifndef KILN_DIALECT_SA_IR_SADIALECT_H
#define KILN_DIALECT_SA_IR_SADIALECT_H

#include "mlir/IR/Dialect.h"

#include "dialects/Sa/IR/SaDialect.h.inc"

#endif // KILN_DIALECT_SA_IR_SADIALECT_H
