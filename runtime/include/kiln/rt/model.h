/*===- model.h - The model ABI: compiled training step <-> runtime -*- C -*-===*
 *
 * The C side of docs/model-abi.md. `kilnc` compiles a model into one object
 * file that provides the symbols declared under "provided by the
 * compiled model"; the runtime's `main` (runtime/exec) is linked with it and
 * provides the symbols under "provided by the runtime", which the generated
 * code calls back.
 *
 * Versioning (as abi.h and IREE's executable_library.h): the manifest carries
 * "abi": KILN_RT_MODEL_ABI_VERSION. The runtime refuses a manifest whose
 * version differs; any change to the declarations below or to the meaning of
 * an existing manifest field bumps it, except an optional (weak) symbol that
 * a runtime does without when an object lacks it. Everything here is plain C
 * and POD.
 *
 * This header is the one home of the version and of the symbol names: the
 * compiler includes it too (KilnToLinalg, Target/X86), and spells every
 * symbol it defines or calls through the *_SYMBOL macros below.
 *
 *===----------------------------------------------------------------------===*/
#ifndef KILN_RT_MODEL_H
#define KILN_RT_MODEL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_RT_MODEL_ABI_VERSION 5

/* The names of the symbols declared below, as strings for the compiler. A
 * step is `kiln_model_<role>_step` (role "train" or "eval"), which MLIR's C
 * interface (llvm.emit_c_interface) defines as `_mlir_ciface_<name>`. */
#define KILN_RT_MODEL_MANIFEST_SYMBOL "kiln_model_manifest"
#define KILN_RT_MODEL_TARGET_SYMBOL "kiln_model_target"
#define KILN_RT_MODEL_STEP_PREFIX "kiln_model_"
#define KILN_RT_MODEL_STEP_SUFFIX "_step"
#define KILN_RT_KERNEL_CALL_SYMBOL "kiln_rt_kernel_call"
#define KILN_RT_ALLREDUCE_START_SYMBOL "kiln_rt_allreduce_start"
#define KILN_RT_ALLREDUCE_WAIT_SYMBOL "kiln_rt_allreduce_wait"
#define KILN_RT_PARALLEL_FOR_SYMBOL "kiln_rt_parallel_for"
#define KILN_RT_SERIAL_CALL_SYMBOL "kiln_rt_serial_call"

/* The runtime's per-process state (kernels, communicator). Opaque to the
 * generated code, which only passes it back. */
typedef struct kiln_rt_context_s kiln_rt_context_t;

/* MLIR's descriptor of a `memref<?xi8>` (the arena): allocated and aligned
 * base pointers, offset 0, size = arena_bytes, stride 1. The layout is MLIR's
 * StridedMemRefType<int8_t, 1>, which `_mlir_ciface_` functions receive by
 * pointer. */
typedef struct kiln_rt_arena_ref_s {
  uint8_t *allocated;
  uint8_t *aligned;
  int64_t offset;
  int64_t size;
  int64_t stride;
} kiln_rt_arena_ref_t;

/*===------------------------------------------------------------------===*
 * Provided by the compiled model
 *===------------------------------------------------------------------===*/

/* The manifest: the arena, the variables, the functions, the library calls
 * and the allreduce buckets (model-abi.md), as a FlatBuffers buffer of the
 * schema kiln/rt/manifest.fbs (root Manifest, identifier "KMAN"), 8-byte
 * aligned; its size in bytes is stored to *size. */
const uint8_t *kiln_model_manifest(size_t *size);

/* The CPU the code was generated for: NUL-terminated JSON
 * {"cpu": "<LLVM CPU name>", "features": ["avx2", "avx512f", ...]}, the
 * features being those of cpu_features.h that the CPU has. Optional (weak):
 * objects from before it lack it, and the runtime then skips its check. */
const char *kiln_model_target(void) __attribute__((weak));

/* One training step / one evaluation step. Inputs are read from and outputs
 * written to their arena slots; variables are updated in place. */
void _mlir_ciface_kiln_model_train_step(kiln_rt_context_t *ctx,
                                        kiln_rt_arena_ref_t *arena);
void _mlir_ciface_kiln_model_eval_step(kiln_rt_context_t *ctx,
                                       kiln_rt_arena_ref_t *arena);

/*===------------------------------------------------------------------===*
 * Provided by the runtime (called by the generated code)
 *===------------------------------------------------------------------===*/

/* Runs library kernel `call_id` (an index into the manifest's "calls"). Its
 * primitives were created at start-up bound to their arena offsets. A failure
 * is a bug: the runtime prints the call and aborts the process. */
void kiln_rt_kernel_call(kiln_rt_context_t *ctx, int32_t call_id);

/* Starts averaging bucket `bucket_id` over the ranks, in place; returns at
 * once. */
void kiln_rt_allreduce_start(kiln_rt_context_t *ctx, int32_t bucket_id);

/* Blocks until bucket `bucket_id`'s average is in its tensors. */
void kiln_rt_allreduce_wait(kiln_rt_context_t *ctx, int32_t bucket_id);

/* MLIR's expanded descriptor of a one-dimensional memref. */
#define KILN_RT_MEMREF1D(T, name)                                              \
  T *name##_allocated, T *name##_aligned, int64_t name##_offset,               \
      int64_t name##_size, int64_t name##_stride

/* A kernel of a compiled step: runs one loop over [begin, end) of its first
 * dimension. The arena comes as a memref<?xi8>; `table` (a memref<?xi64>)
 * holds the byte offsets in the arena of the buffers this call works on, so
 * that calls differing only in those share one kernel. */
typedef void (*kiln_rt_loop_kernel_t)(KILN_RT_MEMREF1D(uint8_t, arena),
                                      int64_t begin, int64_t end,
                                      KILN_RT_MEMREF1D(const int64_t, table));

/* Runs `kernel` over [begin, end) split into one contiguous chunk per thread
 * of the runtime's pool (the OpenMP pool oneDNN uses), and returns when all
 * are done. `site` identifies the call: an index into the manifest's
 * "sites", which names the kiln op and model line the loop comes from; the
 * runtime uses it only to attribute time when profiling. */
void kiln_rt_parallel_for(kiln_rt_context_t *ctx, kiln_rt_loop_kernel_t kernel,
                          KILN_RT_MEMREF1D(uint8_t, arena), int64_t begin,
                          int64_t end, KILN_RT_MEMREF1D(const int64_t, table),
                          int32_t site);

/* Runs a serial `kernel` once on the calling thread (begin = end = 0).
 * `site` as for kiln_rt_parallel_for. */
void kiln_rt_serial_call(kiln_rt_context_t *ctx, kiln_rt_loop_kernel_t kernel,
                         KILN_RT_MEMREF1D(uint8_t, arena),
                         KILN_RT_MEMREF1D(const int64_t, table), int32_t site);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KILN_RT_MODEL_H */
