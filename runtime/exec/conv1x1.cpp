//===- conv1x1.cpp - 1x1 convolutions as blocked matrix products on AVX2 --===//
//
// The register tile is 6 rows by 16 columns: per step of the reduction, two
// loads of the packed right operand, six broadcasts of the left and twelve
// fused multiply-adds into twelve accumulators (three registers left for
// the operands). The forward pass and the input gradient block the rows
// (kPanelsPerBlock tiles of the output's pixels) and the reduction
// (kDepthBlock channels), so that a 16-column panel of the packed filter
// stays in L1 while the block's tiles run through it; the filter gradient
// packs chunks of kPixelChunk pixels of both operands, each thread its
// share of the gradient's rows or columns, and adds each chunk's products
// into the gradient.
//
//===----------------------------------------------------------------------===//

#include "kiln/rt/exec/conv1x1.h"

#include "kiln/rt/exec/gomp.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>

// As in winograd.cpp: the target attribute on each function instead of
// -mavx2 on the file, so that no inline function of a shared header is
// emitted with AVX2 instructions for CPUs without them.
#define KILN_AVX2 __attribute__((target("avx2,fma")))

namespace kiln::rt::exec {

bool Conv1x1::available() {
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

Conv1x1::Conv1x1(int64_t images, int64_t height, int64_t width,
                 int64_t inputs, int64_t outputs, int64_t strideH,
                 int64_t strideW)
    : images(images), height(height), width(width), inputs(inputs),
      outputs(outputs), strideH(strideH), strideW(strideW) {}

namespace {

constexpr int64_t kRows = 6;
constexpr int64_t kCols = 16;
/// Channels of the reduction per pass over a block of output tiles: the
/// packed panel (kDepthBlock x 16 floats, 16 KiB) stays in L1.
constexpr int64_t kDepthBlock = 256;
/// Row tiles per block: 96 rows of kDepthBlock floats (96 KiB) in L2.
constexpr int64_t kPanelsPerBlock = 16;
constexpr int64_t kBlockRows = kRows * kPanelsPerBlock;
/// Pixels per chunk of the filter gradient; per chunk a thread packs its
/// share of both operands and adds a tile's products into the gradient.
constexpr int64_t kPixelChunk = 256;
/// Row tiles of the filter gradient per pass over the packed output
/// gradient: their packed inputs (kPixelChunk x 6 floats each, 144 KiB)
/// stay in L2 while each 16-column panel is multiplied by them.
constexpr int64_t kRowTilesPerBlock = 24;
/// Outputs from this size on are written with streaming stores.
constexpr int64_t kStreamBytes = int64_t(2) << 20;
/// Floats from one row tile's packed inputs to the next: 8 more than its
/// pixels take, since each pixel's 6 inputs are stored as 8 floats (the
/// next pixel's store overwrites the 2 extra, the last one's land here).
constexpr int64_t kRowTileStride = kPixelChunk * kRows + 8;

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t roundUp(int64_t a, int64_t b) { return ceilDiv(a, b) * b; }

/// c[r][0..16) (+)= sum over d < depth of a[r][d * Step] * b[d][0..16) for
/// r < R, each element one chain of fused multiply-adds in d order.
/// With `Stream`, the results are written with streaming stores (c's rows
/// 32-byte aligned), which do not read the lines they write first.
template <int R, int64_t Step, bool Stream = false>
KILN_AVX2 void tile(const float *const *a, int64_t aOffset, const float *b,
                    int64_t depth, float *const *c, int64_t cOffset,
                    bool accumulate) {
  __m256 lo[R], hi[R];
  const float *rows[R];
  for (int r = 0; r < R; ++r) {
    rows[r] = a[r] + aOffset;
    if (accumulate) {
      lo[r] = _mm256_loadu_ps(c[r] + cOffset);
      hi[r] = _mm256_loadu_ps(c[r] + cOffset + 8);
    } else {
      lo[r] = _mm256_setzero_ps();
      hi[r] = _mm256_setzero_ps();
    }
  }
  for (int64_t d = 0; d < depth; ++d) {
    __m256 b0 = _mm256_load_ps(b + kCols * d);
    __m256 b1 = _mm256_load_ps(b + kCols * d + 8);
    for (int r = 0; r < R; ++r) {
      __m256 x = _mm256_broadcast_ss(rows[r] + d * Step);
      lo[r] = _mm256_fmadd_ps(x, b0, lo[r]);
      hi[r] = _mm256_fmadd_ps(x, b1, hi[r]);
    }
  }
  for (int r = 0; r < R; ++r) {
    if (Stream) {
      _mm256_stream_ps(c[r] + cOffset, lo[r]);
      _mm256_stream_ps(c[r] + cOffset + 8, hi[r]);
    } else {
      _mm256_storeu_ps(c[r] + cOffset, lo[r]);
      _mm256_storeu_ps(c[r] + cOffset + 8, hi[r]);
    }
  }
}

template <int64_t Step, bool Stream = false>
KILN_AVX2 void tileRows(int64_t rows, const float *const *a, int64_t aOffset,
                        const float *b, int64_t depth, float *const *c,
                        int64_t cOffset, bool accumulate) {
  switch (rows) {
  case 6:
    return tile<6, Step, Stream>(a, aOffset, b, depth, c, cOffset, accumulate);
  case 5:
    return tile<5, Step, Stream>(a, aOffset, b, depth, c, cOffset, accumulate);
  case 4:
    return tile<4, Step, Stream>(a, aOffset, b, depth, c, cOffset, accumulate);
  case 3:
    return tile<3, Step, Stream>(a, aOffset, b, depth, c, cOffset, accumulate);
  case 2:
    return tile<2, Step, Stream>(a, aOffset, b, depth, c, cOffset, accumulate);
  default:
    return tile<1, Step, Stream>(a, aOffset, b, depth, c, cOffset, accumulate);
  }
}

/// Asks for floats [from, from + n) in L2: the operands of the next block
/// or chunk, fetched while this one's products run (a block's or chunk's
/// operands read only as it starts would stall its first products on
/// memory).
inline void prefetch(const float *from, int64_t n) {
  const char *p = reinterpret_cast<const char *>(from);
  const char *end = reinterpret_cast<const char *>(from + n);
  for (p -= reinterpret_cast<uintptr_t>(p) % 64; p < end; p += 64)
    _mm_prefetch(p, _MM_HINT_T1);
}

/// Where output pixel p reads (or writes) its input pixel.
struct PixelMap {
  int64_t height, width, outHeight, outWidth, strideH, strideW;

  bool unit() const { return strideH == 1 && strideW == 1; }
  int64_t input(int64_t p) const {
    if (unit())
      return p;
    int64_t perImage = outHeight * outWidth;
    int64_t n = p / perImage, rest = p % perImage;
    return (n * height + rest / outWidth * strideH) * width +
           rest % outWidth * strideW;
  }
  /// Whether input pixel i is read by some output pixel.
  bool sampled(int64_t i) const {
    int64_t w = i % width, h = i / width % height;
    return h % strideH == 0 && w % strideW == 0;
  }
};

/// One call of a pass, shared by the threads of its parallel region.
struct Job {
  PixelMap map;
  int64_t images, pixels; // pixels of the output
  int64_t inputs, outputs;
  const float *input, *filter, *outputGrad;
  float *output, *inputGrad, *filterGrad;
  float *packed;     // the filter's panels
  float *threadBase; // the filter gradient's buffers, per thread
  int64_t threadFloats;
};

/// Part `thread` of `threads` equal parts of [0, n).
void share(int64_t n, int64_t thread, int64_t threads, int64_t &begin,
           int64_t &end) {
  begin = n * thread / threads;
  end = n * (thread + 1) / threads;
}

/// out[outRow(p)][0..n) = sum over d < depth of a[aRow(p)][d] *
/// panels[j / 16][d][j % 16] for the output pixels p of this thread's share,
/// aRow and outRow the identity or the input pixel of p (`stridedA`: a is
/// the input, else the output is); `outBytes` is the output's size.
KILN_AVX2 void products(const Job &job, const float *a, int64_t depth,
                        float *out, int64_t n, int64_t outBytes,
                        bool stridedA, int64_t thread, int64_t threads) {
  int64_t tiles = ceilDiv(job.pixels, kRows), first, last;
  share(tiles, thread, threads, first, last);
  // Large outputs written once, by whole aligned lines, are streamed, as
  // the Winograd's forward outputs are (winograd.h): a training step's
  // activations, in memory untouched since the previous step, whose lines
  // an ordinary store would read first.
  bool stream = depth <= kDepthBlock && outBytes >= kStreamBytes &&
                reinterpret_cast<uintptr_t>(out) % 64 == 0;
  const float *aRows[kBlockRows];
  float *outRows[kBlockRows];
  auto aRow = [&](int64_t p) {
    return a + (stridedA ? job.map.input(p) : p) * depth;
  };
  for (int64_t block = first; block < last; block += kPanelsPerBlock) {
    int64_t blockEnd = std::min(block + kPanelsPerBlock, last);
    int64_t row0 = block * kRows,
            rowEnd = std::min(blockEnd * kRows, job.pixels);
    for (int64_t p = row0; p < rowEnd; ++p) {
      aRows[p - row0] = aRow(p);
      outRows[p - row0] = out + (stridedA ? p : job.map.input(p)) * n;
    }
    // The next block's rows of `a`, a share before each tile.
    int64_t nextEnd = std::min(
        std::min(blockEnd + kPanelsPerBlock, last) * kRows, job.pixels);
    int64_t nextRows = std::max<int64_t>(nextEnd - rowEnd, 0);
    int64_t calls = ceilDiv(depth, kDepthBlock) * (n / kCols) *
                    ceilDiv(rowEnd - row0, kRows);
    int64_t call = 0;
    for (int64_t d0 = 0; d0 < depth; d0 += kDepthBlock) {
      int64_t dn = std::min(kDepthBlock, depth - d0);
      for (int64_t col = 0; col < n; col += kCols) {
        const float *panel = job.packed + col * depth + d0 * kCols;
        for (int64_t r = 0; r < rowEnd - row0; r += kRows, ++call) {
          for (int64_t q = nextRows * call / calls,
                       qEnd = nextRows * (call + 1) / calls;
               q < qEnd; ++q)
            prefetch(aRow(rowEnd + q), depth);
          int64_t rows = std::min(kRows, rowEnd - row0 - r);
          if (stream)
            tileRows<1, true>(rows, aRows + r, d0, panel, dn, outRows + r,
                              col, false);
          else
            tileRows<1>(rows, aRows + r, d0, panel, dn, outRows + r, col,
                        d0 > 0);
        }
      }
    }
  }
  if (stream)
    _mm_sfence(); // streaming stores are weakly ordered: done before the join
}

/// r[i][j] = r[j][i].
KILN_AVX2 inline void transpose8x8(__m256 r[8]) {
  __m256 t[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  __m256 u[8];
  for (int i = 0; i < 8; i += 4) {
    u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
    u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);
    u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);
  }
  for (int i = 0; i < 4; ++i) {
    r[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
    r[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
  }
}

/// packed[j / 16][d][j % 16] = filter[d][j] (the forward pass, `rows` = d,
/// `cols` = j) or filter[j][d] (`transposed`, the input gradient), for this
/// thread's share of the 16-column panels.
KILN_AVX2 void packFilter(const float *filter, int64_t rows, int64_t cols,
                          bool transposed, float *packed, int64_t thread,
                          int64_t threads) {
  int64_t first, last;
  share(cols / kCols, thread, threads, first, last);
  for (int64_t panel = first; panel < last; ++panel) {
    float *to = packed + panel * kCols * rows;
    int64_t col = panel * kCols;
    if (!transposed) {
      for (int64_t d = 0; d < rows; ++d) {
        const float *from = filter + d * cols + col;
        _mm256_store_ps(to + d * kCols, _mm256_loadu_ps(from));
        _mm256_store_ps(to + d * kCols + 8, _mm256_loadu_ps(from + 8));
      }
      continue;
    }
    // The filter is [cols][rows] (rows a multiple of 16): 16 of its rows
    // into one panel, as 8x8 transposes (a scalar copy took 3-4% of an
    // input-gradient call at 2048 x 512 channels).
    for (int64_t d = 0; d < rows; d += 8)
      for (int64_t half = 0; half < 2; ++half) {
        const float *from = filter + (col + 8 * half) * rows + d;
        __m256 r[8];
        for (int i = 0; i < 8; ++i)
          r[i] = _mm256_loadu_ps(from + i * rows);
        transpose8x8(r);
        for (int i = 0; i < 8; ++i)
          _mm256_store_ps(to + (d + i) * kCols + 8 * half, r[i]);
      }
  }
}

KILN_AVX2 void forwardShare(const Job &job, int64_t thread, int64_t threads) {
  packFilter(job.filter, job.inputs, job.outputs, false, job.packed, thread,
             threads);
  GOMP_barrier();
  products(job, job.input, job.inputs, job.output, job.outputs,
           job.pixels * job.outputs * int64_t(sizeof(float)), true, thread,
           threads);
}

KILN_AVX2 void inputGradientShare(const Job &job, int64_t thread,
                                  int64_t threads) {
  packFilter(job.filter, job.outputs, job.inputs, true, job.packed, thread,
             threads);
  if (!job.map.unit()) {
    // Input pixels no output pixel reads have a zero gradient.
    int64_t all = job.images * job.map.height * job.map.width;
    int64_t first, last;
    share(all, thread, threads, first, last);
    for (int64_t i = first; i < last; ++i)
      if (!job.map.sampled(i))
        std::memset(job.inputGrad + i * job.inputs, 0,
                    size_t(job.inputs) * sizeof(float));
  }
  GOMP_barrier();
  products(job, job.outputGrad, job.outputs, job.inputGrad, job.inputs,
           job.images * job.map.height * job.map.width * job.inputs *
               int64_t(sizeof(float)),
           false, thread, threads);
}

/// The filter gradient's rows are the input channels, 6 to a tile, its
/// columns the output channels, 16 to a panel; a thread takes a share of
/// whichever has more, and all of the other, so that it packs no more of
/// an operand than another thread does of the larger one.
KILN_AVX2 void filterGradientShare(const Job &job, int64_t thread,
                                   int64_t threads) {
  int64_t C = job.inputs, K = job.outputs;
  int64_t rowTiles = ceilDiv(C, kRows), panels = K / kCols;
  int64_t t0 = 0, t1 = rowTiles, k0 = 0, k1 = panels;
  if (K >= C)
    share(panels, thread, threads, k0, k1);
  else
    share(rowTiles, thread, threads, t0, t1);
  if (t0 == t1 || k0 == k1)
    return;
  // [tile][pixel][6] inputs, then [panel][pixel][16] output gradients.
  float *xPacked = job.threadBase + thread * job.threadFloats;
  float *dyPacked = xPacked + roundUp((t1 - t0) * kRowTileStride, 16);
  const float *xRows[kRows];
  float *gradRows[kRows];
  for (int64_t p0 = 0; p0 < job.pixels; p0 += kPixelChunk) {
    int64_t pn = std::min(kPixelChunk, job.pixels - p0);
    for (int64_t p = p0; p < p0 + pn; ++p) {
      const float *x = job.input + job.map.input(p) * C;
      for (int64_t t = t0; t < t1; ++t) {
        int64_t c = t * kRows;
        float *to = xPacked + (t - t0) * kRowTileStride + (p - p0) * kRows;
        if (c + 8 <= C) {
          _mm256_storeu_ps(to, _mm256_loadu_ps(x + c));
        } else {
          for (int64_t i = 0; i < std::min<int64_t>(kRows, C - c); ++i)
            to[i] = x[c + i];
        }
      }
      const float *dy = job.outputGrad + p * K;
      for (int64_t k = k0; k < k1; ++k) {
        float *to = dyPacked + ((k - k0) * kPixelChunk + (p - p0)) * kCols;
        _mm256_store_ps(to, _mm256_loadu_ps(dy + k * kCols));
        _mm256_store_ps(to + 8, _mm256_loadu_ps(dy + k * kCols + 8));
      }
    }
    // The next chunk's rows of both operands, a share before each tile.
    int64_t nextRows = std::min(kPixelChunk, job.pixels - p0 - pn);
    int64_t calls = (t1 - t0) * (k1 - k0), call = 0;
    int64_t cFirst = t0 * kRows, cCount = std::min(t1 * kRows, C) - cFirst;
    for (int64_t tb = t0; tb < t1; tb += kRowTilesPerBlock) {
      int64_t tbEnd = std::min(tb + kRowTilesPerBlock, t1);
      for (int64_t k = k0; k < k1; ++k) {
        const float *panel = dyPacked + (k - k0) * kPixelChunk * kCols;
        for (int64_t t = tb; t < tbEnd; ++t, ++call) {
          for (int64_t q = p0 + pn + nextRows * call / calls,
                       qEnd = p0 + pn + nextRows * (call + 1) / calls;
               q < qEnd; ++q) {
            prefetch(job.input + job.map.input(q) * C + cFirst, cCount);
            prefetch(job.outputGrad + q * K + k0 * kCols, (k1 - k0) * kCols);
          }
          int64_t rows = std::min(kRows, C - t * kRows);
          for (int64_t r = 0; r < rows; ++r) {
            xRows[r] = xPacked + (t - t0) * kRowTileStride + r;
            gradRows[r] = job.filterGrad + (t * kRows + r) * K;
          }
          tileRows<kRows>(rows, xRows, 0, panel, pn, gradRows, k * kCols,
                          p0 > 0);
        }
      }
    }
  }
}

enum class Pass { Forward, InputGradient, FilterGradient };

struct Region {
  const Job *job;
  Pass pass;
};

void onThread(void *data) {
  const Region &region = *static_cast<const Region *>(data);
  int64_t thread = omp_get_thread_num(), threads = omp_get_num_threads();
  switch (region.pass) {
  case Pass::Forward:
    return forwardShare(*region.job, thread, threads);
  case Pass::InputGradient:
    return inputGradientShare(*region.job, thread, threads);
  case Pass::FilterGradient:
    return filterGradientShare(*region.job, thread, threads);
  }
}

/// Floats of one thread's filter-gradient buffers: all row tiles of the
/// inputs and all panels of the output gradients, whichever share it takes.
int64_t threadFloats(int64_t C, int64_t K) {
  return roundUp(ceilDiv(C, kRows) * kRowTileStride, 16) + K * kPixelChunk;
}

Job makeJob(const PixelMap &map, int64_t images, int64_t inputs,
            int64_t outputs, void *workspace) {
  Job job{};
  job.map = map;
  job.images = images;
  job.pixels = images * map.outHeight * map.outWidth;
  job.inputs = inputs;
  job.outputs = outputs;
  job.packed = static_cast<float *>(workspace);
  job.threadBase = job.packed + roundUp(inputs * outputs, 16);
  job.threadFloats = threadFloats(inputs, outputs);
  return job;
}

void runRegion(const Job &job, Pass pass, int threads) {
  Region region{&job, pass};
  GOMP_parallel(onThread, &region, unsigned(std::max(threads, 1)), 0);
}

} // namespace

size_t Conv1x1::workspaceBytes(int threads) const {
  int64_t floats = roundUp(inputs * outputs, 16) +
                   int64_t(threads) * threadFloats(inputs, outputs);
  return size_t(floats) * sizeof(float);
}

void Conv1x1::forward(const float *input, const float *filter, float *output,
                      void *workspace, int threads) const {
  Job job = makeJob({height, width, outputHeight(), outputWidth(), strideH,
                     strideW},
                    images, inputs, outputs, workspace);
  job.input = input;
  job.filter = filter;
  job.output = output;
  runRegion(job, Pass::Forward, threads);
}

void Conv1x1::inputGradient(const float *outputGrad, const float *filter,
                            float *inputGrad, void *workspace,
                            int threads) const {
  Job job = makeJob({height, width, outputHeight(), outputWidth(), strideH,
                     strideW},
                    images, inputs, outputs, workspace);
  job.outputGrad = outputGrad;
  job.filter = filter;
  job.inputGrad = inputGrad;
  runRegion(job, Pass::InputGradient, threads);
}

void Conv1x1::filterGradient(const float *input, const float *outputGrad,
                             float *filterGrad, void *workspace,
                             int threads) const {
  Job job = makeJob({height, width, outputHeight(), outputWidth(), strideH,
                     strideW},
                    images, inputs, outputs, workspace);
  job.input = input;
  job.outputGrad = outputGrad;
  job.filterGrad = filterGrad;
  runRegion(job, Pass::FilterGradient, threads);
}

} // namespace kiln::rt::exec
