//===- augment_test.cpp - Crop sampling, resize, pad-crop, output formats -===//
#include "test_util.h"

#include "kiln/rt/augment.h"
#include "kiln/rt/output.h"

namespace kiln::rt {
namespace {

TEST(Augment, RandomResizedCropStaysWithinAreaAndAspectBounds) {
  RandomCropParams params;
  Rng rng(42);
  struct Size {
    int w, h;
  };
  for (Size size : {Size{500, 375}, Size{375, 500}, Size{224, 224},
                    Size{1024, 683}, Size{32, 32}}) {
    double area = double(size.w) * size.h;
    double minFrac = 1, maxFrac = 0, minAspect = 10, maxAspect = 0;
    int fallbacks = 0;
    for (int draw = 0; draw < 5000; ++draw) {
      bool fallback = false;
      CropBox b =
          sampleRandomResizedCrop(size.w, size.h, params, rng, &fallback);
      ASSERT_GE(b.x, 0);
      ASSERT_GE(b.y, 0);
      ASSERT_GE(b.width, 1);
      ASSERT_GE(b.height, 1);
      ASSERT_LE(b.x + b.width, size.w);
      ASSERT_LE(b.y + b.height, size.h);
      if (fallback) {
        ++fallbacks;
        EXPECT_EQ(b, centerCropBox(size.w, size.h, params.centerFraction));
        continue;
      }
      // Width and height are rounded to whole pixels; allow exactly that.
      double w = b.width, h = b.height;
      EXPECT_GE((w + 0.5) * (h + 0.5), params.minArea * area);
      EXPECT_LE((w - 0.5) * (h - 0.5), params.maxArea * area);
      EXPECT_GE((w + 0.5) / (h - 0.5), params.minAspect);
      EXPECT_LE((w - 0.5) / (h + 0.5), params.maxAspect);
      minFrac = std::min(minFrac, w * h / area);
      maxFrac = std::max(maxFrac, w * h / area);
      minAspect = std::min(minAspect, w / h);
      maxAspect = std::max(maxAspect, w / h);
    }
    // The whole range is actually used, and fallbacks are rare.
    EXPECT_LT(minFrac, 0.1) << size.w << "x" << size.h;
    EXPECT_GT(maxFrac, 0.85) << size.w << "x" << size.h;
    EXPECT_LT(minAspect, 0.8);
    EXPECT_GT(maxAspect, 1.25);
    EXPECT_LT(fallbacks, 50);
  }
}

TEST(Augment, ImpossibleCropsFallBackToTheCenter) {
  // A 1000x20 strip: no box with aspect <= 4/3 covers 8% of it.
  RandomCropParams params;
  Rng rng(1);
  bool fallback = false;
  CropBox b = sampleRandomResizedCrop(1000, 20, params, rng, &fallback);
  EXPECT_TRUE(fallback);
  EXPECT_EQ(b, (CropBox{492, 2, 17, 17}));
  // Eval crop: 224/256 of the short side, centered.
  EXPECT_EQ(centerCropBox(500, 375, 0.875), (CropBox{86, 24, 328, 328}));
}

TEST(Augment, SameSeedSameCrops) {
  RandomCropParams params;
  Rng a(99), b(99), c(100);
  bool differs = false;
  for (int i = 0; i < 100; ++i) {
    CropBox x = sampleRandomResizedCrop(500, 375, params, a);
    EXPECT_EQ(x, sampleRandomResizedCrop(500, 375, params, b));
    differs |= !(x == sampleRandomResizedCrop(500, 375, params, c));
  }
  EXPECT_TRUE(differs);
}

ImageU8 makeImage(int w, int h, int c, std::vector<uint8_t> px) {
  ImageU8 img;
  img.width = w;
  img.height = h;
  img.channels = c;
  img.pixels = std::move(px);
  return img;
}

TEST(Augment, BilinearResizeKnownValues) {
  // Upscale a 2-pixel row to 4 with half-pixel centers: 0, 25, 75, 100.
  ImageU8 row = makeImage(2, 1, 1, {0, 100});
  std::vector<float> out(4);
  resizeBilinear(row, 4, 1, false, out.data());
  EXPECT_EQ(out, (std::vector<float>{0, 25, 75, 100}));
  resizeBilinear(row, 4, 1, true, out.data());
  EXPECT_EQ(out, (std::vector<float>{100, 75, 25, 0}));
  // Downscale 4x2 -> 2x1 averages 2x2 blocks.
  ImageU8 img = makeImage(4, 2, 1, {0, 10, 100, 110, 20, 30, 120, 130});
  resizeBilinear(img, 2, 1, false, out.data());
  EXPECT_FLOAT_EQ(out[0], 15);
  EXPECT_FLOAT_EQ(out[1], 115);
  // Same size is the identity, per channel.
  ImageU8 rgb = makeImage(
      3, 2, 3, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18});
  std::vector<float> same(18);
  resizeBilinear(rgb, 3, 2, false, same.data());
  for (int i = 0; i < 18; ++i)
    EXPECT_EQ(same[i], float(i + 1));
}

TEST(Augment, PadCropShiftsFlipsAndZeroPads) {
  ImageU8 img = makeImage(3, 3, 1, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  std::vector<float> out(9);
  padCrop(img, 2, 2, 2, 3, 3, false, out.data());
  EXPECT_EQ(out, (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 9}));
  padCrop(img, 2, 0, 0, 3, 3, false, out.data());
  EXPECT_EQ(out, (std::vector<float>{0, 0, 0, 0, 0, 0, 0, 0, 1}));
  padCrop(img, 2, 2, 2, 3, 3, true, out.data());
  EXPECT_EQ(out, (std::vector<float>{3, 2, 1, 6, 5, 4, 9, 8, 7}));
  padCrop(img, 1, 2, 1, 3, 3, false, out.data());
  EXPECT_EQ(out, (std::vector<float>{2, 3, 0, 5, 6, 0, 8, 9, 0}));
}

TEST(Output, Bf16RoundsToNearestEven) {
  EXPECT_EQ(floatToBf16(1.0f), 0x3F80);
  EXPECT_EQ(floatToBf16(-2.0f), 0xC000);
  float halfUlp = 1.0f + 1.0f / 256;       // exactly between 0x3F80 and 0x3F81
  EXPECT_EQ(floatToBf16(halfUlp), 0x3F80); // ties to even (down)
  float threeHalves = 1.0f + 3.0f / 256;   // between 0x3F81 and 0x3F82
  EXPECT_EQ(floatToBf16(threeHalves), 0x3F82); // ties to even (up)
  EXPECT_EQ(floatToBf16(std::nextafter(halfUlp, 2.0f)), 0x3F81);
  EXPECT_EQ(floatToBf16(std::nextafter(halfUlp, 0.0f)), 0x3F80);
  EXPECT_EQ(floatToBf16(INFINITY), 0x7F80);
  EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBf16(NAN))));
  EXPECT_EQ(bf16ToFloat(floatToBf16(0.15625f)), 0.15625f);
}

TEST(Output, LayoutsPlaceEveryChannelAndNormalize) {
  OutputFormat f;
  f.height = 2;
  f.width = 2;
  f.channels = 3;
  for (int k = 0; k < 3; ++k) {
    f.mean[k] = 10.0f * k;
    f.invStd[k] = 0.5f;
  }
  // hwc value = 100*c + 10*y + x
  std::vector<float> hwc(12);
  for (int y = 0; y < 2; ++y)
    for (int x = 0; x < 2; ++x)
      for (int c = 0; c < 3; ++c)
        hwc[(y * 2 + x) * 3 + c] = 100.0f * c + 10 * y + x;
  for (auto layout :
       {KILN_RT_LAYOUT_NHWC, KILN_RT_LAYOUT_NCHW, KILN_RT_LAYOUT_NCHW16C}) {
    for (auto dtype : {KILN_RT_DTYPE_F32, KILN_RT_DTYPE_BF16}) {
      f.layout = layout;
      f.dtype = dtype;
      size_t elems = f.exampleElements();
      EXPECT_EQ(elems, layout == KILN_RT_LAYOUT_NCHW16C ? 64u : 12u);
      std::vector<char> batch(2 * f.exampleBytes(), 0);
      writeExample(hwc.data(), f, batch.data(), 1); // second example
      auto at = [&](size_t i) {
        if (dtype == KILN_RT_DTYPE_F32)
          return reinterpret_cast<float *>(batch.data())[i];
        return bf16ToFloat(reinterpret_cast<uint16_t *>(batch.data())[i]);
      };
      for (size_t i = 0; i < elems; ++i)
        EXPECT_EQ(at(i), 0.0f); // the first example is untouched
      for (int c = 0; c < 3; ++c)
        for (int y = 0; y < 2; ++y)
          for (int x = 0; x < 2; ++x) {
            float want = (100.0f * c + 10 * y + x - 10.0f * c) * 0.5f;
            if (dtype == KILN_RT_DTYPE_BF16)
              want = bf16ToFloat(floatToBf16(want));
            EXPECT_EQ(at(elems + f.offset(c, y, x)), want)
                << "layout " << layout << " c" << c << " y" << y << " x" << x;
          }
    }
  }
  f.layout = KILN_RT_LAYOUT_NCHW16C;
  EXPECT_EQ(f.offset(2, 1, 1), ((1 * 2 + 1) * 16 + 2u));
  f.layout = KILN_RT_LAYOUT_NCHW;
  EXPECT_EQ(f.offset(2, 1, 0), 2 * 4 + 2u);
}

} // namespace
} // namespace kiln::rt
