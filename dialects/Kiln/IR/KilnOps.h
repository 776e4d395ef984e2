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
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir {
class OpAsmParser;
class OpAsmPrinter;
} // namespace mlir

namespace kiln {
/// The `custom<ParameterTypes>` directive of kiln.fused_sgd_update: one type
/// per parameter, shared by its weight, gradient, velocity and results, then
/// `copies <element type>` when the update also writes rounded copies.
mlir::ParseResult
parseParameterTypes(mlir::OpAsmParser &parser,
                    llvm::SmallVectorImpl<mlir::Type> &weights,
                    llvm::SmallVectorImpl<mlir::Type> &gradients,
                    llvm::SmallVectorImpl<mlir::Type> &velocities,
                    llvm::SmallVectorImpl<mlir::Type> &newWeights,
                    llvm::SmallVectorImpl<mlir::Type> &newVelocities,
                    llvm::SmallVectorImpl<mlir::Type> &newCopies);
void printParameterTypes(mlir::OpAsmPrinter &printer, mlir::Operation *op,
                         mlir::TypeRange weights, mlir::TypeRange gradients,
                         mlir::TypeRange velocities, mlir::TypeRange newWeights,
                         mlir::TypeRange newVelocities,
                         mlir::TypeRange newCopies);
} // namespace kiln

#define GET_OP_CLASSES
#include "dialects/Kiln/IR/KilnOps.h.inc"

namespace kiln {
/// The fixed parameter slots of a learning-rate schedule (see
/// kiln.learning_rate); step_decay has its boundaries after them.
int64_t getScheduleParamCount(Schedule schedule);

/// The names of a schedule's `count` parameter slots, in order: what the
/// manifests call them and what the executables' --lr, --warmup-steps, ...
/// flags set.
llvm::SmallVector<std::string> getScheduleSlotNames(Schedule schedule,
                                                    int64_t count);
} // namespace kiln

#endif // KILN_DIALECT_KILN_IR_KILNOPS_H
