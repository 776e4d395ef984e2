//===- direct_entry.cpp - An SMPI executable started without smpirun ------===//
//
// `kilnc --smpi` links a shared object, which smpirun loads once per
// simulated rank. Started by hand it would crash at address 0: the link
// line gives it the dynamic loader (as glibc's libc.so has) and this entry
// point, which says how to run it instead.
//
//===----------------------------------------------------------------------===//

#include "kiln/rt/exec/trainer.h"

#include <unistd.h>

extern "C" {

__attribute__((used, section(".interp"))) const char
    kiln_smpi_interpreter[] = "/lib64/ld-linux-x86-64.so.2";

/// The entry point (-e): the kernel enters it with the stack 16-byte
/// aligned and no return address, hence the realignment; it never returns.
__attribute__((noreturn, force_align_arg_pointer)) void
kiln_smpi_direct_entry() {
  static const char message[] =
      "kiln: this executable is built for SimGrid's smpirun (kilnc --smpi); "
      "run it with runtime/smpi/cluster.py run, or smpirun -np N -platform "
      "FILE -hostfile FILE --cfg=smpi/privatization:dlopen EXE ARGS "
      "(docs/scaling.md)\n";
  ssize_t written = write(2, message, sizeof(message) - 1);
  (void)written;
  _exit(kiln::rt::exec::kExitUsage);
}

} // extern "C"
