/*===- sa_program.h - The program a systolic-target executable embeds ---===*
 *
 * `kilnc --target=systolic` writes one object file that defines a single
 * symbol, kiln_sa_program_v1, and links it with the host runtime
 * (runtime/simhost), whose main() loads the program into the simulator.
 * The symbol's name carries the ABI's major version: a runtime of another
 * major version fails to link instead of misreading the object. The struct
 * itself also carries the version, checked at start-up.
 *
 *   data, size  the serialized FlatBuffers program (systolic/schema/
 *               program.fbs: "KSAP" identifier, its own schema version),
 *               16-byte aligned; verified by the host before use.
 *   info        NUL-terminated JSON written by kilnc, what the program does
 *               not say itself (docs/systolic.md):
 *                 {"model": "fmnist_resnet20", "batch": 8,
 *                  "precision": "bf16", "profile": "tpuv3",
 *                  "inputs":  {"images": "arg0", "labels": "arg1", "step": "arg2"},
 *                  "outputs": {"loss": "result0", "logits": "result1",
 *                              "learning_rate": "result2"},
 *                  "schedule": {"kind": "cosine_decay",
 *                               "variable": "kiln.lr_schedule",
 *                               "slots": ["lr", ...]},
 *                  "eval": false}
 *               Unknown members are ignored (minor additions).
 *
 *===----------------------------------------------------------------------===*/
#ifndef KILN_RT_SA_PROGRAM_H
#define KILN_RT_SA_PROGRAM_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_RT_SA_PROGRAM_ABI_VERSION 1

typedef struct kiln_rt_sa_program_v1 {
  uint32_t abi_version; /* KILN_RT_SA_PROGRAM_ABI_VERSION */
  uint32_t reserved;    /* 0 */
  const uint8_t *data;
  uint64_t size;
  const char *info;
} kiln_rt_sa_program_v1_t;

/* Defined by the object file kilnc --target=systolic writes. */
extern const kiln_rt_sa_program_v1_t kiln_sa_program_v1;

#ifdef __cplusplus
}
#endif

#endif /* KILN_RT_SA_PROGRAM_H */
