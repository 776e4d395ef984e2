//===- augment.cpp - Crop sampling, resize, pad-crop, flip ----------------===//
#include "kiln/rt/augment.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace kiln::rt {

CropBox centerCropBox(int width, int height, double fraction) {
  int side = static_cast<int>(fraction * std::min(width, height));
  side = std::clamp(side, 1, std::min(width, height));
  // (d + 1) / 2 puts the odd pixel on the top/left, as the TPU reference.
  return CropBox{(width - side + 1) / 2, (height - side + 1) / 2, side, side};
}

CropBox sampleRandomResizedCrop(int width, int height,
                                const RandomCropParams &params, Rng &rng,
                                bool *usedFallback) {
  double area = double(width) * height;
  double logMin = std::log(params.minAspect);
  double logMax = std::log(params.maxAspect);
  for (int attempt = 0; attempt < params.attempts; ++attempt) {
    double targetArea = area * rng.uniform(params.minArea, params.maxArea);
    double aspect = std::exp(rng.uniform(logMin, logMax));
    int w = static_cast<int>(std::lround(std::sqrt(targetArea * aspect)));
    int h = static_cast<int>(std::lround(std::sqrt(targetArea / aspect)));
    if (w < 1 || h < 1 || w > width || h > height)
      continue;
    int x = static_cast<int>(rng.below(uint64_t(width - w) + 1));
    int y = static_cast<int>(rng.below(uint64_t(height - h) + 1));
    if (usedFallback)
      *usedFallback = false;
    return CropBox{x, y, w, h};
  }
  if (usedFallback)
    *usedFallback = true;
  return centerCropBox(width, height, params.centerFraction);
}

namespace {
/// Source coordinate sampling for one axis: index pair and weight per output.
struct AxisTaps {
  std::vector<int> i0, i1;
  std::vector<float> w1;
};

void computeTaps(int srcSize, int outSize, AxisTaps &taps) {
  taps.i0.resize(outSize);
  taps.i1.resize(outSize);
  taps.w1.resize(outSize);
  double scale = double(srcSize) / outSize;
  for (int o = 0; o < outSize; ++o) {
    double s = (o + 0.5) * scale - 0.5;
    s = std::clamp(s, 0.0, double(srcSize - 1));
    int lo = static_cast<int>(s);
    taps.i0[o] = lo;
    taps.i1[o] = std::min(lo + 1, srcSize - 1);
    taps.w1[o] = static_cast<float>(s - lo);
  }
}
} // namespace

void resizeBilinear(const ImageU8 &src, int outWidth, int outHeight, bool flip,
                    float *dst) {
  const int c = src.channels;
  // thread_local: workers call this per image; keep the tables' allocations.
  thread_local AxisTaps xs, ys;
  thread_local std::vector<float> top, bottom;
  computeTaps(src.width, outWidth, xs);
  computeTaps(src.height, outHeight, ys);
  if (flip) {
    std::reverse(xs.i0.begin(), xs.i0.end());
    std::reverse(xs.i1.begin(), xs.i1.end());
    std::reverse(xs.w1.begin(), xs.w1.end());
  }
  size_t rowFloats = size_t(outWidth) * c;
  top.resize(rowFloats);
  bottom.resize(rowFloats);
  // Horizontal pass into two float rows, then a vertical blend. Rows are
  // re-interpolated only when the source row pair changes.
  auto horizontal = [&](int sy, float *out) {
    const uint8_t *row = src.row(sy);
    for (int x = 0; x < outWidth; ++x) {
      const uint8_t *a = row + size_t(xs.i0[x]) * c;
      const uint8_t *b = row + size_t(xs.i1[x]) * c;
      float w = xs.w1[x];
      for (int k = 0; k < c; ++k)
        out[x * c + k] = a[k] + w * (float(b[k]) - float(a[k]));
    }
  };
  int cachedTop = -1, cachedBottom = -1;
  for (int y = 0; y < outHeight; ++y) {
    int y0 = ys.i0[y], y1 = ys.i1[y];
    if (y0 != cachedTop) {
      if (y0 == cachedBottom) {
        std::swap(top, bottom);
        cachedBottom = -1;
      } else {
        horizontal(y0, top.data());
      }
      cachedTop = y0;
    }
    if (y1 != cachedBottom) {
      horizontal(y1, bottom.data());
      cachedBottom = y1;
    }
    float w = ys.w1[y];
    float *out = dst + y * rowFloats;
    for (size_t i = 0; i < rowFloats; ++i)
      out[i] = top[i] + w * (bottom[i] - top[i]);
  }
}

void padCrop(const ImageU8 &src, int pad, int offsetX, int offsetY,
             int outWidth, int outHeight, bool flip, float *dst) {
  const int c = src.channels;
  for (int y = 0; y < outHeight; ++y) {
    int sy = y + offsetY - pad;
    float *out = dst + size_t(y) * outWidth * c;
    for (int x = 0; x < outWidth; ++x) {
      int ox = flip ? outWidth - 1 - x : x;
      int sx = ox + offsetX - pad;
      bool inside = sy >= 0 && sy < src.height && sx >= 0 && sx < src.width;
      for (int k = 0; k < c; ++k)
        out[x * c + k] = inside ? src.row(sy)[size_t(sx) * c + k] : 0.0f;
    }
  }
}

void cropImage(const ImageU8 &src, const CropBox &box, ImageU8 &dst) {
  dst.width = box.width;
  dst.height = box.height;
  dst.channels = src.channels;
  dst.pixels.resize(size_t(box.width) * box.height * src.channels);
  size_t rowBytes = size_t(box.width) * src.channels;
  for (int y = 0; y < box.height; ++y)
    std::memcpy(dst.pixels.data() + y * rowBytes,
                src.row(box.y + y) + size_t(box.x) * src.channels, rowBytes);
}

Status convertChannels(ImageU8 &image, int channels) {
  if (image.channels == channels)
    return Status::ok();
  size_t n = size_t(image.width) * image.height;
  std::vector<uint8_t> out(n * channels);
  if (image.channels == 1 && channels == 3) {
    for (size_t i = 0; i < n; ++i)
      out[3 * i] = out[3 * i + 1] = out[3 * i + 2] = image.pixels[i];
  } else if (image.channels == 3 && channels == 1) {
    for (size_t i = 0; i < n; ++i) {
      const uint8_t *p = &image.pixels[3 * i];
      out[i] = static_cast<uint8_t>(
          (19595u * p[0] + 38470u * p[1] + 7471u * p[2] + 32768u) >> 16);
    }
  } else {
    return KILN_STATUS(kInvalidArgument,
                       "cannot convert a " + std::to_string(image.channels) +
                           "-channel image to " + std::to_string(channels) +
                           " channels");
  }
  image.pixels = std::move(out);
  image.channels = channels;
  return Status::ok();
}

} // namespace kiln::rt
