//===- output.cpp - Normalize and store in dtype/layout -------------------===//
#include "kiln/rt/output.h"

namespace kiln::rt {

OutputFormat OutputFormat::fromConfig(const kiln_rt_dataset_config_t &config) {
  OutputFormat f;
  f.dtype = config.dtype;
  f.layout = config.layout;
  f.height = static_cast<int>(config.height);
  f.width = static_cast<int>(config.width);
  f.channels = static_cast<int>(config.channels);
  for (uint32_t k = 0; k < config.channels && k < KILN_RT_MAX_CHANNELS; ++k) {
    f.mean[k] = config.mean[k];
    f.invStd[k] = 1.0f / config.std[k];
  }
  return f;
}

size_t OutputFormat::exampleElements() const {
  size_t plane = size_t(height) * width;
  if (layout == KILN_RT_LAYOUT_NCHW16C)
    return plane * ((channels + 15) / 16) * 16;
  return plane * channels;
}

size_t OutputFormat::offset(int c, int y, int x) const {
  switch (layout) {
  case KILN_RT_LAYOUT_NHWC:
    return (size_t(y) * width + x) * channels + c;
  case KILN_RT_LAYOUT_NCHW:
    return (size_t(c) * height + y) * width + x;
  case KILN_RT_LAYOUT_NCHW16C:
    return ((size_t(c / 16) * height + y) * width + x) * 16 + c % 16;
  }
  return 0;
}

namespace {
// One loop per (layout, dtype) pair so the inner loops have constant strides
// the compiler can vectorize; a per-element switch would cost more than the
// arithmetic.
template <typename Store>
void writeWith(const float *hwc, const OutputFormat &f, Store store) {
  const int c = f.channels;
  const size_t plane = size_t(f.height) * f.width;
  switch (f.layout) {
  case KILN_RT_LAYOUT_NHWC:
    for (size_t p = 0; p < plane; ++p)
      for (int k = 0; k < c; ++k)
        store(p * c + k, (hwc[p * c + k] - f.mean[k]) * f.invStd[k]);
    break;
  case KILN_RT_LAYOUT_NCHW:
    for (int k = 0; k < c; ++k)
      for (size_t p = 0; p < plane; ++p)
        store(k * plane + p, (hwc[p * c + k] - f.mean[k]) * f.invStd[k]);
    break;
  case KILN_RT_LAYOUT_NCHW16C:
    for (int k = 0; k < c; ++k) {
      size_t base = size_t(k / 16) * plane * 16 + k % 16;
      for (size_t p = 0; p < plane; ++p)
        store(base + p * 16, (hwc[p * c + k] - f.mean[k]) * f.invStd[k]);
    }
    break;
  }
}
} // namespace

void writeExample(const float *hwc, const OutputFormat &format, void *batch,
                  size_t n) {
  size_t elems = format.exampleElements();
  if (format.dtype == KILN_RT_DTYPE_BF16) {
    uint16_t *dst = static_cast<uint16_t *>(batch) + n * elems;
    writeWith(hwc, format,
              [dst](size_t i, float v) { dst[i] = floatToBf16(v); });
  } else {
    float *dst = static_cast<float *>(batch) + n * elems;
    writeWith(hwc, format, [dst](size_t i, float v) { dst[i] = v; });
  }
}

void zeroExample(const OutputFormat &format, void *batch, size_t n) {
  std::memset(static_cast<char *>(batch) + n * format.exampleBytes(), 0,
              format.exampleBytes());
}

} // namespace kiln::rt
