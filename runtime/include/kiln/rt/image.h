//===- image.h - JPEG decoding (whole or crop-only) -------------*- C++ -*-===//
#ifndef KILN_RT_IMAGE_H
#define KILN_RT_IMAGE_H

#include "kiln/base/status.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::rt {

/// An 8-bit image, rows of width*channels bytes (HWC), tightly packed.
struct ImageU8 {
  int width = 0;
  int height = 0;
  int channels = 0;
  std::vector<uint8_t> pixels;
  const uint8_t *row(int y) const {
    return pixels.data() + size_t(y) * width * channels;
  }
};

/// A rectangle in pixel coordinates.
struct CropBox {
  int x = 0;
  int y = 0;
  int width = 0;
  int height = 0;
  bool operator==(const CropBox &o) const {
    return x == o.x && y == o.y && width == o.width && height == o.height;
  }
};

struct JpegInfo {
  int width = 0;
  int height = 0;
  int components = 0; ///< 1 gray, 3 YCbCr/RGB, 4 CMYK/YCCK
};

/// True if the bytes start with a JPEG SOI marker.
bool looksLikeJpeg(std::string_view bytes);

/// The image format whose signature starts `bytes` ("JPEG", "PNG", "GIF",
/// "WebP", "BMP"), or empty; for messages about data the pipeline cannot
/// decode.
std::string_view guessImageFormat(std::string_view bytes);

/// kDataLoss "not a JPEG (...)", naming the format the bytes' signature
/// shows (TensorFlow Datasets, for one, stores PNGs), then `detail`.
Status notJpegError(std::string_view bytes, const std::string &detail = "");

/// Reads the header only. kDataLoss for a non-JPEG or corrupt header.
StatusOr<JpegInfo> readJpegInfo(std::string_view jpeg);

enum class JpegDecodeMode {
  kCropOnly, ///< Skip rows above/below and decode only the needed iMCU columns.
  kFull,     ///< Decode the whole image, then copy the crop (for comparison).
};

/// Decodes `crop` (or the whole image if crop is null) to `channels` (1 or 3)
/// 8-bit channels. kDataLoss on corrupt or truncated data, kUnimplemented for
/// color spaces that cannot be converted. CMYK/YCCK JPEGs (a few dozen in
/// ImageNet) are converted to RGB as libjpeg-turbo's djpeg does.
Status decodeJpeg(std::string_view jpeg, const CropBox *crop, int channels,
                  JpegDecodeMode mode, ImageU8 &out);

} // namespace kiln::rt

#endif // KILN_RT_IMAGE_H
