//===- peak_bench.cpp - this machine's vector arithmetic ceilings ---------===//
//
// The rates every kernel figure in docs/performance.md is read against,
// from loops that touch no memory but one cache line, on AVX-512 (zmm) or,
// on CPUs without it, AVX2 and FMA (ymm, 12 accumulators, the broadcast a
// vbroadcastss per FMA as AVX2 has no embedded broadcast; no bf16):
//   - fp32 FMA (vfmadd231ps zmm), 24 independent accumulators;
//   - bf16 dot products (vdpbf16ps zmm, 2 multiply-adds per fp32 lane),
//     24 independent accumulators;
//   - fp32 FMA whose multiplier is a broadcast scalar from memory
//     (vfmadd231ps zmm, m32{1to16}): the inner loop of a direct
//     convolution that keeps output channels in a vector, as oneDNN's jit
//     and brgconv kernels do. With 16 channels there is one such broadcast
//     per FMA, and this rate bounds those layers.
// Each runs on N threads at once for a fixed number of iterations, its rate
// by the wall clock and per second of CPU time given. Then the
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

#include <time.h>

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

// The same on AVX2's 16 ymm registers: 12 accumulators (enough to cover
// the FMA latency on both pipes), ymm12 for the broadcasts, the operands
// in ymm14 and ymm15.
#define KILN_REPEAT12(X)                                                       \
  X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#define KILN_ZERO_YMM(r) "vxorps %%ymm" #r ", %%ymm" #r ", %%ymm" #r "\n"
#define KILN_PEAK_LOOP_YMM(name, instruction)                                  \
  __attribute__((target("avx2,fma"))) void name(long iterations) {             \
    alignas(32) static const float ones[8] = {1, 1, 1, 1, 1, 1, 1, 1};         \
    alignas(32) static const float halves[8] = {.5f, .5f, .5f, .5f,            \
                                                .5f, .5f, .5f, .5f};           \
    asm volatile("vmovaps (%1), %%ymm14\n"                                     \
                 "vmovaps (%2), %%ymm15\n"                                     \
                 KILN_REPEAT12(KILN_ZERO_YMM)                                  \
                 "1:\n"                                                        \
                 KILN_REPEAT12(instruction)                                    \
                 "dec %0\n"                                                    \
                 "jnz 1b\n"                                                    \
                 : "+r"(iterations)                                            \
                 : "r"(ones), "r"(halves)                                      \
                 : KILN_REPEAT12(KILN_CLOBBER) "xmm12", "xmm14", "xmm15",      \
                   "cc", "memory");                                            \
  }
#define KILN_FMA_YMM(r) "vfmadd231ps %%ymm14, %%ymm15, %%ymm" #r "\n"
#define KILN_BFMA_YMM(r)                                                       \
  "vbroadcastss (%1), %%ymm12\n"                                               \
  "vfmadd231ps %%ymm12, %%ymm15, %%ymm" #r "\n"
KILN_PEAK_LOOP_YMM(fmaLoopAvx2, KILN_FMA_YMM)
KILN_PEAK_LOOP_YMM(broadcastLoopAvx2, KILN_BFMA_YMM)
// clang-format on

/// GFLOP/s of `loop` on `threads` threads, `flopsPerIteration` each: by
/// the wall clock, and per second of CPU time the threads were given times
/// `threads` (`onCpu`), the ceiling with the cores to themselves, which a
/// machine shared with other processes lets the wall clock rate show only
/// in part.
struct Rate {
  double wall, onCpu;
};
Rate rate(void (*loop)(long), long iterations, int threads,
          double flopsPerIteration) {
  loop(iterations / 100); // wake the cores up
  auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  std::vector<double> cpuSeconds(static_cast<size_t>(threads));
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      loop(iterations);
      timespec cpu;
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
      cpuSeconds[size_t(t)] = double(cpu.tv_sec) + 1e-9 * double(cpu.tv_nsec);
    });
  for (std::thread &t : pool)
    t.join();
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  double flops = flopsPerIteration * double(iterations) * threads, cpu = 0;
  for (double s : cpuSeconds)
    cpu += s;
  return {flops / seconds / 1e9, flops / cpu * threads / 1e9};
}

void printRate(const char *what, Rate r) {
  std::printf("%-34s %7.1f GFLOP/s  (%.1f on CPU time)\n", what, r.wall,
              r.onCpu);
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

__attribute__((target("avx2"))) long long
readVectors(const __m256i *from, size_t begin, size_t end) {
  __m256i sum = _mm256_setzero_si256();
  for (size_t i = begin; i < end; ++i)
    sum = _mm256_add_epi64(sum, _mm256_load_si256(from + i));
  __m128i half = _mm_add_epi64(_mm256_castsi256_si128(sum),
                               _mm256_extracti128_si256(sum, 1));
  return _mm_cvtsi128_si64(half) + _mm_extract_epi64(half, 1);
}

__attribute__((target("avx2"))) void
copyVectors(const __m256i *from, __m256i *to, size_t begin, size_t end) {
  for (size_t i = begin; i < end; ++i)
    _mm256_store_si256(to + i, _mm256_load_si256(from + i));
}

/// The memory rates, in vectors of `Vector` (__m512i or __m256i).
template <typename Vector> void measureMemory(int threads) {
  const size_t bytes = size_t(256) << 20, vectors = bytes / sizeof(Vector);
  auto *from = static_cast<Vector *>(std::aligned_alloc(64, bytes));
  auto *to = static_cast<Vector *>(std::aligned_alloc(64, bytes));
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
  std::printf("threads %d\n", threads);
  if (!__builtin_cpu_supports("avx512f")) {
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
      std::fprintf(stderr, "kiln-bench-peak: this CPU has neither AVX-512 "
                           "nor AVX2 and FMA\n");
      return 1;
    }
    // 12 instructions of 8 lanes, 2 flops per lane.
    printRate("fp32 FMA (register operands, ymm)",
              rate(fmaLoopAvx2, iterations, threads, 12 * 8 * 2));
    printRate("fp32 FMA (vbroadcastss + FMA, ymm)",
              rate(broadcastLoopAvx2, iterations, threads, 12 * 8 * 2));
    std::printf("bf16 dot product: no AVX-512 on this CPU\n");
    measureMemory<__m256i>(threads);
    return 0;
  }
  // 24 instructions of 16 lanes: 2 flops per FMA lane, 4 per dot lane.
  printRate("fp32 FMA (register operands)",
            rate(fmaLoop, iterations, threads, 24 * 16 * 2));
  printRate("fp32 FMA (broadcast from memory)",
            rate(broadcastLoop, iterations, threads, 24 * 16 * 2));
  if (__builtin_cpu_supports("avx512bf16"))
    printRate("bf16 dot product (vdpbf16ps)",
              rate(dotLoop, iterations, threads, 24 * 16 * 4));
  else
    std::printf("bf16 dot product: no avx512_bf16 on this CPU\n");
  measureMemory<__m512i>(threads);
  return 0;
}
