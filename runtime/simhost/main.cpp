//===- main.cpp - main() of a systolic-target training executable ---------===//
//
// Linked with the object file `kilnc --target=systolic` writes, which defines
// kiln_sa_program_v1 (kiln/rt/sa_program.h); everything else is runSimHost.

#include "kiln/rt/simhost/host.h"

int main(int argc, char **argv) {
  return kiln::rt::simhost::runSimHost(argc, argv, kiln_sa_program_v1);
}
