//===- winograd.cpp - Fused-tile Winograd F(4x4,3x3) for narrow layers ----===//
//
// Y = A^T [(G g G^T) . (B^T d B)] A for each 4x4 output tile, d its 6x6
// input patch and g the 3x3 filter of one input and output channel (Lavin
// and Gray, "Fast Algorithms for Convolutional Neural Networks", 2016). The
// 16 channels of a block sit in one AVX-512 register, so the transforms are
// vector additions and multiplications by constants, and the products are
// 36 matrix products [tiles x inputs] x [inputs x outputs], one per point
// of the 6x6 transformed tile. On AVX2 a block is two 8-float registers;
// the transforms and tile loops (winograd_kernels.inc) are the same code for
// both instruction sets, over each set's vector primitives, and only the
// products (register blocking, broadcasts) are written per set.
//
//===----------------------------------------------------------------------===//

#include "kiln/rt/exec/winograd.h"

#include "kiln/rt/exec/channel_statistics.h"

#include "kiln/ref/bf16.h"
#include "kiln/rt/exec/gomp.h"

#include <immintrin.h>

#include <algorithm>

// Every function that uses AVX-512 or AVX2 carries the target attribute
// instead of the file being compiled with -mavx512f or -mavx2: no inline
// function of a shared header can then be emitted with those instructions
// and picked by the linker for code that runs on CPUs without them.
#define KILN_AVX512 __attribute__((target("avx512f")))
#define KILN_AVX2 __attribute__((target("avx2,fma")))

namespace kiln::rt::exec {

ActivationView ActivationView::nhwc(void *data, bool bf16, int64_t n, int64_t h,
                                    int64_t w, int64_t c) {
  return {data, bf16, n, h, w, c, h * w * c, 16, w * c, c};
}

ActivationView ActivationView::nChw16c(void *data, bool bf16, int64_t n,
                                       int64_t h, int64_t w, int64_t c) {
  int64_t blocks = (c + 15) / 16;
  return {data, bf16, n, h, w, c, blocks * h * w * 16, h * w * 16, w * 16, 16};
}

namespace {

bool hasAvx512() { return __builtin_cpu_supports("avx512f"); }

} // namespace

bool Winograd3x3::available() {
  return hasAvx512() ||
         (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"));
}

const char *Winograd3x3::instructionSet() {
  return hasAvx512() ? "avx512" : "avx2";
}

Winograd3x3::Winograd3x3(int64_t inputs, int64_t outputs, Pass pass)
    : inputs(inputs), outputs(outputs), pass(pass) {}

namespace {

constexpr int64_t kGroup = Winograd3x3::kTilesPerGroup;
constexpr int64_t kPoints = 36; // of a 6x6 transformed tile

/// Floats from one point's [kGroup][16] slice of a channel block in those
/// buffers to the next: a cache line more than the slice, since with
/// power-of-two strides the 36 slices a tile transform touches fall into a
/// few L1 sets and evict each other. A constant (channel blocks are the
/// outer dimension), so that the transforms address their 36 points as
/// fixed offsets from one pointer; with a stride that grew with the channel
/// count the Winograd calls of a Fashion-MNIST step took ~5% longer.
constexpr int64_t kPointStride = kGroup * 16 + 16;

/// Floats of one channel block of those buffers: [36][kPointStride].
constexpr int64_t kBlockFloats = kPoints * kPointStride;

/// Floats of a [channels/16][36][kPointStride] buffer.
int64_t transformedFloats(int64_t channels) {
  return channels / 16 * kBlockFloats;
}

/// Floats from such a buffer's start to the 16 channels of `block` for
/// tile `slot` at transformed point `point`.
int64_t slotOffset(int64_t point, int64_t block, int64_t slot) {
  return block * kBlockFloats + point * kPointStride + slot * 16;
}

/// Floats from the start of a transformed filter (or of the filter
/// gradient's sums) to input channel `i`, output channel `o` at point `p`:
/// [36][K/16][C][16], per point one panel of 16 output channels by all
/// input channels after another, which the products stream through. In
/// [36][C][K] the rows of a 16-channel column lie K floats apart, and from
/// 128 channels on the column of one point maps to a few of L1's sets.
inline int64_t filterOffset(int64_t p, int64_t i, int64_t o, int64_t C,
                            int64_t K) {
  return (p * K + o / 16 * 16) * C + i * 16 + o % 16;
}

/// Whether a layer is wide: its transformed filter (36 x C x K floats) is
/// larger than at 128 x 128 channels, 2.25 MiB, the largest layer the
/// kernel was first measured to win on. A thread of a narrow layer
/// transforms the whole filter into its own copy (~2% of a call at 64
/// channels: one shared copy, written by both threads and then read by
/// both, made calls on two threads 6-13% slower) and multiplies one group
/// of tiles at a time by all of it. A wide one would read its copy from
/// memory for every group; there the threads share one copy (the forward
/// and input gradient) or split the output channels (the filter gradient),
/// and a sweep of several groups is multiplied per pass over the filter
/// (docs/performance.md).
inline bool isWide(int64_t C, int64_t K) { return C * K > 128 * 128; }

/// What one point's transformed tiles of a sweep may take, [tiles] x
/// max(C, K) floats: the products read them once per 16 output channels,
/// from L2.
constexpr int64_t kSweepBytes = int64_t(192) << 10;

/// Groups of tiles multiplied per pass over the transformed filter.
int64_t groupsPerSweep(int64_t C, int64_t K) {
  if (!isWide(C, K))
    return 1;
  return std::clamp<int64_t>(
      kSweepBytes / (kGroup * int64_t(sizeof(float)) * std::max(C, K)), 1,
      16);
}

/// Floats of the buffer all threads share: a wide layer's transformed
/// filter [36][K/16][C][16], or its filter gradient's sums in the same
/// layout.
int64_t sharedFloats(int64_t C, int64_t K) {
  return isWide(C, K) ? kPoints * C * K : 0;
}

/// Floats of one thread's buffers: a narrow layer's own transformed filter
/// (or sums), then a sweep's transformed inputs [groups][C/16][36][
/// kPointStride] and products [groups][K/16][36][kPointStride] (the filter
/// gradient: transformed inputs and transformed output gradients), each
/// group's tiles tile-major inside a channel block, so that the broadcasts
/// of one channel for the kGroup tiles sit at fixed offsets from one base.
int64_t threadFloats(int64_t C, int64_t K) {
  return kPoints * C * K - sharedFloats(C, K) +
         groupsPerSweep(C, K) * (transformedFloats(C) + transformedFloats(K));
}

/// After those, the forward's statistics: the thread's ShiftedSums and its
/// shifts as floats, rounded up to a cache line.
int64_t statisticsFloats(int64_t outputs) {
  return (2 * ShiftedSums::doubles(outputs) + outputs + 15) / 16 * 16;
}

struct Job {
  const void *filter; // forward and input gradient
  bool filterBf16;
  float *filterGrad;   // filter gradient
  /// The filter gradient's `output` is the output gradient it reads.
  ActivationView input, output;
  Winograd3x3::Epilogue epilogue;
  int64_t inputs, outputs;
  bool inputGradient;
  /// The output is stored with streaming stores (storePixel).
  bool streamOutput;
  /// sharedFloats(); each thread's threadFloats() after it, then the
  /// forward's statistics (statisticsFloats() per thread).
  float *shared, *threadBuffers, *statistics;
  bool wide;
  int64_t sweep; // groupsPerSweep()
  int64_t tileRows, tileCols, tiles;

  /// The buffers of `thread`.
  float *buffers(int64_t thread) const {
    return threadBuffers + thread * threadFloats(inputs, outputs);
  }
};

/// Bit i set where 0 <= first + i < extent, for i < count: which rows (or
/// columns) of a tile's patch lie inside the image.
inline unsigned insideBits(int64_t first, int64_t count, int64_t extent) {
  unsigned bits = 0;
  for (int64_t i = 0; i < count; ++i)
    bits |= unsigned(first + i >= 0 && first + i < extent) << i;
  return bits;
}

/// Forward outputs at least this large are written with streaming stores.
/// In a training step each is an activation kept for the backward pass, in
/// memory untouched since the previous step's backward: an ordinary store
/// first reads every line from memory, which cost the 16- and 32-channel
/// Fashion-MNIST layers (6.4 and 3.2 MB) ~15% of a call; the 1.6 MB
/// 64-channel outputs and the input gradients, written where the step
/// wrote just before, gained nothing (docs/performance.md).
constexpr int64_t kStreamedOutputBytes = int64_t(2) << 20;

/// Asks the caches for the pixels that tiles [first, first + count) read
/// from `view`: rows and columns [4 t - before, 4 t - before + extent) of
/// tile t, clipped to the image; a 16-channel block of a pixel is one
/// cache line. Runs of tiles in one tile row share their rows. Channel
/// blocks [blockBegin, blockEnd), all if blockEnd is 0.
void prefetchTiles(const Job &job, const ActivationView &view, int64_t first,
                   int64_t count, int64_t before, int64_t extent,
                   int64_t blockBegin = 0, int64_t blockEnd = 0) {
  int64_t tilesPerImage = job.tileRows * job.tileCols;
  int64_t end = std::min(first + count, job.tiles);
  for (int64_t tile = first; tile < end;) {
    int64_t n = tile / tilesPerImage, inImage = tile % tilesPerImage;
    int64_t row = inImage / job.tileCols, column = inImage % job.tileCols;
    int64_t run = std::min(job.tileCols - column, end - tile);
    int64_t y0 = std::max<int64_t>(0, row * 4 - before);
    int64_t y1 = std::min(view.height, row * 4 - before + extent);
    int64_t x0 = std::max<int64_t>(0, column * 4 - before);
    int64_t x1 = std::min(view.width, (column + run - 1) * 4 - before + extent);
    for (int64_t block = blockBegin;
         block < (blockEnd ? blockEnd : view.channels / 16); ++block)
      for (int64_t y = y0; y < y1; ++y)
        for (int64_t x = x0; x < x1; ++x)
          __builtin_prefetch(view.address(view.offset(n, block, y, x)));
    tile += run;
  }
}

/// Zeros in slots [count, kGroup) of a group's [channels/16][36][
/// kPointStride] buffer, those of a last group that has fewer tiles: their
/// products are never stored or add nothing, but garbage could hold NaNs or
/// slow denormals.
void zeroUnusedSlots(float *buffer, int64_t channels, int64_t count) {
  for (int64_t p = 0; p < kPoints; ++p)
    for (int64_t block = 0; block < channels / 16; ++block)
      std::fill_n(buffer + slotOffset(p, block, count), 16 * (kGroup - count),
                  0.0f);
}

} // namespace

//===----------------------------------------------------------------------===//
// AVX-512: a 16-channel block in one register.
//===----------------------------------------------------------------------===//

namespace avx512 {
namespace {

using Vec = __m512;
constexpr int kLanes = 16;

KILN_AVX512 inline Vec zero() { return _mm512_setzero_ps(); }
KILN_AVX512 inline Vec set1(float x) { return _mm512_set1_ps(x); }
KILN_AVX512 inline Vec load(const float *p) { return _mm512_loadu_ps(p); }
KILN_AVX512 inline void store(float *p, Vec x) { _mm512_storeu_ps(p, x); }
KILN_AVX512 inline void stream(float *p, Vec x) { _mm512_stream_ps(p, x); }
KILN_AVX512 inline Vec add(Vec a, Vec b) { return _mm512_add_ps(a, b); }
KILN_AVX512 inline Vec sub(Vec a, Vec b) { return _mm512_sub_ps(a, b); }
KILN_AVX512 inline Vec mul(Vec a, Vec b) { return _mm512_mul_ps(a, b); }
KILN_AVX512 inline Vec vmax(Vec a, Vec b) { return _mm512_max_ps(a, b); }
KILN_AVX512 inline Vec fmadd(Vec a, Vec b, Vec c) {
  return _mm512_fmadd_ps(a, b, c);
}
KILN_AVX512 inline Vec fnmadd(Vec a, Vec b, Vec c) {
  return _mm512_fnmadd_ps(a, b, c);
}

/// 16 bf16 values at `p` widened to f32 (exact: the upper halves).
KILN_AVX512 inline Vec loadBf16(const void *p) {
  __m256i half = _mm256_loadu_si256(static_cast<const __m256i *>(p));
  return _mm512_castsi512_ps(
      _mm512_slli_epi32(_mm512_cvtepu16_epi32(half), 16));
}

/// `x` rounded to bf16 and stored at `p`, as VCVTNEPS2BF16 rounds (and
/// kiln/ref/bf16.h): to nearest even, denormals to signed zero, NaNs kept
/// and made quiet. AVX-512F integer operations, so that CPUs without
/// AVX512_BF16 round the same. Returns the stored values widened to f32.
KILN_AVX512 inline Vec storeBf16(void *p, Vec x) {
  __m512i bits = _mm512_castps_si512(x);
  __m512i sign = _mm512_and_si512(bits, _mm512_set1_epi32(int(0x80000000u)));
  __m512i magnitude = _mm512_and_si512(bits, _mm512_set1_epi32(0x7FFFFFFF));
  __m512i lsb =
      _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
  __m512i rounded = _mm512_srli_epi32(
      _mm512_add_epi32(bits, _mm512_add_epi32(_mm512_set1_epi32(0x7FFF), lsb)),
      16);
  __mmask16 denormal = _mm512_cmpeq_epi32_mask(
      _mm512_and_si512(bits, _mm512_set1_epi32(0x7F800000)),
      _mm512_setzero_si512());
  __mmask16 nan =
      _mm512_cmpgt_epi32_mask(magnitude, _mm512_set1_epi32(0x7F800000));
  rounded =
      _mm512_mask_mov_epi32(rounded, denormal, _mm512_srli_epi32(sign, 16));
  rounded = _mm512_mask_mov_epi32(
      rounded, nan,
      _mm512_or_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(0x40)));
  _mm256_storeu_si256(static_cast<__m256i *>(p),
                      _mm512_cvtepi32_epi16(rounded));
  return _mm512_castsi512_ps(_mm512_slli_epi32(rounded, 16));
}

/// sums[0..16) += the 16 lanes of `x` in double precision.
KILN_AVX512 inline void addToDoubles(double *sums, Vec x) {
  __m512d low = _mm512_cvtps_pd(_mm512_castps512_ps256(x));
  __m512d high = _mm512_cvtps_pd(
      _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1)));
  _mm512_storeu_pd(sums, _mm512_add_pd(_mm512_loadu_pd(sums), low));
  _mm512_storeu_pd(sums + 8, _mm512_add_pd(_mm512_loadu_pd(sums + 8), high));
}
/// v[1] and v[3] broadcast into a register each, from one load of v[0..4)
/// spread by shuffles (vshufps within each 128-bit quarter).
KILN_AVX512 inline void spreadOdd(const float *v, __m512 &odd1, __m512 &odd3) {
  __m512 quad = _mm512_broadcast_f32x4(_mm_loadu_ps(v));
  asm("vshufps $0x55, %1, %1, %0" : "=v"(odd1) : "v"(quad));
  asm("vshufps $0xff, %1, %1, %0" : "=v"(odd3) : "v"(quad));
}

/// acc += broadcast(*v) w, one vfmadd231ps with an embedded broadcast load.
KILN_AVX512 inline void fmaBroadcastLoad(__m512 &acc, const float *v,
                                         __m512 w) {
  asm("vfmadd231ps %1%{1to16%}, %2, %0" : "+v"(acc) : "m"(*v), "v"(w));
}

/// acc += v[0] w[0] + v[1] w[1] + v[2] w[2] + v[3] w[3], in that order, each
/// v[i] broadcast. With one block of 16 outputs each broadcast value serves
/// a single multiply-add, and with a broadcast load per multiply-add the
/// loads are the limit: on one core, operands in cache, 150-155 GFLOP/s
/// against ~205 for the same loop at two blocks. Half the values are
/// instead spread by shuffles from one load of all four, the shuffles
/// running beside the loads: ~185 GFLOP/s (all four by shuffles: 161).
/// Inline assembly, because clang folds such shuffles back into broadcast
/// loads.
KILN_AVX512 inline void fmaFourBroadcasts(__m512 &acc, const float *v,
                                          const __m512 w[4]) {
  __m512 odd1, odd3;
  spreadOdd(v, odd1, odd3);
  fmaBroadcastLoad(acc, v, w[0]);
  acc = _mm512_fmadd_ps(odd1, w[1], acc);
  fmaBroadcastLoad(acc, v + 2, w[2]);
  acc = _mm512_fmadd_ps(odd3, w[3], acc);
}

/// acc[i] += v[i] y for i < 4, each v[i] broadcast; as fmaFourBroadcasts.
KILN_AVX512 inline void fmaFourBroadcasts(__m512 acc[4], const float *v,
                                          __m512 y) {
  __m512 odd1, odd3;
  spreadOdd(v, odd1, odd3);
  fmaBroadcastLoad(acc[0], v, y);
  acc[1] = _mm512_fmadd_ps(odd1, y, acc[1]);
  fmaBroadcastLoad(acc[2], v + 2, y);
  acc[3] = _mm512_fmadd_ps(odd3, y, acc[3]);
}

/// M[point] = V[point] x U[point] for output channels [ob, ob + 16 Blocks)
/// of one group: kGroup x Blocks accumulators in registers. `Up` is the
/// point's transformed filter.
template <int Blocks>
KILN_AVX512 inline void multiplyBlocks(const float *Vp, const float *Up,
                                       float *Mp, int64_t C, int64_t ob) {
  __m512 acc[kGroup][Blocks];
  for (int64_t g = 0; g < kGroup; ++g)
    for (int b = 0; b < Blocks; ++b)
      acc[g][b] = _mm512_setzero_ps();
  for (int64_t block = 0; block < C / 16; ++block) {
    const float *Vb = Vp + block * kBlockFloats;
    // Row c of panel b: filterOffset(0, 16 block + c, ob + 16 b).
    const float *Ub = Up + ob * C + block * 16 * 16;
    if constexpr (Blocks == 1) {
      for (int64_t c = 0; c < 16; c += 4) {
        __m512 w[4];
        for (int i = 0; i < 4; ++i)
          w[i] = _mm512_loadu_ps(Ub + (c + i) * 16);
        for (int64_t g = 0; g < kGroup; ++g)
          fmaFourBroadcasts(acc[g][0], Vb + g * 16 + c, w);
      }
      continue;
    }
    for (int64_t c = 0; c < 16; ++c) {
      __m512 w[Blocks];
      for (int b = 0; b < Blocks; ++b)
        w[b] = _mm512_loadu_ps(Ub + 16 * b * C + c * 16);
      for (int64_t g = 0; g < kGroup; ++g) {
        __m512 v = _mm512_set1_ps(Vb[g * 16 + c]);
        for (int b = 0; b < Blocks; ++b)
          acc[g][b] = _mm512_fmadd_ps(v, w[b], acc[g][b]);
      }
    }
  }
  for (int64_t g = 0; g < kGroup; ++g)
    for (int b = 0; b < Blocks; ++b)
      _mm512_storeu_ps(Mp + (ob / 16 + b) * kBlockFloats + g * 16, acc[g][b]);
}

/// M = V x U at each point for the `groups` groups of a sweep, each panel
/// of U multiplied into all of them before the next.
KILN_AVX512 void multiply(const Job &job, const float *U, const float *V,
                          float *M, int64_t groups) {
  int64_t C = job.inputs, K = job.outputs;
  int64_t inputFloats = transformedFloats(C), outputFloats = transformedFloats(K);
  for (int64_t p = 0; p < kPoints; ++p) {
    const float *Vp = V + p * kPointStride;
    const float *Up = U + filterOffset(p, 0, 0, C, K);
    float *Mp = M + p * kPointStride;
    int64_t ob = 0;
    for (; ob + 32 <= K; ob += 32)
      for (int64_t s = 0; s < groups; ++s)
        multiplyBlocks<2>(Vp + s * inputFloats, Up, Mp + s * outputFloats, C,
                          ob);
    for (; ob < K; ob += 16)
      for (int64_t s = 0; s < groups; ++s)
        multiplyBlocks<1>(Vp + s * inputFloats, Up, Mp + s * outputFloats, C,
                          ob);
  }
}

/// dU[point] (+)= V[point]^T x Y[point] for input channel block `block`
/// and output channels [ob, ob + 16 Blocks), over the tiles of `groups`
/// groups: [16 x tiles] x [tiles x 16 Blocks]. `Blocks` blocks of 16 output
/// channels by 16 / Blocks input channels of sums in registers at a time:
/// each broadcast input value serves `Blocks` multiply-adds. `Vb` is the
/// block's transformed inputs at the point, `Yp` the point's transformed
/// output gradients, `dUp` the point's sums; without `add` the sums are
/// written over.
template <int Blocks>
KILN_AVX512 inline void accumulateBlocks(const float *Vb, const float *Yp,
                                         float *dUp, int64_t C, int64_t K,
                                         int64_t block, int64_t ob,
                                         int64_t groups, bool add) {
  constexpr int kChannels = 16 / Blocks;
  int64_t inputFloats = transformedFloats(C), outputFloats = transformedFloats(K);
  for (int half = 0; half < Blocks; ++half) {
    __m512 acc[kChannels][Blocks];
    // Row c of panel b: filterOffset(0, 16 block + half kChannels + c,
    // ob + 16 b).
    float *rows = dUp + ob * C + (block * 16 + half * kChannels) * 16;
    for (int c = 0; c < kChannels; ++c)
      for (int b = 0; b < Blocks; ++b)
        acc[c][b] = add ? _mm512_loadu_ps(rows + 16 * b * C + c * 16)
                        : _mm512_setzero_ps();
    for (int64_t s = 0; s < groups; ++s) {
      const float *Vs = Vb + s * inputFloats;
      const float *Ys = Yp + s * outputFloats;
      for (int64_t g = 0; g < kGroup; ++g) {
        __m512 y[Blocks];
        for (int b = 0; b < Blocks; ++b)
          y[b] = _mm512_loadu_ps(Ys + (ob / 16 + b) * kBlockFloats + g * 16);
        if constexpr (Blocks == 1) {
          for (int c = 0; c < kChannels; c += 4)
            fmaFourBroadcasts(&acc[c][0], Vs + g * 16 + c, y[0]);
          continue;
        }
        for (int c = 0; c < kChannels; ++c) {
          __m512 v = _mm512_set1_ps(Vs[g * 16 + half * kChannels + c]);
          for (int b = 0; b < Blocks; ++b)
            acc[c][b] = _mm512_fmadd_ps(v, y[b], acc[c][b]);
        }
      }
    }
    for (int c = 0; c < kChannels; ++c)
      for (int b = 0; b < Blocks; ++b)
        _mm512_storeu_ps(rows + 16 * b * C + c * 16, acc[c][b]);
  }
}

/// dU (+)= V^T x Y at each point, for output channels [obBegin, obEnd),
/// over the tiles of a sweep of `groups` groups.
KILN_AVX512 void accumulateFilterGradient(const Job &job, const float *V,
                                          const float *Y, float *dU,
                                          int64_t groups, int64_t obBegin,
                                          int64_t obEnd, bool add) {
  int64_t C = job.inputs, K = job.outputs;
  for (int64_t p = 0; p < kPoints; ++p) {
    const float *Vp = V + p * kPointStride;
    const float *Yp = Y + p * kPointStride;
    float *dUp = dU + filterOffset(p, 0, 0, C, K);
    for (int64_t block = 0; block < C / 16; ++block) {
      const float *Vb = Vp + block * kBlockFloats;
      int64_t ob = obBegin;
      for (; ob + 32 <= obEnd; ob += 32)
        accumulateBlocks<2>(Vb, Yp, dUp, C, K, block, ob, groups, add);
      for (; ob < obEnd; ob += 16)
        accumulateBlocks<1>(Vb, Yp, dUp, C, K, block, ob, groups, add);
    }
  }
}

#define KILN_WINO_TARGET KILN_AVX512
#include "winograd_kernels.inc"
#undef KILN_WINO_TARGET

} // namespace
} // namespace avx512

//===----------------------------------------------------------------------===//
// AVX2 and FMA: a 16-channel block in two 8-float registers.
//===----------------------------------------------------------------------===//

namespace avx2 {
namespace {

using Vec = __m256;
constexpr int kLanes = 8;

KILN_AVX2 inline Vec zero() { return _mm256_setzero_ps(); }
KILN_AVX2 inline Vec set1(float x) { return _mm256_set1_ps(x); }
KILN_AVX2 inline Vec load(const float *p) { return _mm256_loadu_ps(p); }
KILN_AVX2 inline void store(float *p, Vec x) { _mm256_storeu_ps(p, x); }
KILN_AVX2 inline void stream(float *p, Vec x) { _mm256_stream_ps(p, x); }
KILN_AVX2 inline Vec add(Vec a, Vec b) { return _mm256_add_ps(a, b); }
KILN_AVX2 inline Vec sub(Vec a, Vec b) { return _mm256_sub_ps(a, b); }
KILN_AVX2 inline Vec mul(Vec a, Vec b) { return _mm256_mul_ps(a, b); }
KILN_AVX2 inline Vec vmax(Vec a, Vec b) { return _mm256_max_ps(a, b); }
KILN_AVX2 inline Vec fmadd(Vec a, Vec b, Vec c) {
  return _mm256_fmadd_ps(a, b, c);
}
KILN_AVX2 inline Vec fnmadd(Vec a, Vec b, Vec c) {
  return _mm256_fnmadd_ps(a, b, c);
}

/// 8 bf16 values at `p` widened to f32 (exact: the upper halves).
KILN_AVX2 inline Vec loadBf16(const void *p) {
  __m128i half = _mm_loadu_si128(static_cast<const __m128i *>(p));
  return _mm256_castsi256_ps(
      _mm256_slli_epi32(_mm256_cvtepu16_epi32(half), 16));
}

/// `x` rounded to bf16 and stored at `p`, as avx512::storeBf16 rounds.
KILN_AVX2 inline Vec storeBf16(void *p, Vec x) {
  __m256i bits = _mm256_castps_si256(x);
  __m256i sign = _mm256_and_si256(bits, _mm256_set1_epi32(int(0x80000000u)));
  __m256i magnitude = _mm256_and_si256(bits, _mm256_set1_epi32(0x7FFFFFFF));
  __m256i lsb =
      _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
  __m256i rounded = _mm256_srli_epi32(
      _mm256_add_epi32(bits, _mm256_add_epi32(_mm256_set1_epi32(0x7FFF), lsb)),
      16);
  __m256i denormal = _mm256_cmpeq_epi32(
      _mm256_and_si256(bits, _mm256_set1_epi32(0x7F800000)),
      _mm256_setzero_si256());
  __m256i nan = _mm256_cmpgt_epi32(magnitude, _mm256_set1_epi32(0x7F800000));
  rounded =
      _mm256_blendv_epi8(rounded, _mm256_srli_epi32(sign, 16), denormal);
  rounded = _mm256_blendv_epi8(
      rounded,
      _mm256_or_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(0x40)),
      nan);
  // Each lane holds 16 bits: packing saturates nothing. packus interleaves
  // the 128-bit halves; the permute puts the 8 values in order.
  __m256i packed = _mm256_permute4x64_epi64(
      _mm256_packus_epi32(rounded, rounded), 0x08);
  _mm_storeu_si128(static_cast<__m128i *>(p), _mm256_castsi256_si128(packed));
  return _mm256_castsi256_ps(_mm256_slli_epi32(rounded, 16));
}

/// sums[0..8) += the 8 lanes of `x` in double precision.
KILN_AVX2 inline void addToDoubles(double *sums, Vec x) {
  __m256d low = _mm256_cvtps_pd(_mm256_castps256_ps128(x));
  __m256d high = _mm256_cvtps_pd(_mm256_extractf128_ps(x, 1));
  _mm256_storeu_pd(sums, _mm256_add_pd(_mm256_loadu_pd(sums), low));
  _mm256_storeu_pd(sums + 4, _mm256_add_pd(_mm256_loadu_pd(sums + 4), high));
}

/// Tiles whose products one multiplyBlock keeps in registers: 6 tiles by
/// the two vectors of a 16-channel block, 12 of the 16 registers, beside
/// the two filter vectors and a broadcast (the usual AVX2 blocking).
constexpr int64_t kTilesPerPass = 6;
static_assert(kGroup % kTilesPerPass == 0);

/// M[point] = V[point] x U[point] for output channels [ob, ob + 16) and
/// tiles [g0, g0 + kTilesPerPass) of one group; `Up` is the point's
/// transformed filter.
KILN_AVX2 inline void multiplyBlock(const float *Vp, const float *Up,
                                    float *Mp, int64_t C, int64_t ob,
                                    int64_t g0) {
  Vec acc[kTilesPerPass][2];
  for (int64_t g = 0; g < kTilesPerPass; ++g)
    acc[g][0] = acc[g][1] = zero();
  for (int64_t block = 0; block < C / 16; ++block) {
    const float *Vb = Vp + block * kBlockFloats + g0 * 16;
    // Row c: filterOffset(0, 16 block + c, ob).
    const float *Ub = Up + ob * C + block * 16 * 16;
    for (int64_t c = 0; c < 16; ++c) {
      Vec w0 = load(Ub + c * 16), w1 = load(Ub + c * 16 + 8);
      for (int64_t g = 0; g < kTilesPerPass; ++g) {
        Vec v = _mm256_broadcast_ss(Vb + g * 16 + c);
        acc[g][0] = fmadd(v, w0, acc[g][0]);
        acc[g][1] = fmadd(v, w1, acc[g][1]);
      }
    }
  }
  float *out = Mp + ob / 16 * kBlockFloats + g0 * 16;
  for (int64_t g = 0; g < kTilesPerPass; ++g) {
    store(out + g * 16, acc[g][0]);
    store(out + g * 16 + 8, acc[g][1]);
  }
}

/// M = V x U at each point for the `groups` groups of a sweep, each panel
/// of U multiplied into all of them before the next.
KILN_AVX2 void multiply(const Job &job, const float *U, const float *V,
                        float *M, int64_t groups) {
  int64_t C = job.inputs, K = job.outputs;
  int64_t inputFloats = transformedFloats(C), outputFloats = transformedFloats(K);
  for (int64_t p = 0; p < kPoints; ++p)
    for (int64_t ob = 0; ob < K; ob += 16)
      for (int64_t s = 0; s < groups; ++s)
        for (int64_t g0 = 0; g0 < kGroup; g0 += kTilesPerPass)
          multiplyBlock(V + s * inputFloats + p * kPointStride,
                        U + filterOffset(p, 0, 0, C, K),
                        M + s * outputFloats + p * kPointStride, C, ob, g0);
}

/// Input channels whose sums one accumulateBlock keeps in registers, by the
/// two vectors of a 16-channel output block: 8 of the 16 registers, beside
/// the two output-gradient vectors and a broadcast.
constexpr int64_t kChannelsPerPass = 4;

/// dU[point] (+)= V[point]^T x Y[point] for input channels [c0, c0 +
/// kChannelsPerPass) of the block at `Vb` and output channels [ob, ob +
/// 16), over the tiles of `groups` groups; `rows` is the sums' row c0 (of
/// panel ob). Without `add` the sums are written over.
KILN_AVX2 inline void accumulateBlock(const float *Vb, const float *Yp,
                                      float *rows, int64_t C, int64_t K,
                                      int64_t ob, int64_t c0, int64_t groups,
                                      bool add) {
  Vec acc[kChannelsPerPass][2];
  for (int64_t c = 0; c < kChannelsPerPass; ++c) {
    acc[c][0] = add ? load(rows + c * 16) : zero();
    acc[c][1] = add ? load(rows + c * 16 + 8) : zero();
  }
  int64_t inputFloats = transformedFloats(C), outputFloats = transformedFloats(K);
  for (int64_t s = 0; s < groups; ++s) {
    const float *v = Vb + s * inputFloats + c0;
    const float *y = Yp + s * outputFloats + ob / 16 * kBlockFloats;
    for (int64_t g = 0; g < kGroup; ++g) {
      Vec y0 = load(y + g * 16), y1 = load(y + g * 16 + 8);
      for (int64_t c = 0; c < kChannelsPerPass; ++c) {
        Vec x = _mm256_broadcast_ss(v + g * 16 + c);
        acc[c][0] = fmadd(x, y0, acc[c][0]);
        acc[c][1] = fmadd(x, y1, acc[c][1]);
      }
    }
  }
  for (int64_t c = 0; c < kChannelsPerPass; ++c) {
    store(rows + c * 16, acc[c][0]);
    store(rows + c * 16 + 8, acc[c][1]);
  }
}

/// dU (+)= V^T x Y at each point, for output channels [obBegin, obEnd),
/// over the tiles of a sweep of `groups` groups.
KILN_AVX2 void accumulateFilterGradient(const Job &job, const float *V,
                                        const float *Y, float *dU,
                                        int64_t groups, int64_t obBegin,
                                        int64_t obEnd, bool add) {
  int64_t C = job.inputs, K = job.outputs;
  for (int64_t p = 0; p < kPoints; ++p)
    for (int64_t block = 0; block < C / 16; ++block)
      for (int64_t ob = obBegin; ob < obEnd; ob += 16)
        for (int64_t c0 = 0; c0 < 16; c0 += kChannelsPerPass)
          accumulateBlock(V + p * kPointStride + block * kBlockFloats,
                          Y + p * kPointStride,
                          dU + filterOffset(p, block * 16 + c0, ob, C, K), C,
                          K, ob, c0, groups, add);
}

#define KILN_WINO_TARGET KILN_AVX2
#include "winograd_kernels.inc"
#undef KILN_WINO_TARGET

} // namespace
} // namespace avx2

size_t Winograd3x3::workspaceBytes(int threads) const {
  int64_t floats = threadFloats(inputs, outputs);
  if (pass == Pass::Forward)
    floats += statisticsFloats(outputs);
  return (size_t(sharedFloats(inputs, outputs)) +
          size_t(threads) * size_t(floats)) *
         sizeof(float);
}

namespace {

/// The workspace's buffers for `threads` threads.
void placeBuffers(Job &job, void *workspace, int threads) {
  int64_t C = job.inputs, K = job.outputs;
  job.shared = static_cast<float *>(workspace);
  job.threadBuffers = job.shared + sharedFloats(C, K);
  job.statistics = job.threadBuffers + threads * threadFloats(C, K);
  job.wide = isWide(C, K);
  job.sweep = groupsPerSweep(C, K);
}

} // namespace

bool Winograd3x3::streamsOutput(const ActivationView &output) const {
  // A bf16 pixel is half a cache line; f32 blocks are whole, aligned lines
  // when the output is.
  int64_t bytes = output.images * output.imageStride * 4;
  return pass == Pass::Forward && !output.bf16 &&
         reinterpret_cast<uintptr_t>(output.data) % 64 == 0 &&
         bytes >= kStreamedOutputBytes;
}

void Winograd3x3::run(const void *filter, bool filterBf16,
                      const ActivationView &input, const ActivationView &output,
                      const Epilogue &epilogue, void *workspace,
                      int threads) const {
  Job job{};
  job.filter = filter;
  job.filterBf16 = filterBf16;
  job.input = input;
  job.output = output;
  job.epilogue = epilogue;
  job.inputs = inputs;
  job.outputs = outputs;
  job.inputGradient = pass == Pass::InputGradient;
  job.streamOutput = streamsOutput(output);
  placeBuffers(job, workspace, threads);
  job.tileRows = (output.height + 3) / 4;
  job.tileCols = (output.width + 3) / 4;
  job.tiles = output.images * job.tileRows * job.tileCols;
  GOMP_parallel(hasAvx512() ? &avx512::runThread : &avx2::runThread, &job,
                unsigned(threads), 0);
}

void Winograd3x3::runFilterGradient(const ActivationView &input,
                                    const ActivationView &outputGrad,
                                    float *filterGrad, void *workspace,
                                    int threads) const {
  Job job{};
  job.filterGrad = filterGrad;
  job.input = input;
  job.output = outputGrad;
  job.inputs = inputs;
  job.outputs = outputs;
  placeBuffers(job, workspace, threads);
  job.tileRows = (outputGrad.height + 3) / 4;
  job.tileCols = (outputGrad.width + 3) / 4;
  job.tiles = outputGrad.images * job.tileRows * job.tileCols;
  GOMP_parallel(hasAvx512() ? &avx512::runFilterGradientThread
                            : &avx2::runFilterGradientThread,
                &job, unsigned(threads), 0);
}

} // namespace kiln::rt::exec
