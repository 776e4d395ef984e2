//===- SaOps.h - Operations of the sa dialect -------------------*- C++ -*-===//

#ifndef KILN_DIALECT_SA_IR_SAOPS_H
#define KILN_DIALECT_SA_IR_SAOPS_H

#include "dialects/Sa/IR/SaDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"

#include "dialects/Sa/IR/SaEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/Sa/IR/SaAttrs.h.inc"
#define GET_TYPEDEF_CLASSES
#include "dialects/Sa/IR/SaTypes.h.inc"
#define GET_OP_CLASSES
#include "dialects/Sa/IR/SaOps.h.inc"

#include <memory>

namespace kiln::sim::fb {
struct OperandT;
} // namespace kiln::sim::fb

namespace kiln::sa {
/// The FlatBuffers operand of a view on buffer number `buffer`.
std::unique_ptr<sim::fb::OperandT> viewToOperand(ViewAttr view,
                                                 uint32_t buffer);
} // namespace kiln::sa

#endif // KILN_DIALECT_SA_IR_SAOPS_H
