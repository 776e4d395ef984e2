//===- channel_statistics.cpp - Batch statistics of a convolution output --===//
#include "kiln/rt/exec/channel_statistics.h"

#include "kiln/rt/exec/gomp.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace kiln::rt::exec {

void ShiftedSums::clear() const { std::fill_n(data, doubles(channels), 0.0); }

void finishChannelStatistics(const double *threadSums, int64_t stride,
                             int64_t threads, int64_t channels, int64_t begin,
                             int64_t end, float *meanVariance) {
  for (int64_t c = begin; c < end; ++c) {
    double count = 0, mean = 0, deviations = 0;
    for (int64_t t = 0; t < threads; ++t) {
      ShiftedSums sums{const_cast<double *>(threadSums + t * stride), channels};
      double n = sums.count();
      if (n == 0)
        continue;
      double offset = sums.sum()[c] / n;
      double threadMean = sums.shift()[c] + offset;
      double threadDeviations =
          std::max(sums.squares()[c] - sums.sum()[c] * offset, 0.0);
      double total = count + n, delta = threadMean - mean;
      mean += delta * n / total;
      deviations += threadDeviations + delta * delta * count * n / total;
      count = total;
    }
    meanVariance[c] = float(mean);
    meanVariance[channels + c] = float(count > 0 ? deviations / count : 0.0);
  }
}

namespace {

struct Job {
  ActivationView view;
  float *meanVariance;
  double *threadSums;
};

/// A bf16 value widened (exactly) to f32.
inline float widen(uint16_t bits) {
  uint32_t word = uint32_t(bits) << 16;
  float value;
  std::memcpy(&value, &word, sizeof value);
  return value;
}

/// Adds the sums of x - shift and of its square over pixel row (n, y) of
/// `view` to `sums`: 16 channels (one block's run of pixels, contiguous in
/// both layouts) at a time in f32, or one at a time when NHWC channels are
/// not a multiple of 16.
void addRow(const ActivationView &view, int64_t n, int64_t y,
            const float *shift, const ShiftedSums &sums) {
  int64_t C = view.channels, lanes = C % 16 == 0 ? 16 : 1;
  for (int64_t first = 0; first < C; first += lanes) {
    float sum[16] = {}, squares[16] = {};
    int64_t at = view.offset(n, first / 16, y, 0) + first % 16;
    for (int64_t x = 0; x < view.width; ++x, at += view.pixelStride)
      for (int64_t lane = 0; lane < lanes; ++lane) {
        float v =
            (view.bf16
                 ? widen(static_cast<const uint16_t *>(view.data)[at + lane])
                 : static_cast<const float *>(view.data)[at + lane]) -
            shift[first + lane];
        sum[lane] += v;
        squares[lane] += v * v;
      }
    for (int64_t lane = 0; lane < lanes; ++lane) {
      sums.sum()[first + lane] += sum[lane];
      sums.squares()[first + lane] += squares[lane];
    }
  }
  sums.count() += double(view.width);
}

void runThread(void *data) {
  const Job &job = *static_cast<const Job *>(data);
  const ActivationView &view = job.view;
  int64_t thread = omp_get_thread_num(), threads = omp_get_num_threads();
  int64_t C = view.channels, stride = ShiftedSums::doubles(C);
  ShiftedSums sums{job.threadSums + thread * stride, C};
  sums.clear();
  int64_t rows = view.images * view.height;
  int64_t begin = rows * thread / threads, end = rows * (thread + 1) / threads;
  if (begin < end) {
    // The shift: the mean of the thread's first row.
    std::vector<float> shift(size_t(C), 0.0f);
    addRow(view, begin / view.height, begin % view.height, shift.data(), sums);
    for (int64_t c = 0; c < C; ++c) {
      shift[size_t(c)] = float(sums.sum()[c] / sums.count());
      sums.shift()[c] = shift[size_t(c)];
    }
    std::fill_n(sums.sum(), 2 * C + 1, 0.0);
    for (int64_t row = begin; row < end; ++row)
      addRow(view, row / view.height, row % view.height, shift.data(), sums);
  }
  GOMP_barrier();
  finishChannelStatistics(job.threadSums, stride, threads, C,
                          C * thread / threads, C * (thread + 1) / threads,
                          job.meanVariance);
}

} // namespace

size_t channelStatisticsWorkspaceBytes(int64_t channels, int threads) {
  return size_t(threads) * size_t(ShiftedSums::doubles(channels)) *
         sizeof(double);
}

void channelStatistics(const ActivationView &view, float *meanVariance,
                       void *workspace, int threads) {
  Job job{view, meanVariance, static_cast<double *>(workspace)};
  GOMP_parallel(&runThread, &job, unsigned(threads), 0);
}

} // namespace kiln::rt::exec
