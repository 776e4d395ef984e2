//===- parallel.cpp - kiln_rt_parallel_for, kiln_rt_serial_call -----------===//
//
// Runs the parallel loops of compiled steps on libgomp's thread pool, the one
// oneDNN uses, so kernels and generated loops share one set of threads that
// are already awake. libgomp's own entry point is used because clang's
// OpenMP code generation targets LLVM's runtime instead.
//
// With --profile the context holds a SiteProfile and every call is timed
// against its site (profile.h); without it, the only cost is the test of
// that pointer.
//
//===----------------------------------------------------------------------===//

#include "kiln/rt/exec/context.h"
#include "kiln/rt/exec/gomp.h"
#include "kiln/rt/exec/profile.h"
#include "kiln/rt/model.h"

#include <algorithm>
#include <chrono>

namespace {
struct LoopTask {
  kiln_rt_loop_kernel_t kernel;
  uint8_t *arenaAllocated, *arenaAligned;
  int64_t arenaOffset, arenaSize, arenaStride, begin, end;
  const int64_t *tableAllocated, *tableAligned;
  int64_t tableOffset, tableSize, tableStride;

  void run(int64_t from, int64_t to) const {
    kernel(arenaAllocated, arenaAligned, arenaOffset, arenaSize, arenaStride,
           from, to, tableAllocated, tableAligned, tableOffset, tableSize,
           tableStride);
  }
};

void runChunk(void *data) {
  const LoopTask &task = *static_cast<const LoopTask *>(data);
  int64_t threads = omp_get_num_threads(), thread = omp_get_thread_num();
  int64_t total = task.end - task.begin;
  int64_t chunk = (total + threads - 1) / threads;
  int64_t begin = task.begin + thread * chunk;
  int64_t end = std::min(task.end, begin + chunk);
  if (begin < end)
    task.run(begin, end);
}

/// Runs `task` over its whole range: on the pool, unless one thread would
/// do all the work anyway.
void runOnPool(LoopTask &task) {
  int64_t threads =
      std::min<int64_t>(omp_get_max_threads(), task.end - task.begin);
  if (threads <= 1) {
    task.run(task.begin, task.end);
    return;
  }
  GOMP_parallel(runChunk, &task, unsigned(threads), 0);
}

/// Runs `run` and adds its wall time to `site`.
template <typename Fn>
void timeSite(kiln::rt::exec::SiteProfile &profile, int32_t site, Fn run) {
  auto start = std::chrono::steady_clock::now();
  run();
  profile.record(site, std::chrono::duration<double>(
                           std::chrono::steady_clock::now() - start)
                           .count());
}
} // namespace

extern "C" void kiln_rt_parallel_for(kiln_rt_context_t *ctx,
                                     kiln_rt_loop_kernel_t kernel,
                                     KILN_RT_MEMREF1D(uint8_t, arena),
                                     int64_t begin, int64_t end,
                                     KILN_RT_MEMREF1D(const int64_t, table),
                                     int32_t site) {
  LoopTask task{kernel,       arena_allocated, arena_aligned, arena_offset,
                arena_size,   arena_stride,    begin,         end,
                table_allocated, table_aligned, table_offset,  table_size,
                table_stride};
  if (__builtin_expect(ctx->sites != nullptr, 0)) {
    timeSite(*ctx->sites, site, [&] { runOnPool(task); });
    return;
  }
  runOnPool(task);
}

extern "C" void kiln_rt_serial_call(kiln_rt_context_t *ctx,
                                    kiln_rt_loop_kernel_t kernel,
                                    KILN_RT_MEMREF1D(uint8_t, arena),
                                    KILN_RT_MEMREF1D(const int64_t, table),
                                    int32_t site) {
  LoopTask task{kernel,          arena_allocated, arena_aligned, arena_offset,
                arena_size,      arena_stride,    /*begin=*/0,   /*end=*/0,
                table_allocated, table_aligned,   table_offset,  table_size,
                table_stride};
  if (__builtin_expect(ctx->sites != nullptr, 0)) {
    timeSite(*ctx->sites, site, [&] { task.run(0, 0); });
    return;
  }
  task.run(0, 0);
}
