//===- jpeg.cpp - JPEG decoding with libjpeg-turbo ------------------------===//
//
// Uses the libjpeg API rather than TurboJPEG because only it can decode a
// region: jpeg_crop_scanline limits the IDCT and color conversion to the iMCU
// columns that cover the crop, and jpeg_skip_scanlines skips the rows above
// it. Rows below the crop are never decoded.
//
// libjpeg reports fatal errors through error_exit, which must not return; we
// longjmp back. Every C++ object in decodeJpeg/readJpegInfo is constructed
// before setjmp, so the jump never skips a destructor.
//
//===----------------------------------------------------------------------===//
#include "kiln/rt/image.h"

#include <algorithm>
#include <csetjmp>
#include <cstdio>
#include <cstring>

#include <jpeglib.h>
// jerror.h after jpeglib.h: it needs its types.
#include <jerror.h>

namespace kiln::rt {
namespace {

struct ErrorManager {
  jpeg_error_mgr pub;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

[[noreturn]] void onError(j_common_ptr cinfo) {
  auto *err = reinterpret_cast<ErrorManager *>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

/// Whether a libjpeg warning leaves the decoded pixels intact. Warnings
/// (level -1) mostly mean corrupt entropy-coded data, which libjpeg papers
/// over with gray or zero coefficients: garbage we must not hand to
/// training. Only these are harmless:
///   - metadata the decoder does not use (an unknown JFIF revision or Adobe
///     transform code, a bad ICC profile marker);
///   - junk between the last scan and the end-of-image marker (a few
///     ImageNet files have it, e.g. "240 extraneous bytes before marker
///     0xd9"): every pixel has been decoded by then.
bool isHarmlessWarning(const jpeg_error_mgr &err) {
  switch (err.msg_code) {
  case JWRN_JFIF_MAJOR:
  case JWRN_ADOBE_XFORM:
  case JWRN_BOGUS_ICC:
    return true;
  case JWRN_EXTRANEOUS_DATA:
    return err.msg_parm.i[1] == JPEG_EOI;
  default:
    return false;
  }
}

void onMessage(j_common_ptr cinfo, int level) {
  // Levels >= 0 are trace messages.
  if (level != -1)
    return;
  if (!isHarmlessWarning(*cinfo->err))
    onError(cinfo);
  ++cinfo->err->num_warnings;
}

void silent(j_common_ptr) {}

void installErrorManager(jpeg_decompress_struct &cinfo, ErrorManager &err) {
  cinfo.err = jpeg_std_error(&err.pub);
  err.pub.error_exit = onError;
  err.pub.emit_message = onMessage;
  err.pub.output_message = silent;
  err.message[0] = '\0';
}

Status jpegError(const ErrorManager &err) {
  return KILN_STATUS(kDataLoss, std::string("corrupt JPEG: ") + err.message);
}

/// Adobe CMYK JPEGs store inverted values; this is libjpeg-turbo's own
/// conversion (cmyk.h, used by djpeg): channel = inverted ink * K / 255.
void cmykToOutput(const uint8_t *cmyk, uint8_t *dst, int channels) {
  int k = cmyk[3];
  uint8_t rgb[3];
  for (int i = 0; i < 3; ++i)
    rgb[i] = static_cast<uint8_t>((cmyk[i] * k + 127) / 255);
  if (channels == 3) {
    dst[0] = rgb[0];
    dst[1] = rgb[1];
    dst[2] = rgb[2];
  } else {
    dst[0] = static_cast<uint8_t>(
        (19595u * rgb[0] + 38470u * rgb[1] + 7471u * rgb[2] + 32768u) >> 16);
  }
}

} // namespace

Status notJpegError(std::string_view bytes, const std::string &detail) {
  std::string message =
      "not a JPEG (no FF D8 FF start-of-image marker in the first bytes)";
  std::string_view format = guessImageFormat(bytes);
  if (!format.empty())
    message += ": the bytes are a " + std::string(format) + " image";
  if (!detail.empty())
    message += detail;
  return KILN_STATUS(kDataLoss, message);
}

std::string_view guessImageFormat(std::string_view bytes) {
  auto startsWith = [&](std::string_view magic, size_t at = 0) {
    return bytes.size() >= at + magic.size() &&
           bytes.substr(at, magic.size()) == magic;
  };
  if (looksLikeJpeg(bytes))
    return "JPEG";
  if (startsWith("\x89PNG\r\n\x1a\n"))
    return "PNG";
  if (startsWith("GIF87a") || startsWith("GIF89a"))
    return "GIF";
  if (startsWith("RIFF") && startsWith("WEBP", 8))
    return "WebP";
  if (startsWith("BM") && bytes.size() >= 26)
    return "BMP";
  return {};
}

bool looksLikeJpeg(std::string_view bytes) {
  return bytes.size() >= 3 && static_cast<uint8_t>(bytes[0]) == 0xFF &&
         static_cast<uint8_t>(bytes[1]) == 0xD8 &&
         static_cast<uint8_t>(bytes[2]) == 0xFF;
}

StatusOr<JpegInfo> readJpegInfo(std::string_view jpeg) {
  if (!looksLikeJpeg(jpeg))
    return notJpegError(jpeg);
  jpeg_decompress_struct cinfo;
  ErrorManager err;
  JpegInfo info;
  installErrorManager(cinfo, err);
  jpeg_create_decompress(&cinfo);
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    return jpegError(err);
  }
  jpeg_mem_src(&cinfo, reinterpret_cast<const unsigned char *>(jpeg.data()),
               static_cast<unsigned long>(jpeg.size()));
  jpeg_read_header(&cinfo, TRUE);
  info.width = static_cast<int>(cinfo.image_width);
  info.height = static_cast<int>(cinfo.image_height);
  info.components = cinfo.num_components;
  jpeg_destroy_decompress(&cinfo);
  return info;
}

Status decodeJpeg(std::string_view jpeg, const CropBox *crop, int channels,
                  JpegDecodeMode mode, ImageU8 &out) {
  if (channels != 1 && channels != 3)
    return KILN_STATUS(kInvalidArgument,
                       "JPEG output must have 1 or 3 channels, not " +
                           std::to_string(channels));
  if (!looksLikeJpeg(jpeg))
    return notJpegError(jpeg);
  jpeg_decompress_struct cinfo;
  ErrorManager err;
  // Scratch row for the crop path; constructed before setjmp (see top).
  std::vector<uint8_t> row;
  Status badRequest;
  installErrorManager(cinfo, err);
  jpeg_create_decompress(&cinfo);
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    if (cinfo.err->msg_code == JERR_CONVERSION_NOTIMPL)
      return KILN_STATUS(kUnimplemented,
                         std::string("JPEG color space cannot be converted: ") +
                             err.message);
    return jpegError(err);
  }
  jpeg_mem_src(&cinfo, reinterpret_cast<const unsigned char *>(jpeg.data()),
               static_cast<unsigned long>(jpeg.size()));
  jpeg_read_header(&cinfo, TRUE);
  // libjpeg cannot convert CMYK/YCCK to RGB; take CMYK and convert per row.
  bool cmyk =
      cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK;
  cinfo.out_color_space =
      cmyk ? JCS_CMYK : (channels == 1 ? JCS_GRAYSCALE : JCS_RGB);
  const int rowChannels = cmyk ? 4 : channels;
  // The accurate integer IDCT costs little over the fast one with SIMD.
  cinfo.dct_method = JDCT_ISLOW;
  int imageW = static_cast<int>(cinfo.image_width);
  int imageH = static_cast<int>(cinfo.image_height);
  CropBox box = crop ? *crop : CropBox{0, 0, imageW, imageH};
  if (box.x < 0 || box.y < 0 || box.width <= 0 || box.height <= 0 ||
      box.x + box.width > imageW || box.y + box.height > imageH) {
    badRequest = KILN_STATUS(
        kInvalidArgument,
        "crop " + std::to_string(box.width) + "x" + std::to_string(box.height) +
            "+" + std::to_string(box.x) + "+" + std::to_string(box.y) +
            " lies outside the " + std::to_string(imageW) + "x" +
            std::to_string(imageH) + " image");
    jpeg_destroy_decompress(&cinfo);
    return badRequest;
  }
  jpeg_start_decompress(&cinfo);

  out.width = box.width;
  out.height = box.height;
  out.channels = channels;
  out.pixels.resize(size_t(box.width) * box.height * channels);
  const size_t outRowBytes = size_t(box.width) * channels;
  // Copies `box.width` pixels starting at `src` into output row y.
  auto store = [&](const uint8_t *src, int y) {
    uint8_t *dst = out.pixels.data() + y * outRowBytes;
    if (!cmyk) {
      std::memcpy(dst, src, outRowBytes);
      return;
    }
    for (int x = 0; x < box.width; ++x)
      cmykToOutput(src + 4 * x, dst + size_t(x) * channels, channels);
  };

  bool whole = box.width == imageW && box.height == imageH;
  if (mode == JpegDecodeMode::kFull || whole) {
    row.resize(size_t(imageW) * rowChannels);
    for (int y = 0; y < imageH; ++y) {
      JSAMPROW dst = row.data();
      if (jpeg_read_scanlines(&cinfo, &dst, 1) != 1) {
        jpeg_destroy_decompress(&cinfo);
        return KILN_STATUS(kDataLoss,
                           "corrupt JPEG: libjpeg delivered " +
                               std::to_string(y) + " of " +
                               std::to_string(imageH) + " rows");
      }
      if (y >= box.y && y < box.y + box.height)
        store(row.data() + size_t(box.x) * rowChannels, y - box.y);
    }
    // Reads to the end-of-image marker: a corrupt tail warns here.
    jpeg_finish_decompress(&cinfo);
  } else {
    // jpeg_crop_scanline moves xoff left to an iMCU boundary and grows
    // cropW to match; we copy our columns out of the wider row. Chroma
    // upsampling treats the window's edges as image edges, so a column on
    // the edge would differ from a full decode by a few levels. Two extra
    // pixels each side give the upsampler its neighbours: the crop is then
    // bit-identical to the same region of a full decode.
    constexpr int kMargin = 2;
    int left = std::max(0, box.x - kMargin);
    int right = std::min(imageW, box.x + box.width + kMargin);
    JDIMENSION xoff = static_cast<JDIMENSION>(left);
    JDIMENSION cropW = static_cast<JDIMENSION>(right - left);
    if (right - left < imageW)
      jpeg_crop_scanline(&cinfo, &xoff, &cropW);
    row.resize(size_t(cinfo.output_width) * rowChannels);
    size_t skipBytes = size_t(box.x - static_cast<int>(xoff)) * rowChannels;
    // Every warning about corrupt data has already jumped out (onMessage),
    // so aborting below hides nothing about the rows we used: the iMCU rows
    // that hold the crop were decoded in full. Still, a row that libjpeg
    // did not deliver must not pass as pixels.
    JDIMENSION skipped =
        box.y > 0 ? jpeg_skip_scanlines(&cinfo, static_cast<JDIMENSION>(box.y))
                  : 0;
    int delivered = 0;
    if (skipped == static_cast<JDIMENSION>(box.y))
      for (; delivered < box.height; ++delivered) {
        JSAMPROW dst = row.data();
        if (jpeg_read_scanlines(&cinfo, &dst, 1) != 1)
          break;
        store(row.data() + skipBytes, delivered);
      }
    // The rows below the crop are not needed; abort instead of finishing.
    jpeg_abort_decompress(&cinfo);
    if (delivered != box.height) {
      jpeg_destroy_decompress(&cinfo);
      return KILN_STATUS(
          kDataLoss, "corrupt JPEG: libjpeg delivered " +
                         std::to_string(delivered) + " of the crop's " +
                         std::to_string(box.height) + " rows after skipping " +
                         std::to_string(skipped) + " of " +
                         std::to_string(box.y));
    }
  }
  jpeg_destroy_decompress(&cinfo);
  return Status::ok();
}

} // namespace kiln::rt
