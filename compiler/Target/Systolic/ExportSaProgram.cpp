//===- ExportSaProgram.cpp - An sa.program as a program file --------------===//

#include "compiler/Target/Systolic/ExportSaProgram.h"

#include "compiler/Target/Systolic/SaToProgram.h"

#include "mlir/Tools/mlir-translate/Translation.h"

using namespace mlir;

namespace kiln::sa {

FailureOr<std::unique_ptr<sim::Program>> exportSaProgram(ModuleOp module,
                                                         StringRef tool) {
  auto programs = module.getOps<ProgramOp>();
  if (std::distance(programs.begin(), programs.end()) != 1)
    return module.emitError() << tool << ": expected one sa.program";
  ProgramOp programOp = *programs.begin();
  std::unique_ptr<sim::Program> program;
  if (failed(translateToProgram(programOp, program)))
    return failure();
  kiln::Status verified = sim::verifyProgram(*program, targetOf(programOp));
  if (!verified.isOk())
    return programOp.emitError()
           << tool << ": the systolic program does not verify: "
           << verified.message();
  return program;
}

void registerExportSaProgramTranslation() {
  TranslateFromMLIRRegistration registration(
      "export-sa-program",
      "Write the module's sa.program as a FlatBuffers program (.ksap)",
      [](ModuleOp module, llvm::raw_ostream &os) -> LogicalResult {
        FailureOr<std::unique_ptr<sim::Program>> program =
            exportSaProgram(module, "kiln-export-sa-program");
        if (failed(program))
          return failure();
        std::vector<uint8_t> bytes = sim::serializeProgram(**program);
        os.write(reinterpret_cast<const char *>(bytes.data()), bytes.size());
        return success();
      },
      [](DialectRegistry &registry) { registry.insert<SaDialect>(); });
}

} // namespace kiln::sa
