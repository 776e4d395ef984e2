//===- exec_test_util.h - Helpers for the runtime/exec tests ----*- C++ -*-===//
#ifndef KILN_TEST_UNIT_EXEC_EXEC_TEST_UTIL_H
#define KILN_TEST_UNIT_EXEC_EXEC_TEST_UTIL_H

#include "kiln/ref/bf16.h"
#include "kiln/ref/init.h"
#include "kiln/ref/tensor.h"
#include "kiln/rt/exec/manifest.h"

#include "../common/temp_dir.h"

#include <dnnl.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace kiln::rt::exec::test {

/// Whether oneDNN has kernels for bf16 convolutions and its own Winograd on
/// this CPU: both need AVX-512 (avx512_core) in oneDNN 2.6; elsewhere it
/// creates no bf16 primitive and no Winograd one.
inline bool oneDnnHasAvx512Kernels() {
  return dnnl::get_effective_cpu_isa() >= dnnl::cpu_isa::avx512_core;
}


/// Places tensors one after another (64-byte aligned) in a manifest's arena.
class ArenaLayout {
public:
  TensorRef place(std::vector<int64_t> shape, DType dtype = DType::F32,
                  Layout layout = Layout::None) {
    TensorRef t;
    t.offset = next;
    t.shape = std::move(shape);
    t.dtype = dtype;
    t.layout = layout;
    next = (next + t.byteSize() + 63) / 64 * 64;
    return t;
  }
  int64_t bytes() const { return std::max<int64_t>(next, 64); }

private:
  int64_t next = 0;
};

/// Deterministic values in about [-1, 1] for test inputs.
inline ref::Tensor randomTensor(const ref::Shape &shape, uint64_t seed) {
  ref::Tensor t(shape);
  ref::fillNormal(t, 0.5, seed, "test");
  return t;
}

/// Calls `fn(logical, physical)` for every element of arena slot `t`
/// (`elements` in all): its index in logical NHWC order and its element
/// index in the slot's layout (NHWC, NCHW or nChw16c).
template <typename Fn>
void forEachElement(const TensorRef &t, int64_t elements, Fn fn) {
  bool image = t.shape.size() == 4;
  int64_t n = image ? t.shape[0] : 1, h = image ? t.shape[1] : 1;
  int64_t w = image ? t.shape[2] : 1, c = image ? t.shape[3] : elements;
  int64_t blocks = (c + 15) / 16;
  for (int64_t in = 0; in < n; ++in)
    for (int64_t ih = 0; ih < h; ++ih)
      for (int64_t iw = 0; iw < w; ++iw)
        for (int64_t ic = 0; ic < c; ++ic) {
          int64_t logical = ((in * h + ih) * w + iw) * c + ic;
          int64_t physical = logical;
          if (t.layout == Layout::Nchw)
            physical = ((in * c + ic) * h + ih) * w + iw;
          else if (t.layout == Layout::NChw16c)
            physical = (((in * blocks + ic / 16) * h + ih) * w + iw) * 16 + ic % 16;
          fn(logical, physical);
        }
}

/// Copies a logical NHWC tensor into the arena slot `t` (any layout/dtype).
inline void storeTensor(uint8_t *arena, const TensorRef &t,
                        const ref::Tensor &value) {
  forEachElement(t, value.size(), [&](int64_t logical, int64_t physical) {
    float v = value[logical];
    if (t.dtype == DType::BF16) {
      uint16_t bits = ref::floatToBf16Bits(v);
      std::memcpy(arena + t.offset + 2 * physical, &bits, 2);
    } else {
      std::memcpy(arena + t.offset + 4 * physical, &v, 4);
    }
  });
}

inline ref::Tensor loadTensor(const uint8_t *arena, const TensorRef &t) {
  ref::Tensor out(ref::Shape(t.shape.begin(), t.shape.end()));
  forEachElement(t, out.size(), [&](int64_t logical, int64_t physical) {
    if (t.dtype == DType::BF16) {
      uint16_t bits;
      std::memcpy(&bits, arena + t.offset + 2 * physical, 2);
      out[logical] = ref::bf16BitsToFloat(bits);
    } else {
      std::memcpy(&out[logical], arena + t.offset + 4 * physical, 4);
    }
  });
  return out;
}

/// Every element within `rel` of the reference, relative to the reference's
/// largest magnitude (sums of many products lose absolute, not relative,
/// precision).
inline ::testing::AssertionResult closeTo(const ref::Tensor &actual,
                                          const ref::Tensor &expected,
                                          double rel) {
  if (actual.shape != expected.shape)
    return ::testing::AssertionFailure()
           << "shape " << ref::shapeToString(actual.shape) << " vs "
           << ref::shapeToString(expected.shape);
  double scale = 1e-30;
  for (float v : expected.data)
    scale = std::max(scale, double(std::fabs(v)));
  for (int64_t i = 0; i < expected.size(); ++i) {
    double diff = std::fabs(double(actual[i]) - double(expected[i]));
    if (!(diff <= rel * scale))
      return ::testing::AssertionFailure()
             << "element " << i << ": " << actual[i] << " vs " << expected[i]
             << " (scale " << scale << ")";
  }
  return ::testing::AssertionSuccess();
}

/// `statistics` [2][C] are the mean and biased variance of each channel
/// of `y` (NHWC), computed here in double precision: the mean to 1e-6 of
/// the channel's spread, the variance to 1e-5 of itself (f32 sums).
inline ::testing::AssertionResult statisticsOf(const ref::Tensor &statistics,
                                               const ref::Tensor &y) {
  int64_t channels = statistics.size() / 2, count = y.size() / channels;
  std::vector<double> sum(channels), squares(channels);
  for (int64_t i = 0; i < y.size(); ++i) {
    sum[i % channels] += y[i];
    squares[i % channels] += double(y[i]) * y[i];
  }
  for (int64_t c = 0; c < channels; ++c) {
    double mean = sum[c] / double(count);
    double variance = squares[c] / double(count) - mean * mean;
    double spread = std::sqrt(variance) + std::abs(mean);
    if (std::abs(statistics[c] - mean) > 1e-6 * spread ||
        std::abs(statistics[channels + c] - variance) > 1e-5 * variance)
      return ::testing::AssertionFailure()
             << "channel " << c << ": mean " << statistics[c] << " variance "
             << statistics[channels + c] << ", expected " << mean << " and "
             << variance;
  }
  return ::testing::AssertionSuccess();
}

/// A scratch directory named kiln-exec-*.
class TempDir : public kiln::test::TempDir {
public:
  TempDir() : kiln::test::TempDir("kiln-exec") {}
};

} // namespace kiln::rt::exec::test

#endif // KILN_TEST_UNIT_EXEC_EXEC_TEST_UTIL_H
