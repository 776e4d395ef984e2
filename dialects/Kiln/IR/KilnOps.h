//===- KilnOps.h - Operations of the kiln dialect ---------------*- C++ -*-===//

#ifndef KILN_DIALECT_KILN_IR_KILNOPS_H
#define KILN_DIALECT_KILN_IR_KILNOPS_H

#include "dialects/Kiln/IR/KilnDialect.h"
#include "dialects/Kiln/IR/KilnInterfaces.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/Kiln/IR/KilnEnums.h.inc"

#define GET_OP_CLASSES
#include "dialects/Kiln/IR/KilnOps.h.inc"

namespace kiln {
/// The fixed parameter slots of a learning-rate schedule (see
/// kiln.learning_rate); step_decay has its boundaries after them.
int64_t getScheduleParamCount(Schedule schedule);
} // namespace kiln

#endif // KILN_DIALECT_KILN_IR_KILNOPS_H
