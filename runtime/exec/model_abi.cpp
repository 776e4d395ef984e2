//===- model_abi.cpp - The runtime's entry points called by compiled code -===//
//
// model.h: kiln_rt_kernel_call, kiln_rt_allreduce_start/_wait. They return
// nothing, so every failure below is reported and ends the process: a bad id
// is a compiler bug, and a collective that fails on one rank cannot be
// finished by the others.

#include "kiln/rt/exec/context.h"

#include <cstdio>
#include <cstdlib>

static void checkContext(kiln_rt_context_t *ctx, const char *fn) {
  if (!ctx || !ctx->kernels || !ctx->comm) {
    std::fprintf(stderr, "kiln runtime: %s called without a runtime context "
                         "[%s:%d]\n",
                 fn, __FILE__, __LINE__);
    std::abort();
  }
}

extern "C" void kiln_rt_kernel_call(kiln_rt_context_t *ctx, int32_t call_id) {
  checkContext(ctx, "kiln_rt_kernel_call");
  ctx->kernels->execute(call_id);
  // Between kernels is where outstanding gradient reductions can advance.
  ctx->comm->progress();
}

extern "C" void kiln_rt_allreduce_start(kiln_rt_context_t *ctx,
                                        int32_t bucket_id) {
  checkContext(ctx, "kiln_rt_allreduce_start");
  ctx->comm->allreduceStart(bucket_id);
}

extern "C" void kiln_rt_allreduce_wait(kiln_rt_context_t *ctx,
                                       int32_t bucket_id) {
  checkContext(ctx, "kiln_rt_allreduce_wait");
  ctx->comm->allreduceWait(bucket_id);
}
