//===- channel_statistics.h - Batch statistics of a convolution output ----===//
//
// A forward convolution call may ask for its output's per-channel mean and
// biased variance (operand "statistics", docs/model-abi.md), the batch
// statistics of the training batch norm that follows it. The runtime's
// Winograd kernel takes them as it writes its output tiles (winograd.h);
// after a oneDNN convolution channelStatistics reads the output once more.
//
// Both sum x - k and (x - k)^2, k being a channel's mean over the first
// values a thread sees: a channel whose mean is large against its spread
// (mean^2 / variance in the thousands) loses no digits to the subtraction
// that a one-pass variance ends with. Each run of values (a tile, a row)
// is summed in f32, the runs in double precision, and the threads' sums
// are merged as (count, mean, squared deviations) pairs (Chan et al.).
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RT_EXEC_CHANNEL_STATISTICS_H
#define KILN_RT_EXEC_CHANNEL_STATISTICS_H

#include "kiln/rt/exec/winograd.h"

#include <cstddef>
#include <cstdint>

namespace kiln::rt::exec {

/// One thread's sums over its share of a tensor with `channels` channels:
/// doubles [shift[C], sum[C], squares[C], count].
struct ShiftedSums {
  double *data;
  int64_t channels;

  static int64_t doubles(int64_t channels) { return 3 * channels + 1; }
  double *shift() const { return data; }
  double *sum() const { return data + channels; }
  double *squares() const { return data + 2 * channels; }
  double &count() const { return data[3 * channels]; }
  void clear() const;
};

/// meanVariance[c] and meanVariance[channels + c] = the mean and biased
/// variance of channel c over all `threads` threads' sums (a thread stride
/// of `stride` doubles), for channels [begin, end).
void finishChannelStatistics(const double *threadSums, int64_t stride,
                             int64_t threads, int64_t channels, int64_t begin,
                             int64_t end, float *meanVariance);

/// Bytes of workspace channelStatistics needs with `threads` threads.
size_t channelStatisticsWorkspaceBytes(int64_t channels, int threads);

/// meanVariance [2][channels] = each channel's mean and biased variance
/// over every image and pixel of `view` (NHWC with any channel count, or
/// nChw16c; f32 or bf16), on `threads` threads of the OpenMP pool.
void channelStatistics(const ActivationView &view, float *meanVariance,
                       void *workspace, int threads);

} // namespace kiln::rt::exec

#endif // KILN_RT_EXEC_CHANNEL_STATISTICS_H
