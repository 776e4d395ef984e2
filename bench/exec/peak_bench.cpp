//===- peak_bench.cpp - this machine's vector arithmetic ceilings ---------===//
//
// The rates every kernel figure in docs/performance.md is read against,
// from loops that touch no memory but one cache line:
//   - fp32 FMA (vfmadd231ps zmm), 24 independent accumulators;
//   - bf16 dot products (vdpbf16ps zmm, 2 multiply-adds per fp32 lane),
//     24 independent accumulators;
//   - fp32 FMA whose multiplier is a broadcast scalar from memory
//     (vfmadd231ps zmm, m32{1to16}): the inner loop of a direct
//     convolution that keeps output channels in a vector, as oneDNN's jit
//     and brgconv kernels do. With 16 channels there is one such broadcast
//     per FMA, and this rate bounds those layers.
// Each runs on N threads at once for a fixed number of iterations. Then the
// memory rates that bound the generated loops (batch norm, elementwise
// chains): a read of a 256 MiB buffer, and a copy into another counted as
// bytes read plus written, each thread over its share, best of 3.
//
//   kiln-bench-peak [--threads N] [--iterations N]
//
//===----------------------------------------------------------------------===//

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <immintrin.h>

namespace {

// The asm reads best one piece to a line.
// clang-format off
#define KILN_REPEAT24(X)                                                       \
  X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13)    \
  X(14) X(15) X(16) X(17) X(18) X(19) X(20) X(21) X(22) X(23)
#define KILN_ZERO(r) "vpxord %%zmm" #r ", %%zmm" #r ", %%zmm" #r "\n"
#define KILN_CLOBBER(r) "xmm" #r,

// Each loop is one asm block: operands of 1.0 and 0.5 (normal numbers:
// denormal operands can slow the FMA units), 24 accumulators zeroed, then
// `iterations` rounds of 24 independent instructions.
#define KILN_PEAK_LOOP(name, isa, instruction)                                 \
  __attribute__((target(isa))) void name(long iterations) {                    \
    alignas(64) static const float ones[16] = {1, 1, 1, 1, 1, 1, 1, 1,         \
                                               1, 1, 1, 1, 1, 1, 1, 1};        \
    alignas(64) static const float halves[16] = {.5f, .5f, .5f, .5f, .5f, .5f, \
                                                 .5f, .5f, .5f, .5f, .5f, .5f, \
                                                 .5f, .5f, .5f, .5f};          \
    asm volatile("vmovaps (%1), %%zmm30\n"                                     \
                 "vmovaps (%2), %%zmm31\n"                                     \
                 KILN_REPEAT24(KILN_ZERO)                                      \
                 "1:\n"                                                        \
                 KILN_REPEAT24(instruction)                                    \
                 "dec %0\n"                                                    \
                 "jnz 1b\n"                                                    \
                 : "+r"(iterations)                                            \
                 : "r"(ones), "r"(halves)                                      \
                 : KILN_REPEAT24(KILN_CLOBBER) "xmm30", "xmm31", "cc",         \
                   "memory");                                                  \
  }

#define KILN_FMA(r) "vfmadd231ps %%zmm30, %%zmm31, %%zmm" #r "\n"
#define KILN_DOT(r) "vdpbf16ps %%zmm30, %%zmm31, %%zmm" #r "\n"
// The multiplier is element 0 of `ones`, broadcast from memory.
#define KILN_BFMA(r) "vfmadd231ps (%1)%{1to16%}, %%zmm31, %%zmm" #r "\n"
KILN_PEAK_LOOP(fmaLoop, "avx512f", KILN_FMA)
KILN_PEAK_LOOP(dotLoop, "avx512f,avx512bf16", KILN_DOT)
KILN_PEAK_LOOP(broadcastLoop, "avx512f", KILN_BFMA)
// clang-format on

/// GFLOP/s of `loop` on `threads` threads, `flopsPerIteration` each.
double rate(void (*loop)(long), long iterations, int threads,
            double flopsPerIteration) {
  loop(iterations / 100); // wake the cores up
  auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back(loop, iterations);
  for (std::thread &t : pool)
    t.join();
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return flopsPerIteration * double(iterations) * threads / seconds / 1e9;
}

/// Best GB/s of 3 runs of `share(thread, threads)` on `threads` threads,
/// each run moving `bytes`.
template <typename Share>
double bandwidth(int threads, double bytes, Share share) {
  double best = 0;
  for (int run = 0; run < 3; ++run) {
    auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back(share, t, threads);
    for (std::thread &t : pool)
      t.join();
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    best = std::max(best, bytes / seconds / 1e9);
  }
  return best;
}

__attribute__((target("avx512f"))) long long
readVectors(const __m512i *from, size_t begin, size_t end) {
  __m512i sum = _mm512_setzero_si512();
  for (size_t i = begin; i < end; ++i)
    sum = _mm512_add_epi64(sum, _mm512_load_si512(from + i));
  return _mm512_reduce_add_epi64(sum);
}

__attribute__((target("avx512f"))) void
copyVectors(const __m512i *from, __m512i *to, size_t begin, size_t end) {
  for (size_t i = begin; i < end; ++i)
    _mm512_store_si512(to + i, _mm512_load_si512(from + i));
}

void measureMemory(int threads) {
  const size_t bytes = size_t(256) << 20, vectors = bytes / 64;
  auto *from = static_cast<__m512i *>(std::aligned_alloc(64, bytes));
  auto *to = static_cast<__m512i *>(std::aligned_alloc(64, bytes));
  if (!from || !to) {
    std::fprintf(stderr, "kiln-bench-peak: cannot allocate 512 MiB\n");
    std::exit(1);
  }
  std::memset(from, 1, bytes); // fault the pages in before timing
  std::memset(to, 2, bytes);
  // Each sum goes to an empty asm statement the compiler must assume reads
  // it, so the reads cannot be optimized away (a store to an atomic that
  // nothing loads could be, and clang 22 removed the whole loop).
  auto first = [&](int t, int n) { return vectors * size_t(t) / size_t(n); };
  double read = bandwidth(threads, double(bytes), [&](int t, int n) {
    long long sum = readVectors(from, first(t, n), first(t + 1, n));
    asm volatile("" : : "r"(sum));
  });
  double copy = bandwidth(threads, 2.0 * double(bytes), [&](int t, int n) {
    copyVectors(from, to, first(t, n), first(t + 1, n));
  });
  std::printf("memory read (256 MiB)              %7.1f GB/s\n", read);
  std::printf("memory copy (read + written)       %7.1f GB/s\n", copy);
  std::free(from);
  std::free(to);
}

} // namespace

int main(int argc, char **argv) {
  int threads = 2;
  long iterations = 50'000'000;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc)
      threads = std::atoi(argv[++i]);
    else if (a == "--iterations" && i + 1 < argc)
      iterations = std::atol(argv[++i]);
    else {
      std::fprintf(stderr, "usage: kiln-bench-peak [--threads N] "
                           "[--iterations N]\n");
      return 2;
    }
  }
  if (threads < 1 || iterations < 100) {
    std::fprintf(stderr, "kiln-bench-peak: --threads must be >= 1 and "
                         "--iterations >= 100\n");
    return 2;
  }
  if (!__builtin_cpu_supports("avx512f")) {
    std::fprintf(stderr, "kiln-bench-peak: this CPU has no AVX-512\n");
    return 1;
  }
  // 24 instructions of 16 lanes: 2 flops per FMA lane, 4 per dot lane.
  std::printf("threads %d\n", threads);
  std::printf("fp32 FMA (register operands)       %7.1f GFLOP/s\n",
              rate(fmaLoop, iterations, threads, 24 * 16 * 2));
  std::printf("fp32 FMA (broadcast from memory)   %7.1f GFLOP/s\n",
              rate(broadcastLoop, iterations, threads, 24 * 16 * 2));
  if (__builtin_cpu_supports("avx512bf16"))
    std::printf("bf16 dot product (vdpbf16ps)       %7.1f GFLOP/s\n",
                rate(dotLoop, iterations, threads, 24 * 16 * 4));
  else
    std::printf("bf16 dot product: no avx512_bf16 on this CPU\n");
  measureMemory(threads);
  return 0;
}
