//===- SaToProgram.h - Serializing sa programs ------------------*- C++ -*-===//
//
// Part of Kiln. The `sa` dialect maps 1:1 onto the FlatBuffers program
// kiln-sim runs: buffers in declaration order, instructions in program
// order with their tokens turned into instruction indices, `sa.source`
// markers into the source-op table. On-chip live ranges are the spans
// between a buffer's first and last use.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_TARGET_SYSTOLIC_SATOPROGRAM_H
#define KILN_COMPILER_TARGET_SYSTOLIC_SATOPROGRAM_H

#include "dialects/Sa/IR/SaOps.h"
#include "kiln/sim/Program.h"

#include <memory>

namespace kiln::sa {

/// Translates `program` (verified IR); fails with a diagnostic on a token
/// that does not come from an instruction.
mlir::LogicalResult translateToProgram(ProgramOp program,
                                       std::unique_ptr<sim::Program> &out);

/// The target configuration of an `sa.program`.
sim::TargetConfig targetOf(ProgramOp program);

} // namespace kiln::sa

#endif // KILN_COMPILER_TARGET_SYSTOLIC_SATOPROGRAM_H
