//===- output.h - Writing normalized examples in dtype and layout -*- C++
//-*-===//
//
// The pipeline writes each example straight into the batch buffer in the
// element type and layout the compiled model's first layer reads, so no
// reorder pass runs between the pipeline and the step.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RT_OUTPUT_H
#define KILN_RT_OUTPUT_H

#include "kiln/rt/data.h"

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace kiln::rt {

/// fp32 -> bf16 with round-to-nearest-even; NaN stays a (quiet) NaN.
inline uint16_t floatToBf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((bits >> 16) | 0x40);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}
inline float bf16ToFloat(uint16_t h) {
  uint32_t bits = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

struct OutputFormat {
  kiln_rt_dtype_t dtype = KILN_RT_DTYPE_F32;
  kiln_rt_layout_t layout = KILN_RT_LAYOUT_NHWC;
  int height = 0;
  int width = 0;
  int channels = 0;
  float mean[KILN_RT_MAX_CHANNELS] = {};
  float invStd[KILN_RT_MAX_CHANNELS] = {};

  /// Elements per example, including nChw16c's padding channels.
  size_t exampleElements() const;
  size_t elementBytes() const { return dtype == KILN_RT_DTYPE_BF16 ? 2 : 4; }
  size_t exampleBytes() const { return exampleElements() * elementBytes(); }
  /// Index of (channel, y, x) within one example.
  size_t offset(int c, int y, int x) const;

  /// The batch format `config` asks for (its normalization included).
  static OutputFormat fromConfig(const kiln_rt_dataset_config_t &config);
};

/// Normalizes `hwc` (height*width*channels floats in 0..255) and stores it as
/// example `n` of `batch`. Padding channels of nChw16c are left untouched;
/// the pipeline zeroes its buffers once when it allocates them.
void writeExample(const float *hwc, const OutputFormat &format, void *batch,
                  size_t n);

/// Zeroes example `n` (for the unused tail of a partial batch).
void zeroExample(const OutputFormat &format, void *batch, size_t n);

} // namespace kiln::rt

#endif // KILN_RT_OUTPUT_H
