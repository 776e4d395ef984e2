//===- main.cpp - main() of a compiled Kiln training executable -----------===//
//
// Linked with the object file kilnc writes, which provides the symbols of
// model.h; everything else is runMain (trainer.h).

#include "kiln/rt/exec/trainer.h"

int main(int argc, char **argv) {
  kiln::rt::exec::ModelEntryPoints model;
  model.manifest = kiln_model_manifest;
  model.target = kiln_model_target; // weak: null for older objects
  model.train = _mlir_ciface_kiln_model_train_step;
  model.eval = _mlir_ciface_kiln_model_eval_step;
  return kiln::rt::exec::runMain(argc, argv, model);
}
