//===- jpeg_test.cpp - JPEG decode against known pixels, crop decode ------===//
#include "test_util.h"

#include "kiln/rt/image.h"

namespace kiln::rt {
namespace {

TEST(Jpeg, FlatColorDecodesToThatColor) {
  const int w = 40, h = 24;
  std::vector<uint8_t> px(w * h * 3);
  for (int i = 0; i < w * h; ++i) {
    px[3 * i] = 200;
    px[3 * i + 1] = 30;
    px[3 * i + 2] = 90;
  }
  std::string jpeg = test::encodeJpeg(px, w, h, 3, 100);
  auto info = readJpegInfo(jpeg);
  ASSERT_TRUE(info.isOk()) << info.status().toString();
  EXPECT_EQ(info->width, w);
  EXPECT_EQ(info->height, h);
  EXPECT_EQ(info->components, 3);
  ImageU8 img;
  ASSERT_TRUE(
      decodeJpeg(jpeg, nullptr, 3, JpegDecodeMode::kCropOnly, img).isOk());
  ASSERT_EQ(img.width, w);
  ASSERT_EQ(img.height, h);
  for (int i = 0; i < w * h; ++i) {
    EXPECT_NEAR(img.pixels[3 * i], 200, 2);
    EXPECT_NEAR(img.pixels[3 * i + 1], 30, 2);
    EXPECT_NEAR(img.pixels[3 * i + 2], 90, 2);
  }
  // Grayscale output is the BT.601 luma of the color.
  ImageU8 gray;
  ASSERT_TRUE(
      decodeJpeg(jpeg, nullptr, 1, JpegDecodeMode::kCropOnly, gray).isOk());
  EXPECT_NEAR(gray.pixels[0], 0.299 * 200 + 0.587 * 30 + 0.114 * 90, 2);
}

TEST(Jpeg, Pattern444AtQuality100IsClose) {
  const int w = 64, h = 48;
  auto px = test::photoPattern(w, h, 1, /*noise=*/0);
  std::string jpeg = test::encodeJpeg(px, w, h, 3, 100);
  ImageU8 img;
  ASSERT_TRUE(decodeJpeg(jpeg, nullptr, 3, JpegDecodeMode::kFull, img).isOk());
  double sum = 0;
  int worst = 0;
  for (size_t i = 0; i < px.size(); ++i) {
    int d = std::abs(int(img.pixels[i]) - int(px[i]));
    worst = std::max(worst, d);
    sum += d;
  }
  EXPECT_LE(worst, 4);
  EXPECT_LE(sum / px.size(), 1.0);
}

TEST(Jpeg, CropDecodeEqualsTheRegionOfAFullDecode) {
  // Odd sizes, 4:2:0 subsampling (the common ImageNet case) and 4:4:4.
  for (int subsamp : {TJSAMP_420, TJSAMP_444, TJSAMP_422}) {
    const int w = 317, h = 251;
    std::string jpeg =
        test::encodeJpeg(test::photoPattern(w, h, 2), w, h, 3, 90, subsamp);
    ImageU8 full;
    ASSERT_TRUE(
        decodeJpeg(jpeg, nullptr, 3, JpegDecodeMode::kFull, full).isOk());
    Rng rng(11);
    for (int trial = 0; trial < 40; ++trial) {
      CropBox box;
      box.width = 1 + static_cast<int>(rng.below(w));
      box.height = 1 + static_cast<int>(rng.below(h));
      box.x = static_cast<int>(rng.below(w - box.width + 1));
      box.y = static_cast<int>(rng.below(h - box.height + 1));
      ImageU8 crop, viaFull;
      ASSERT_TRUE(
          decodeJpeg(jpeg, &box, 3, JpegDecodeMode::kCropOnly, crop).isOk());
      ASSERT_TRUE(
          decodeJpeg(jpeg, &box, 3, JpegDecodeMode::kFull, viaFull).isOk());
      ASSERT_EQ(crop.width, box.width);
      ASSERT_EQ(crop.height, box.height);
      int worst = 0;
      for (int y = 0; y < box.height; ++y)
        for (int x = 0; x < box.width * 3; ++x) {
          int a = crop.row(y)[x];
          int b = full.row(box.y + y)[box.x * 3 + x];
          worst = std::max(worst, std::abs(a - b));
          ASSERT_EQ(viaFull.row(y)[x], b);
        }
      // libjpeg-turbo's fancy upsampling uses neighbouring iMCU rows/columns;
      // crop decoding keeps that context, so the result is bit-identical.
      EXPECT_EQ(worst, 0) << "subsamp " << subsamp << " crop " << box.width
                          << "x" << box.height << "+" << box.x << "+" << box.y;
    }
  }
}

TEST(Jpeg, GrayJpegToThreeChannelsReplicates) {
  const int w = 16, h = 16;
  std::vector<uint8_t> px(w * h);
  for (int i = 0; i < w * h; ++i)
    px[i] = static_cast<uint8_t>(i);
  std::string jpeg = test::encodeJpeg(px, w, h, 1, 100);
  ImageU8 rgb;
  ASSERT_TRUE(
      decodeJpeg(jpeg, nullptr, 3, JpegDecodeMode::kCropOnly, rgb).isOk());
  for (int i = 0; i < w * h; ++i) {
    EXPECT_EQ(rgb.pixels[3 * i], rgb.pixels[3 * i + 1]);
    EXPECT_EQ(rgb.pixels[3 * i], rgb.pixels[3 * i + 2]);
    EXPECT_NEAR(rgb.pixels[3 * i], px[i], 2);
  }
}

TEST(Jpeg, BadInputsAreErrorsNotCrashes) {
  ImageU8 img;
  Status s = decodeJpeg("\x89PNG\r\n\x1a\n....", nullptr, 3,
                        JpegDecodeMode::kCropOnly, img);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("not a JPEG"), std::string::npos);

  const int w = 120, h = 90;
  std::string jpeg = test::encodeJpeg(test::photoPattern(w, h, 3), w, h, 3, 90);
  // Truncated in the entropy-coded data: libjpeg would pad with gray; we fail.
  s = decodeJpeg(jpeg.substr(0, jpeg.size() / 2), nullptr, 3,
                 JpegDecodeMode::kFull, img);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("Premature end"), std::string::npos)
      << s.message();
  // Every truncation point: an error or (past the entropy data) success.
  for (size_t n = 0; n < jpeg.size(); n += 37) {
    Status t =
        decodeJpeg(jpeg.substr(0, n), nullptr, 3, JpegDecodeMode::kFull, img);
    EXPECT_EQ(t.code(), StatusCode::kDataLoss) << n;
  }
  // A crop outside the image.
  CropBox box{100, 0, 50, 10};
  EXPECT_EQ(decodeJpeg(jpeg, &box, 3, JpegDecodeMode::kCropOnly, img).code(),
            StatusCode::kInvalidArgument);
  // Garbage after a valid SOI marker.
  std::string garbage = jpeg.substr(0, 4) + std::string(200, '\x55');
  EXPECT_EQ(readJpegInfo(garbage).status().code(), StatusCode::kDataLoss);
}

} // namespace
} // namespace kiln::rt
