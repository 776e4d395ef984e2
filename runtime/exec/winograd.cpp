//===- winograd.cpp - Fused-tile Winograd F(4x4,3x3) for narrow layers ----===//
//
// Y = A^T [(G g G^T) . (B^T d B)] A for each 4x4 output tile, d its 6x6
// input patch and g the 3x3 filter of one input and output channel (Lavin
// and Gray, "Fast Algorithms for Convolutional Neural Networks", 2016). The
// 16 channels of a block sit in one AVX-512 register, so the transforms are
// vector additions and multiplications by constants, and the products are
// 36 matrix products [tiles x inputs] x [inputs x outputs], one per point
// of the 6x6 transformed tile.
//
//===----------------------------------------------------------------------===//

#include "kiln/rt/exec/winograd.h"

#include "kiln/rt/exec/channel_statistics.h"

#include "kiln/ref/bf16.h"
#include "kiln/rt/exec/gomp.h"

#include <immintrin.h>

#include <algorithm>

// Every function that uses AVX-512 carries the target attribute instead of
// the file being compiled with -mavx512f: no inline function of a shared
// header can then be emitted with AVX-512 instructions and picked by the
// linker for code that runs on CPUs without it.
#define KILN_AVX512 __attribute__((target("avx512f")))

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

bool Winograd3x3::available() { return __builtin_cpu_supports("avx512f"); }

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

/// The buffers of one thread: the transformed filter [36][inputs][outputs],
/// transformed inputs [inputs/16][36][kGroup][16] and products
/// [outputs/16][36][kGroup][16] (each point's slice kPointStride apart),
/// the latter two tile-major inside a channel block, so that the broadcasts
/// of one channel for the kGroup tiles sit at fixed offsets from one base. The
/// filter gradient uses the same for its sums in the transformed domain,
/// the transformed inputs and the transformed output gradients. Each thread
/// transforms the whole filter into its own copy (~2% of a call at 64
/// channels): one shared copy, written by both threads and then read by
/// both, made calls on two threads 6-13% slower.
int64_t threadFloats(int64_t inputs, int64_t outputs) {
  return kPoints * inputs * outputs + transformedFloats(inputs) +
         transformedFloats(outputs);
}

/// After those, the forward's statistics: the thread's ShiftedSums and its
/// shifts as floats, rounded up to a cache line.
int64_t statisticsFloats(int64_t outputs) {
  return (2 * ShiftedSums::doubles(outputs) + outputs + 15) / 16 * 16;
}

/// 16 bf16 values at `p` widened to f32 (exact: the upper halves).
KILN_AVX512 inline __m512 loadBf16(const void *p) {
  __m256i half = _mm256_loadu_si256(static_cast<const __m256i *>(p));
  return _mm512_castsi512_ps(
      _mm512_slli_epi32(_mm512_cvtepu16_epi32(half), 16));
}

/// `x` rounded to bf16 and stored at `p`, as VCVTNEPS2BF16 rounds (and
/// kiln/ref/bf16.h): to nearest even, denormals to signed zero, NaNs kept
/// and made quiet. AVX-512F integer operations, so that CPUs without
/// AVX512_BF16 round the same. Returns the stored values widened to f32.
KILN_AVX512 inline __m512 storeBf16(void *p, __m512 x) {
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

/// The 16 channels at element `offset` of `view`, as f32.
KILN_AVX512 inline __m512 loadBlock(const ActivationView &view,
                                    int64_t offset) {
  return view.bf16 ? loadBf16(view.address(offset))
                   : _mm512_loadu_ps(view.address(offset));
}

/// 16 channels of f32 or bf16 at `p`, widened to f32.
template <bool Bf16> KILN_AVX512 inline __m512 loadPixel(const char *p) {
  if constexpr (Bf16)
    return loadBf16(p);
  else
    return _mm512_loadu_ps(reinterpret_cast<const float *>(p));
}

/// Stores `x` at `p` as f32 or rounded to bf16; returns the stored values.
/// `Stream` (f32 only, `p` 64-byte aligned) writes the cache line without
/// reading it first and without keeping it.
template <bool Bf16, bool Stream = false>
KILN_AVX512 inline __m512 storePixel(char *p, __m512 x) {
  static_assert(!(Bf16 && Stream), "a bf16 pixel is half a cache line");
  if constexpr (Bf16)
    return storeBf16(p, x);
  if constexpr (Stream)
    _mm512_stream_ps(reinterpret_cast<float *>(p), x);
  else
    _mm512_storeu_ps(reinterpret_cast<float *>(p), x);
  return x;
}

/// sums[0..16) += the 16 lanes of `x` in double precision.
KILN_AVX512 inline void addToDoubles(double *sums, __m512 x) {
  __m512d low = _mm512_cvtps_pd(_mm512_castps512_ps256(x));
  __m512d high = _mm512_cvtps_pd(
      _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1)));
  _mm512_storeu_pd(sums, _mm512_add_pd(_mm512_loadu_pd(sums), low));
  _mm512_storeu_pd(sums + 8, _mm512_add_pd(_mm512_loadu_pd(sums + 8), high));
}

/// out = B^T d for one column (or, applied to a row, d B).
KILN_AVX512 inline void inputTransform(const __m512 d[6], __m512 out[6]) {
  __m512 four = _mm512_set1_ps(4.0f), five = _mm512_set1_ps(5.0f),
         two = _mm512_set1_ps(2.0f);
  __m512 t1 = _mm512_fnmadd_ps(four, d[2], d[4]); // d4 - 4 d2
  __m512 t2 = _mm512_fnmadd_ps(four, d[1], d[3]); // d3 - 4 d1
  __m512 t3 = _mm512_sub_ps(d[4], d[2]);
  __m512 t4 = _mm512_mul_ps(two, _mm512_sub_ps(d[3], d[1]));
  out[0] = _mm512_fmadd_ps(four, d[0], _mm512_fnmadd_ps(five, d[2], d[4]));
  out[1] = _mm512_add_ps(t1, t2);
  out[2] = _mm512_sub_ps(t1, t2);
  out[3] = _mm512_add_ps(t3, t4);
  out[4] = _mm512_sub_ps(t3, t4);
  out[5] = _mm512_fmadd_ps(four, d[1], _mm512_fnmadd_ps(five, d[3], d[5]));
}

/// out = A^T m for one column (or m A for a row).
KILN_AVX512 inline void outputTransform(const __m512 m[6], __m512 out[4]) {
  __m512 sum12 = _mm512_add_ps(m[1], m[2]), diff12 = _mm512_sub_ps(m[1], m[2]);
  __m512 sum34 = _mm512_add_ps(m[3], m[4]), diff34 = _mm512_sub_ps(m[3], m[4]);
  out[0] = _mm512_add_ps(_mm512_add_ps(m[0], sum12), sum34);
  out[1] = _mm512_fmadd_ps(_mm512_set1_ps(2.0f), diff34, diff12);
  out[2] = _mm512_fmadd_ps(_mm512_set1_ps(4.0f), sum34, sum12);
  out[3] = _mm512_add_ps(_mm512_fmadd_ps(_mm512_set1_ps(8.0f), diff34, diff12),
                         m[5]);
}

/// out = G g for one column of the 3x3 filter (or g G^T for a row).
KILN_AVX512 inline void filterTransform(const __m512 g[3], __m512 out[6]) {
  __m512 sixth = _mm512_set1_ps(1.0f / 6.0f);
  __m512 sum02 = _mm512_add_ps(g[0], g[2]);
  out[0] = _mm512_mul_ps(_mm512_set1_ps(0.25f), g[0]);
  out[1] =
      _mm512_mul_ps(_mm512_set1_ps(-1.0f / 6.0f), _mm512_add_ps(sum02, g[1]));
  out[2] =
      _mm512_mul_ps(_mm512_set1_ps(-1.0f / 6.0f), _mm512_sub_ps(sum02, g[1]));
  __m512 a = _mm512_fmadd_ps(_mm512_set1_ps(1.0f / 24.0f), g[0],
                             _mm512_mul_ps(sixth, g[2]));
  __m512 b = _mm512_mul_ps(_mm512_set1_ps(1.0f / 12.0f), g[1]);
  out[3] = _mm512_add_ps(a, b);
  out[4] = _mm512_sub_ps(a, b);
  out[5] = g[2];
}

/// out = A y for one column of a 4x4 output-gradient tile (or y A^T for a
/// row): the transpose of outputTransform.
KILN_AVX512 inline void outputGradientTransform(const __m512 y[4],
                                                __m512 out[6]) {
  __m512 even = _mm512_add_ps(y[0], y[2]), odd = _mm512_add_ps(y[1], y[3]);
  __m512 even4 = _mm512_fmadd_ps(_mm512_set1_ps(4.0f), y[2], y[0]);
  __m512 odd8 =
      _mm512_fmadd_ps(_mm512_set1_ps(8.0f), y[3], _mm512_add_ps(y[1], y[1]));
  out[0] = y[0];
  out[1] = _mm512_add_ps(even, odd);
  out[2] = _mm512_sub_ps(even, odd);
  out[3] = _mm512_add_ps(even4, odd8);
  out[4] = _mm512_sub_ps(even4, odd8);
  out[5] = y[3];
}

/// out = G^T u for one column of a 6x6 filter gradient (or u G for a row):
/// the transpose of filterTransform.
KILN_AVX512 inline void filterGradientTransform(const __m512 u[6],
                                                __m512 out[3]) {
  __m512 sum12 = _mm512_add_ps(u[1], u[2]), diff21 = _mm512_sub_ps(u[2], u[1]);
  __m512 sum34 = _mm512_add_ps(u[3], u[4]), diff34 = _mm512_sub_ps(u[3], u[4]);
  __m512 sixth = _mm512_set1_ps(1.0f / 6.0f);
  out[0] = _mm512_fmadd_ps(
      _mm512_set1_ps(0.25f), u[0],
      _mm512_fmadd_ps(_mm512_set1_ps(1.0f / 24.0f), sum34,
                      _mm512_mul_ps(_mm512_set1_ps(-1.0f / 6.0f), sum12)));
  out[1] = _mm512_fmadd_ps(sixth, diff21,
                           _mm512_mul_ps(_mm512_set1_ps(1.0f / 12.0f), diff34));
  out[2] =
      _mm512_add_ps(_mm512_mul_ps(sixth, _mm512_sub_ps(sum34, sum12)), u[5]);
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
  float *threadBuffers; // threadFloats() per thread
  int64_t tileRows, tileCols, tiles;
};

/// U[point][input][output] = G g G^T, 16 output channels at a time.
KILN_AVX512 void transformFilter(const Job &job, float *U) {
  int64_t C = job.inputs, K = job.outputs;
  for (int64_t i = 0; i < C; ++i) {
    for (int64_t ob = 0; ob < K; ob += 16) {
      __m512 g[3][3];
      for (int kh = 0; kh < 3; ++kh)
        for (int kw = 0; kw < 3; ++kw) {
          if (!job.inputGradient) {
            int64_t at = ((kh * 3 + kw) * C + i) * K + ob;
            g[kh][kw] =
                job.filterBf16
                    ? loadBf16(static_cast<const uint16_t *>(job.filter) + at)
                    : _mm512_loadu_ps(static_cast<const float *>(job.filter) +
                                      at);
            continue;
          }
          // The forward filter [3,3,K,C], flipped in space, its channel
          // axes swapped: 16 output channels are 16 rows C elements apart.
          int64_t at = (((2 - kh) * 3 + (2 - kw)) * K + ob) * C + i;
          alignas(64) float column[16];
          for (int o = 0; o < 16; ++o)
            column[o] =
                job.filterBf16
                    ? ref::bf16BitsToFloat(
                          static_cast<const uint16_t *>(job.filter)[at + o * C])
                    : static_cast<const float *>(job.filter)[at + o * C];
          g[kh][kw] = _mm512_load_ps(column);
        }
      __m512 columns[3][6]; // G g: columns[kw][r]
      for (int kw = 0; kw < 3; ++kw) {
        __m512 column[3] = {g[0][kw], g[1][kw], g[2][kw]};
        filterTransform(column, columns[kw]);
      }
      for (int r = 0; r < 6; ++r) {
        __m512 row[3] = {columns[0][r], columns[1][r], columns[2][r]}, u[6];
        filterTransform(row, u);
        for (int s = 0; s < 6; ++s)
          _mm512_storeu_ps(U + ((r * 6 + s) * C + i) * K + ob, u[s]);
      }
    }
  }
}

/// Bit i set where 0 <= first + i < extent, for i < count: which rows (or
/// columns) of a tile's patch lie inside the image.
inline unsigned insideBits(int64_t first, int64_t count, int64_t extent) {
  unsigned bits = 0;
  for (int64_t i = 0; i < count; ++i)
    bits |= unsigned(first + i >= 0 && first + i < extent) << i;
  return bits;
}

/// The 16 channels at `patch + offset`, widened to f32; with `Border`,
/// zeros unless `inside` (the address of a pixel outside the image may lie
/// outside the buffer, so it is formed only when inside).
template <bool Bf16, bool Border>
KILN_AVX512 inline __m512 loadPatchPixel(uintptr_t patch, int64_t offset,
                                         bool inside) {
  if (Border && !inside)
    return _mm512_setzero_ps();
  return loadPixel<Bf16>(reinterpret_cast<const char *>(patch + offset));
}

/// Rows [First, First + 3) of B^T d for one column d: inputTransform's
/// expressions for those rows, so the same bits. The top rows read
/// d[0..5), the bottom ones d[1..6).
template <int First>
KILN_AVX512 inline void inputTransformRows(const __m512 d[6], __m512 out[3]) {
  static_assert(First == 0 || First == 3);
  __m512 four = _mm512_set1_ps(4.0f), five = _mm512_set1_ps(5.0f);
  if constexpr (First == 0) {
    __m512 t1 = _mm512_fnmadd_ps(four, d[2], d[4]);
    __m512 t2 = _mm512_fnmadd_ps(four, d[1], d[3]);
    out[0] = _mm512_fmadd_ps(four, d[0], _mm512_fnmadd_ps(five, d[2], d[4]));
    out[1] = _mm512_add_ps(t1, t2);
    out[2] = _mm512_sub_ps(t1, t2);
  } else {
    __m512 t3 = _mm512_sub_ps(d[4], d[2]);
    __m512 t4 = _mm512_mul_ps(_mm512_set1_ps(2.0f), _mm512_sub_ps(d[3], d[1]));
    out[0] = _mm512_add_ps(t3, t4);
    out[1] = _mm512_sub_ps(t3, t4);
    out[2] = _mm512_fmadd_ps(four, d[1], _mm512_fnmadd_ps(five, d[3], d[5]));
  }
}

/// Points [First * 6, First * 6 + 18) of transformInputRun: rows
/// [First, First + 3) of B^T d for each patch, then those rows times B.
/// Half the rows at a time, because all six rows of six columns (36
/// vectors) do not fit in the 32 registers: on the stack, their stores and
/// the copies of the shared columns had made the transform store-bound.
/// Each column is loaded twice instead (five of its six pixels per half).
template <bool Bf16, bool Border, int First>
KILN_AVX512 inline void transformInputRows(const Job &job, uintptr_t patch,
                                           float *points, int64_t count,
                                           int64_t x0, unsigned rows) {
  const ActivationView &in = job.input;
  constexpr int64_t bytes = Bf16 ? 2 : 4;
  int64_t rowBytes = in.rowStride * bytes, pixelBytes = in.pixelStride * bytes;
  // B^T d of the column x (from the first patch's left edge) into t[.][j].
  __m512 t[3][6];
  auto transformColumn = [&](int64_t x, int j) KILN_AVX512 {
    bool columnInside = x0 + x >= 0 && x0 + x < in.width;
    __m512 column[6], out[3];
    for (int r = 0; r < 6; ++r)
      column[r] = r == (First == 0 ? 5 : 0)
                      ? _mm512_setzero_ps()
                      : loadPatchPixel<Bf16, Border>(
                            patch, r * rowBytes + x * pixelBytes,
                            columnInside && ((rows >> r) & 1));
    inputTransformRows<First>(column, out);
    for (int r = 0; r < 3; ++r)
      t[r][j] = out[r];
  };
  transformColumn(0, 0);
  transformColumn(1, 1);
  for (int64_t k = 0; k < count; ++k) {
#pragma clang loop unroll(full)
    for (int j = 2; j < 6; ++j)
      transformColumn(4 * k + j, j);
    float *tilePoints = points + k * 16;
    for (int r = 0; r < 3; ++r) {
      __m512 out[6];
      inputTransform(t[r], out);
      for (int s = 0; s < 6; ++s)
        _mm512_storeu_ps(tilePoints + ((First + r) * 6 + s) * kPointStride,
                         out[s]);
      // The next patch's first two columns are this one's last two.
      t[r][0] = t[r][4];
      t[r][1] = t[r][5];
    }
  }
}

/// V[point][block][slot + k] = B^T d B for the `count` tiles (n, tileRow,
/// tileCol + k) of one tile row. Neighbouring patches share two pixel
/// columns, so each column's transform B^T d[:, j] is computed once and the
/// last two of a patch are the first two of the next: 4 column transforms
/// a tile instead of 6 (the same operations on the same values as one patch
/// at a time, so the same bits). With `Border`, pixels outside the image
/// are zeros.
template <bool Bf16, bool Border>
KILN_AVX512 void transformInputRun(const Job &job, float *V, int64_t slot,
                                   int64_t count, int64_t n, int64_t tileRow,
                                   int64_t tileCol) {
  const ActivationView &in = job.input;
  int64_t y0 = tileRow * 4 - 1, x0 = tileCol * 4 - 1;
  unsigned rows = insideBits(y0, 6, in.height);
  constexpr int64_t bytes = Bf16 ? 2 : 4;
  // The first patch's top-left pixel may be outside the image: its address
  // is an integer until a pixel inside is loaded.
  uintptr_t origin = reinterpret_cast<uintptr_t>(in.data) +
                     uintptr_t(in.offset(n, 0, y0, x0) * bytes);
  for (int64_t block = 0; block < job.inputs / 16; ++block) {
    uintptr_t patch = origin + uintptr_t(block * in.blockStride * bytes);
    float *points = V + slotOffset(0, block, slot);
    transformInputRows<Bf16, Border, 0>(job, patch, points, count, x0, rows);
    transformInputRows<Bf16, Border, 3>(job, patch, points, count, x0, rows);
  }
}

/// transformInputRun for the tiles [first, first + count) of `job`, into
/// slots [0, count): one run per tile row they touch.
KILN_AVX512 void transformInputTiles(const Job &job, float *V, int64_t first,
                                     int64_t count) {
  int64_t tilesPerImage = job.tileRows * job.tileCols;
  const ActivationView &in = job.input;
  for (int64_t done = 0; done < count;) {
    int64_t tile = first + done;
    int64_t n = tile / tilesPerImage, inImage = tile % tilesPerImage;
    int64_t row = inImage / job.tileCols, column = inImage % job.tileCols;
    int64_t run = std::min(count - done, job.tileCols - column);
    // Inside the image: rows 4 row - 1 .. 4 row + 4 and columns
    // 4 column - 1 .. 4 (column + run) are.
    bool interior = row > 0 && row * 4 + 4 < in.height && column > 0 &&
                    (column + run) * 4 < in.width;
    auto transform = in.bf16 ? (interior ? &transformInputRun<true, false>
                                         : &transformInputRun<true, true>)
                             : (interior ? &transformInputRun<false, false>
                                         : &transformInputRun<false, true>);
    transform(job, V, done, run, n, row, column);
    done += run;
  }
}

/// The forward's per-thread statistics (statisticsFloats each), after all
/// threads' other buffers.
float *statisticsBuffers(const Job &job, int64_t threads) {
  return job.threadBuffers + threads * threadFloats(job.inputs, job.outputs);
}

/// Adds `sum` and `squares`, a tile's sums of one channel block, to
/// `sums` in double precision.
KILN_AVX512 inline void addBlockSums(const ShiftedSums &sums, int64_t block,
                                     __m512 sum, __m512 squares) {
  addToDoubles(sums.sum() + block * 16, sum);
  addToDoubles(sums.squares() + block * 16, squares);
}

/// The output tile at (n, row, col) = A^T M A, plus the epilogue; with
/// `Statistics`, the stored values minus `shift` and their squares are
/// summed in registers and added to `sums`. One instance per storage type
/// and epilogue shape, addressed by byte strides: this runs once per tile
/// and channel block, and per-pixel tests of the epilogue and the storage
/// type had made it as slow as the matrix products.
template <bool Bf16, bool Residual, bool Statistics, bool Stream>
KILN_AVX512 void transformOutputTile(const Job &job, const float *M,
                                     int64_t slot, int64_t n, int64_t tileRow,
                                     int64_t tileCol, const float *shift,
                                     const ShiftedSums *sums) {
  const ActivationView &out = job.output;
  const Winograd3x3::Epilogue &epilogue = job.epilogue;
  int64_t rows = std::min<int64_t>(4, out.height - tileRow * 4);
  int64_t columns = std::min<int64_t>(4, out.width - tileCol * 4);
  constexpr int64_t bytes = Bf16 ? 2 : 4;
  int64_t rowBytes = out.rowStride * bytes,
          pixelBytes = out.pixelStride * bytes;
  int64_t tileOffset = out.offset(n, 0, tileRow * 4, tileCol * 4) * bytes;
  char *tile = static_cast<char *>(out.data) + tileOffset;
  const char *residualTile =
      Residual ? static_cast<const char *>(epilogue.residual) + tileOffset
               : nullptr;
  bool relu = epilogue.relu;
  int64_t K = job.outputs;
  for (int64_t block = 0; block < K / 16; ++block) {
    __m512 s[4][6]; // A^T m: s[row][column]
    for (int j = 0; j < 6; ++j) {
      __m512 m[6], column[4];
      for (int r = 0; r < 6; ++r)
        m[r] = _mm512_loadu_ps(M + slotOffset(r * 6 + j, block, slot));
      outputTransform(m, column);
      for (int r = 0; r < 4; ++r)
        s[r][j] = column[r];
    }
    __m512 bias = epilogue.bias ? _mm512_loadu_ps(epilogue.bias + block * 16)
                                : _mm512_setzero_ps();
    __m512 k =
        Statistics ? _mm512_loadu_ps(shift + block * 16) : _mm512_setzero_ps();
    __m512 sum = _mm512_setzero_ps(), squares = _mm512_setzero_ps();
    int64_t blockOffset = block * out.blockStride * bytes;
    for (int r = 0; r < rows; ++r) {
      __m512 row[4];
      outputTransform(s[r], row);
      for (int c = 0; c < columns; ++c) {
        int64_t at = blockOffset + r * rowBytes + c * pixelBytes;
        __m512 v = _mm512_add_ps(row[c], bias);
        if constexpr (Residual)
          v = _mm512_add_ps(v, loadPixel<Bf16>(residualTile + at));
        if (relu)
          v = _mm512_max_ps(v, _mm512_setzero_ps());
        v = storePixel<Bf16, Stream>(tile + at, v);
        if constexpr (Statistics) {
          __m512 d = _mm512_sub_ps(v, k);
          sum = _mm512_add_ps(sum, d);
          squares = _mm512_fmadd_ps(d, d, squares);
        }
      }
    }
    if constexpr (Statistics)
      addBlockSums(*sums, block, sum, squares);
  }
  if constexpr (Statistics)
    sums->count() += double(rows * columns);
}

using OutputTileFn = void (*)(const Job &, const float *, int64_t, int64_t,
                              int64_t, int64_t, const float *,
                              const ShiftedSums *);

/// The transformOutputTile instance for `job`'s output and epilogue.
template <bool Bf16, bool Stream> OutputTileFn outputTileFn(const Job &job) {
  bool residual = job.epilogue.residual, statistics = job.epilogue.statistics;
  if (residual)
    return statistics ? &transformOutputTile<Bf16, true, true, Stream>
                      : &transformOutputTile<Bf16, true, false, Stream>;
  return statistics ? &transformOutputTile<Bf16, false, true, Stream>
                    : &transformOutputTile<Bf16, false, false, Stream>;
}
OutputTileFn outputTileFn(const Job &job) {
  if (job.output.bf16)
    return outputTileFn<true, false>(job);
  return job.streamOutput ? outputTileFn<false, true>(job)
                          : outputTileFn<false, false>(job);
}

/// Forward outputs at least this large are written with streaming stores.
/// In a training step each is an activation kept for the backward pass, in
/// memory untouched since the previous step's backward: an ordinary store
/// first reads every line from memory, which cost the 16- and 32-channel
/// Fashion-MNIST layers (6.4 and 3.2 MB) ~15% of a call; the 1.6 MB
/// 64-channel outputs and the input gradients, written where the step
/// wrote just before, gained nothing (docs/performance.md).
constexpr int64_t kStreamedOutputBytes = int64_t(2) << 20;

/// Adds the output tile at (n, row, col), as stored (read back), to
/// `sums`: x - shift and its square, summed over the tile in f32 (for the
/// thread's first group, once its mean is known).
KILN_AVX512 void addTileStatistics(const Job &job, int64_t n, int64_t tileRow,
                                   int64_t tileCol, const float *shift,
                                   const ShiftedSums &sums) {
  const ActivationView &out = job.output;
  int64_t rows = std::min<int64_t>(4, out.height - tileRow * 4);
  int64_t columns = std::min<int64_t>(4, out.width - tileCol * 4);
  for (int64_t block = 0; block < job.outputs / 16; ++block) {
    __m512 k = _mm512_loadu_ps(shift + block * 16);
    __m512 sum = _mm512_setzero_ps(), squares = _mm512_setzero_ps();
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < columns; ++c) {
        __m512 v =
            _mm512_sub_ps(loadBlock(out, out.offset(n, block, tileRow * 4 + r,
                                                    tileCol * 4 + c)),
                          k);
        sum = _mm512_add_ps(sum, v);
        squares = _mm512_fmadd_ps(v, v, squares);
      }
    addBlockSums(sums, block, sum, squares);
  }
  sums.count() += double(rows * columns);
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

/// M[point] = V[point] x U[point] for output channels [ob, ob + 16 Blocks):
/// kGroup x Blocks accumulators in registers.
template <int Blocks>
KILN_AVX512 inline void multiplyBlocks(const float *Vp, const float *Up,
                                       float *Mp, int64_t C, int64_t K,
                                       int64_t ob) {
  __m512 acc[kGroup][Blocks];
  for (int64_t g = 0; g < kGroup; ++g)
    for (int b = 0; b < Blocks; ++b)
      acc[g][b] = _mm512_setzero_ps();
  for (int64_t block = 0; block < C / 16; ++block) {
    const float *Vb = Vp + block * kBlockFloats;
    const float *Ub = Up + block * 16 * K + ob;
    if constexpr (Blocks == 1) {
      for (int64_t c = 0; c < 16; c += 4) {
        __m512 w[4];
        for (int i = 0; i < 4; ++i)
          w[i] = _mm512_loadu_ps(Ub + (c + i) * K);
        for (int64_t g = 0; g < kGroup; ++g)
          fmaFourBroadcasts(acc[g][0], Vb + g * 16 + c, w);
      }
      continue;
    }
    for (int64_t c = 0; c < 16; ++c) {
      __m512 w[Blocks];
      for (int b = 0; b < Blocks; ++b)
        w[b] = _mm512_loadu_ps(Ub + c * K + 16 * b);
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

KILN_AVX512 void multiply(const Job &job, const float *U, const float *V,
                          float *M) {
  int64_t C = job.inputs, K = job.outputs;
  for (int64_t p = 0; p < kPoints; ++p) {
    const float *Vp = V + p * kPointStride;
    const float *Up = U + p * C * K;
    float *Mp = M + p * kPointStride;
    int64_t ob = 0;
    for (; ob + 32 <= K; ob += 32)
      multiplyBlocks<2>(Vp, Up, Mp, C, K, ob);
    for (; ob < K; ob += 16)
      multiplyBlocks<1>(Vp, Up, Mp, C, K, ob);
  }
}

/// Asks the caches for the pixels that tiles [first, first + count) read
/// from `view`: rows and columns [4 t - before, 4 t - before + extent) of
/// tile t, clipped to the image; a 16-channel block of a pixel is one
/// cache line. Runs of tiles in one tile row share their rows.
void prefetchTiles(const Job &job, const ActivationView &view, int64_t first,
                   int64_t count, int64_t before, int64_t extent) {
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
    for (int64_t block = 0; block < view.channels / 16; ++block)
      for (int64_t y = y0; y < y1; ++y)
        for (int64_t x = x0; x < x1; ++x)
          __builtin_prefetch(view.address(view.offset(n, block, y, x)));
    tile += run;
  }
}

/// Zeros in `slot` of a [36][channels/16][kGroup][16] buffer.
void zeroSlot(float *buffer, int64_t channels, int64_t slot) {
  for (int64_t p = 0; p < kPoints; ++p)
    for (int64_t block = 0; block < channels / 16; ++block)
      std::fill_n(buffer + slotOffset(p, block, slot), 16, 0.0f);
}

KILN_AVX512 void runThread(void *data) {
  const Job &job = *static_cast<const Job *>(data);
  int64_t thread = omp_get_thread_num(), threads = omp_get_num_threads();
  float *U = job.threadBuffers + thread * threadFloats(job.inputs, job.outputs);
  float *V = U + kPoints * job.inputs * job.outputs;
  float *M = V + transformedFloats(job.inputs);
  // The statistics shift by the mean of the thread's first group of tiles:
  // summed unshifted once, then again from that mean.
  ShiftedSums sums{nullptr, job.outputs};
  float *shift = nullptr;
  if (job.epilogue.statistics) {
    float *statistics = statisticsBuffers(job, threads) +
                        thread * statisticsFloats(job.outputs);
    sums.data = reinterpret_cast<double *>(statistics);
    shift = statistics + 2 * ShiftedSums::doubles(job.outputs);
    sums.clear();
    std::fill_n(shift, job.outputs, 0.0f);
  }
  transformFilter(job, U);
  OutputTileFn transformTile = outputTileFn(job);

  int64_t groups = (job.tiles + kGroup - 1) / kGroup;
  int64_t tilesPerImage = job.tileRows * job.tileCols;
  bool haveShift = false;
  for (int64_t group = groups * thread / threads,
               end = groups * (thread + 1) / threads;
       group < end; ++group) {
    int64_t first = group * kGroup;
    int64_t count = std::min(kGroup, job.tiles - first);
    if (group + 1 < end)
      prefetchTiles(job, job.input, first + kGroup, kGroup, 1, 6);
    transformInputTiles(job, V, first, count);
    // The unused slots of the last group: their products are never stored,
    // but garbage could hold NaNs or slow denormals.
    for (int64_t slot = count; slot < kGroup; ++slot)
      zeroSlot(V, job.inputs, slot);
    multiply(job, U, V, M);
    for (int64_t slot = 0; slot < count; ++slot) {
      int64_t tile = first + slot;
      int64_t n = tile / tilesPerImage, inImage = tile % tilesPerImage;
      transformTile(job, M, slot, n, inImage / job.tileCols,
                    inImage % job.tileCols, shift,
                    job.epilogue.statistics ? &sums : nullptr);
    }
    if (!job.epilogue.statistics || haveShift)
      continue;
    // The first group was summed unshifted: its mean is the shift, and its
    // tiles are summed again from there (read back from the output: a
    // thread's loads see its own streaming stores).
    for (int64_t k = 0; k < job.outputs; ++k)
      sums.shift()[k] = shift[k] = float(sums.sum()[k] / sums.count());
    std::fill_n(sums.sum(), 2 * job.outputs + 1, 0.0);
    for (int64_t slot = 0; slot < count; ++slot) {
      int64_t tile = first + slot;
      int64_t n = tile / tilesPerImage, inImage = tile % tilesPerImage;
      addTileStatistics(job, n, inImage / job.tileCols, inImage % job.tileCols,
                        shift, sums);
    }
    haveShift = true;
  }
  if (job.streamOutput)
    _mm_sfence(); // streaming stores are weakly ordered: done before the join
  if (job.epilogue.statistics) {
    GOMP_barrier();
    finishChannelStatistics(
        reinterpret_cast<const double *>(statisticsBuffers(job, threads)),
        statisticsFloats(job.outputs) / 2, threads, job.outputs,
        job.outputs * thread / threads, job.outputs * (thread + 1) / threads,
        job.epilogue.statistics);
  }
}

/// Y[point][block][slot] = A y A^T for the 4x4 output-gradient tile at
/// (n, row, col), zeros past the image's edge.
template <bool Bf16>
KILN_AVX512 void transformOutputGradientTile(const Job &job, float *Y,
                                             int64_t slot, int64_t n,
                                             int64_t tileRow, int64_t tileCol) {
  const ActivationView &dy = job.output;
  unsigned rows = insideBits(tileRow * 4, 4, dy.height);
  unsigned columns = insideBits(tileCol * 4, 4, dy.width);
  constexpr int64_t bytes = Bf16 ? 2 : 4;
  int64_t rowBytes = dy.rowStride * bytes, pixelBytes = dy.pixelStride * bytes;
  uintptr_t origin =
      reinterpret_cast<uintptr_t>(dy.data) +
      uintptr_t(dy.offset(n, 0, tileRow * 4, tileCol * 4) * bytes);
  int64_t K = job.outputs;
  for (int64_t block = 0; block < K / 16; ++block) {
    uintptr_t tile = origin + uintptr_t(block * dy.blockStride * bytes);
    __m512 t[6][4]; // A y: t[row][column]
    for (int c = 0; c < 4; ++c) {
      __m512 column[4], out[6];
      for (int r = 0; r < 4; ++r)
        column[r] =
            loadPatchPixel<Bf16, true>(tile, r * rowBytes + c * pixelBytes,
                                       (rows >> r) & (columns >> c) & 1);
      outputGradientTransform(column, out);
      for (int r = 0; r < 6; ++r)
        t[r][c] = out[r];
    }
    float *points = Y + slotOffset(0, block, slot);
    for (int r = 0; r < 6; ++r) {
      __m512 out[6];
      outputGradientTransform(t[r], out);
      for (int s = 0; s < 6; ++s)
        _mm512_storeu_ps(points + (r * 6 + s) * kPointStride, out[s]);
    }
  }
}

/// dU[point] += V[point]^T x Y[point] for each of the 36 points: [C x
/// kGroup] x [kGroup x K]. `Blocks` blocks of 16 output channels by 16 / Blocks
/// input channels of sums in registers at a time: each broadcast input
/// value serves `Blocks` multiply-adds.
template <int Blocks>
KILN_AVX512 inline void accumulateBlocks(const float *Vb, const float *Yp,
                                         float *sums, int64_t K, int64_t ob) {
  constexpr int kChannels = 16 / Blocks;
  for (int half = 0; half < Blocks; ++half) {
    __m512 acc[kChannels][Blocks];
    float *rows = sums + half * kChannels * K;
    for (int c = 0; c < kChannels; ++c)
      for (int b = 0; b < Blocks; ++b)
        acc[c][b] = _mm512_loadu_ps(rows + c * K + 16 * b);
    for (int64_t g = 0; g < kGroup; ++g) {
      __m512 y[Blocks];
      for (int b = 0; b < Blocks; ++b)
        y[b] = _mm512_loadu_ps(Yp + (ob / 16 + b) * kBlockFloats + g * 16);
      if constexpr (Blocks == 1) {
        for (int c = 0; c < kChannels; c += 4)
          fmaFourBroadcasts(&acc[c][0], Vb + g * 16 + c, y[0]);
        continue;
      }
      for (int c = 0; c < kChannels; ++c) {
        __m512 v = _mm512_set1_ps(Vb[g * 16 + half * kChannels + c]);
        for (int b = 0; b < Blocks; ++b)
          acc[c][b] = _mm512_fmadd_ps(v, y[b], acc[c][b]);
      }
    }
    for (int c = 0; c < kChannels; ++c)
      for (int b = 0; b < Blocks; ++b)
        _mm512_storeu_ps(rows + c * K + 16 * b, acc[c][b]);
  }
}

KILN_AVX512 void accumulateFilterGradient(const Job &job, const float *V,
                                          const float *Y, float *dU) {
  int64_t C = job.inputs, K = job.outputs;
  for (int64_t p = 0; p < kPoints; ++p) {
    const float *Vp = V + p * kPointStride;
    const float *Yp = Y + p * kPointStride;
    float *dUp = dU + p * C * K;
    for (int64_t block = 0; block < C / 16; ++block) {
      const float *Vb = Vp + block * kBlockFloats;
      float *sums = dUp + block * 16 * K;
      int64_t ob = 0;
      for (; ob + 32 <= K; ob += 32)
        accumulateBlocks<2>(Vb, Yp, sums + ob, K, ob);
      for (; ob < K; ob += 16)
        accumulateBlocks<1>(Vb, Yp, sums + ob, K, ob);
    }
  }
}

/// The filter gradient [3,3,C,K] = G^T (sum of the threads' dU) G for input
/// channels [begin, end).
KILN_AVX512 void finishFilterGradient(const Job &job, int64_t threads,
                                      int64_t begin, int64_t end) {
  int64_t C = job.inputs, K = job.outputs;
  int64_t stride = threadFloats(C, K);
  for (int64_t i = begin; i < end; ++i)
    for (int64_t ob = 0; ob < K; ob += 16) {
      __m512 u[6][6];
      for (int p = 0; p < kPoints; ++p) {
        const float *sum = job.threadBuffers + (p * C + i) * K + ob;
        __m512 total = _mm512_loadu_ps(sum);
        for (int64_t t = 1; t < threads; ++t)
          total = _mm512_add_ps(total, _mm512_loadu_ps(sum + t * stride));
        u[p / 6][p % 6] = total;
      }
      __m512 columns[6][3]; // G^T u: columns[column][row]
      for (int j = 0; j < 6; ++j) {
        __m512 column[6] = {u[0][j], u[1][j], u[2][j],
                            u[3][j], u[4][j], u[5][j]};
        filterGradientTransform(column, columns[j]);
      }
      for (int r = 0; r < 3; ++r) {
        __m512 row[6] = {columns[0][r], columns[1][r], columns[2][r],
                         columns[3][r], columns[4][r], columns[5][r]};
        __m512 out[3];
        filterGradientTransform(row, out);
        for (int c = 0; c < 3; ++c)
          _mm512_storeu_ps(job.filterGrad + ((r * 3 + c) * C + i) * K + ob,
                           out[c]);
      }
    }
}

KILN_AVX512 void runFilterGradientThread(void *data) {
  const Job &job = *static_cast<const Job *>(data);
  int64_t thread = omp_get_thread_num(), threads = omp_get_num_threads();
  int64_t C = job.inputs, K = job.outputs;
  float *dU = job.threadBuffers + thread * threadFloats(C, K);
  float *V = dU + kPoints * C * K;
  float *Y = V + transformedFloats(C);
  std::fill_n(dU, kPoints * C * K, 0.0f);

  int64_t groups = (job.tiles + kGroup - 1) / kGroup;
  int64_t tilesPerImage = job.tileRows * job.tileCols;
  for (int64_t group = groups * thread / threads,
               end = groups * (thread + 1) / threads;
       group < end; ++group) {
    int64_t first = group * kGroup;
    int64_t count = std::min(kGroup, job.tiles - first);
    if (group + 1 < end) {
      prefetchTiles(job, job.input, first + kGroup, kGroup, 1, 6);
      prefetchTiles(job, job.output, first + kGroup, kGroup, 0, 4);
    }
    transformInputTiles(job, V, first, count);
    for (int64_t slot = 0; slot < kGroup; ++slot) {
      int64_t tile = first + slot;
      if (slot >= count) {
        // Unused slots add zeros (0 x garbage could be NaN).
        zeroSlot(V, C, slot);
        zeroSlot(Y, K, slot);
        continue;
      }
      int64_t n = tile / tilesPerImage, inImage = tile % tilesPerImage;
      int64_t row = inImage / job.tileCols, column = inImage % job.tileCols;
      if (job.output.bf16)
        transformOutputGradientTile<true>(job, Y, slot, n, row, column);
      else
        transformOutputGradientTile<false>(job, Y, slot, n, row, column);
    }
    accumulateFilterGradient(job, V, Y, dU);
  }
  GOMP_barrier();
  finishFilterGradient(job, threads, C * thread / threads,
                       C * (thread + 1) / threads);
}

} // namespace

size_t Winograd3x3::workspaceBytes(int threads) const {
  int64_t floats = threadFloats(inputs, outputs);
  if (pass == Pass::Forward)
    floats += statisticsFloats(outputs);
  return size_t(threads) * size_t(floats) * sizeof(float);
}

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
  job.threadBuffers = static_cast<float *>(workspace);
  job.tileRows = (output.height + 3) / 4;
  job.tileCols = (output.width + 3) / 4;
  job.tiles = output.images * job.tileRows * job.tileCols;
  GOMP_parallel(&runThread, &job, unsigned(threads), 0);
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
  job.threadBuffers = static_cast<float *>(workspace);
  job.tileRows = (outputGrad.height + 3) / 4;
  job.tileCols = (outputGrad.width + 3) / 4;
  job.tiles = outputGrad.images * job.tileRows * job.tileCols;
  GOMP_parallel(&runFilterGradientThread, &job, unsigned(threads), 0);
}

} // namespace kiln::rt::exec
