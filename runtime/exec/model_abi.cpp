//===- model_abi.cpp - The runtime's entry points called by compiled code -===//
//
// model.h: kiln_rt_kernel_call, kiln_rt_allreduce_start/_wait. They return
// nothing, so every failure below is reported and ends the process: a bad id
// is a compiler bug, and a collective that fails on one rank cannot be
// finished by the others.

#include "kiln/rt/exec/context.h"

#include <cstdio>
#include <cstdlib>
#include <string_view>

// The compiler calls these by the names model.h spells for it; a definition
// that drifted from them would only fail when a model is linked.
#define KILN_RT_CHECK_SYMBOL(name)                                             \
  static_assert(std::string_view(__func__) == name,                            \
                "model.h's symbol name differs from the definition")

static void checkContext(kiln_rt_context_t *ctx, const char *fn) {
  if (!ctx || !ctx->kernels || !ctx->comm) {
    std::fprintf(stderr, "kiln runtime: %s called without a runtime context "
                         "[%s:%d]\n",
                 fn, __FILE__, __LINE__);
    std::abort();
  }
}

extern "C" void kiln_rt_kernel_call(kiln_rt_context_t *ctx, int32_t call_id) {
  KILN_RT_CHECK_SYMBOL(KILN_RT_KERNEL_CALL_SYMBOL);
  checkContext(ctx, KILN_RT_KERNEL_CALL_SYMBOL);
  ctx->kernels->execute(call_id);
  // Between kernels is where outstanding gradient reductions can advance.
  ctx->comm->progress();
}

extern "C" void kiln_rt_allreduce_start(kiln_rt_context_t *ctx,
                                        int32_t bucket_id) {
  KILN_RT_CHECK_SYMBOL(KILN_RT_ALLREDUCE_START_SYMBOL);
  checkContext(ctx, KILN_RT_ALLREDUCE_START_SYMBOL);
  ctx->comm->allreduceStart(bucket_id);
}

extern "C" void kiln_rt_allreduce_wait(kiln_rt_context_t *ctx,
                                       int32_t bucket_id) {
  KILN_RT_CHECK_SYMBOL(KILN_RT_ALLREDUCE_WAIT_SYMBOL);
  checkContext(ctx, KILN_RT_ALLREDUCE_WAIT_SYMBOL);
  ctx->comm->allreduceWait(bucket_id);
}
