//===- ExportSaProgram.h - An sa.program as a program file -------*- C++ -*-===//
//
// Part of Kiln. The one way out of the sa dialect into the FlatBuffers
// program (systolic/schema/program.fbs) that kiln-sim and the systolic
// executables load: kilnc's --emit=ksap and embedding use the function,
// kiln-translate --export-sa-program the translation.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_TARGET_SYSTOLIC_EXPORTSAPROGRAM_H
#define KILN_COMPILER_TARGET_SYSTOLIC_EXPORTSAPROGRAM_H

#include "kiln/sim/Program.h"

#include "mlir/IR/BuiltinOps.h"

#include <memory>

namespace kiln::sa {

/// Translates the single `sa.program` of `module` and verifies it as its
/// loaders will, so that a bad program fails here, at its source. Errors are
/// emitted on the module or the program, prefixed by `tool` ("kilnc"):
/// "<tool>: expected one sa.program" and
/// "<tool>: the systolic program does not verify: <why>".
mlir::FailureOr<std::unique_ptr<sim::Program>>
exportSaProgram(mlir::ModuleOp module, llvm::StringRef tool);

/// Registers the translation `export-sa-program` (MLIR to a .ksap file).
void registerExportSaProgramTranslation();

} // namespace kiln::sa

#endif // KILN_COMPILER_TARGET_SYSTOLIC_EXPORTSAPROGRAM_H
