/*===- abi.h - The Kiln runtime's C ABI ---------------------------*- C -*-===*
 *
 * The only header compiled Kiln models depend on. Plain C: POD descriptors,
 * status returns, symbols named kiln_rt_<noun>_<verb>.
 *
 * Versioning (in the manner of IREE's executable_library.h): the ABI carries a
 * major and a minor version. A minor bump only appends — new functions, new
 * enum values, new fields at the *end* of a descriptor — so code built
 * against an older minor keeps working. Descriptors that callers fill in
 * start with `abi_version`, which the caller sets to KILN_RT_ABI_VERSION;
 * the runtime rejects a different major and reads only the fields that
 * existed in the caller's minor. Anything else is a major bump.
 *
 * Parts: status and version (this file); the input pipeline (data.h). Later
 * parts (kernels, collectives, checkpoints) get their own headers included
 * from here.
 *
 *===----------------------------------------------------------------------===*/
#ifndef KILN_RT_ABI_H
#define KILN_RT_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_RT_ABI_VERSION_MAJOR 0
#define KILN_RT_ABI_VERSION_MINOR 3
/* major in the high 16 bits, minor in the low 16 bits. */
#define KILN_RT_ABI_VERSION                                                    \
  ((uint32_t)((KILN_RT_ABI_VERSION_MAJOR << 16) | KILN_RT_ABI_VERSION_MINOR))

#if defined(__GNUC__)
#define KILN_RT_API __attribute__((visibility("default")))
#define KILN_RT_MUST_USE __attribute__((warn_unused_result))
#else
#define KILN_RT_API
#define KILN_RT_MUST_USE
#endif

/* The version this runtime implements (KILN_RT_ABI_VERSION at its build). */
KILN_RT_API uint32_t kiln_rt_abi_version(void);

/*===------------------------------------------------------------------===*
 * Status
 *===------------------------------------------------------------------===*/

/* Values match kiln::StatusCode. */
typedef enum kiln_rt_status_code_e {
  KILN_RT_STATUS_OK = 0,
  KILN_RT_STATUS_INVALID_ARGUMENT = 1,
  KILN_RT_STATUS_NOT_FOUND = 2,
  KILN_RT_STATUS_DATA_LOSS = 3,
  KILN_RT_STATUS_OUT_OF_RANGE = 4,
  KILN_RT_STATUS_IO_ERROR = 5,
  KILN_RT_STATUS_UNIMPLEMENTED = 6,
  KILN_RT_STATUS_INTERNAL = 7,
  KILN_RT_STATUS_CANCELLED = 8,
} kiln_rt_status_code_t;

/* NULL means success. A non-NULL status is owned by the caller and must be
 * released with kiln_rt_status_free. */
typedef struct kiln_rt_status_s *kiln_rt_status_t;

KILN_RT_API kiln_rt_status_code_t kiln_rt_status_code(kiln_rt_status_t status);
/* "OK" for NULL; otherwise the message, valid until kiln_rt_status_free. */
KILN_RT_API const char *kiln_rt_status_message(kiln_rt_status_t status);
KILN_RT_API void kiln_rt_status_free(kiln_rt_status_t status);

#ifdef __cplusplus
} /* extern "C" */
#endif

#include "kiln/rt/data.h"

#endif /* KILN_RT_ABI_H */
