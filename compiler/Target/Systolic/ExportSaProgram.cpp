//===- ExportSaProgram.cpp - kiln-export-sa-program -----------------------===//

#include "compiler/Target/Systolic/SaToProgram.h"
#include "passes/Passes.h"

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_KILNEXPORTSAPROGRAM
#include "passes/Passes.h.inc"

namespace {
struct ExportSaProgramPass
    : impl::KilnExportSaProgramBase<ExportSaProgramPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto programs = module.getOps<sa::ProgramOp>();
    if (std::distance(programs.begin(), programs.end()) != 1) {
      module.emitError("kiln-export-sa-program: expected one sa.program");
      return signalPassFailure();
    }
    if (output.empty()) {
      module.emitError("kiln-export-sa-program: no output file given");
      return signalPassFailure();
    }
    sa::ProgramOp program = *programs.begin();
    std::unique_ptr<sim::Program> prog;
    if (failed(sa::translateToProgram(program, prog)))
      return signalPassFailure();
    // Check it as kiln-sim will, so a bad program fails here, at its source.
    sim::Status s = sim::verifyProgram(*prog, sa::targetOf(program));
    if (s.ok())
      s = sim::saveProgram(*prog, output);
    if (!s.ok()) {
      program.emitError("kiln-export-sa-program: ") << s.message();
      return signalPassFailure();
    }
  }
};
} // namespace
} // namespace kiln
