//===- fuzz_record_checks.cpp - libFuzzer target: record checks + decode --===//
//
// Arbitrary bytes as a serialized Example, checked as the pipeline's reader
// checks every record (keys, the label against the convention and the
// classes, the JPEG header and the declared size, the pixel cap) and then
// decoded as a worker decodes it (strict JPEG). The first input bytes choose
// the label offset, the class count and the augmentation, so the label
// checks see every combination. Random bytes rarely make a JPEG, so half of
// the inputs instead overwrite bytes of a valid one (made once, with
// TurboJPEG) inside an ImageNet-style record: corrupt scans, markers and
// frame sizes then reach the decoder. Errors must be kDataLoss (bad data) --
// kInvalidArgument for an image the policy refuses (other channels, smaller
// than the output), kUnimplemented for a JPEG colour space that cannot be
// converted -- and a record that passes must give a finite image and a label
// in range.
//
//===----------------------------------------------------------------------===//
#include "kiln/rt/transform.h"

#include <cmath>
#include <cstdlib>
#include <string>
#include <turbojpeg.h>
#include <vector>

namespace {

/// A 24x16 4:2:0 photo-like JPEG.
std::string validJpeg() {
  const int w = 24, h = 16;
  std::vector<unsigned char> px(w * h * 3);
  for (size_t i = 0; i < px.size(); ++i)
    px[i] = static_cast<unsigned char>(i * 37 % 251);
  tjhandle tj = tjInitCompress();
  unsigned char *buf = nullptr;
  unsigned long n = 0;
  if (tjCompress2(tj, px.data(), w, 0, h, TJPF_RGB, &buf, &n, TJSAMP_420, 75,
                  0) != 0)
    std::abort();
  std::string jpeg(reinterpret_cast<char *>(buf), n);
  tjFree(buf);
  tjDestroy(tj);
  return jpeg;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace kiln::rt;
  if (size < 3)
    return 0;
  TransformOptions options;
  options.labelOffset = static_cast<int8_t>(data[0]) % 3; // -2..2
  options.numClasses = data[1] % 12;                       // 0: unchecked
  const kiln_rt_augment_t augments[] = {
      KILN_RT_AUGMENT_RANDOM_RESIZED_CROP, KILN_RT_AUGMENT_CENTER_CROP,
      KILN_RT_AUGMENT_PAD_CROP_FLIP, KILN_RT_AUGMENT_NONE,
      KILN_RT_AUGMENT_EVAL};
  options.augment = augments[data[2] % 5];
  options.height = options.width = 8;
  options.channels = data[2] & 0x80 ? 1 : 3;
  // data[1]'s high bits: which conversions the image policy allows.
  options.convertChannels = data[1] & 0x80;
  options.upscale = data[1] & 0x40;
  options.pad = 4;
  // Small images only: a valid 4 KB JPEG may declare 65535 x 65535.
  options.maxImagePixels = 1 << 16;
  std::string_view record(reinterpret_cast<const char *>(data) + 3, size - 3);
  std::string built;
  if (data[2] & 0x40 && size >= 6) {
    // data[3..4]: where to write in the JPEG; data[5]: the stored label
    // (signed, around the offsets); the rest: the bytes written.
    static const std::string jpeg = validJpeg();
    std::string patched = jpeg;
    size_t at = (size_t(data[3]) << 8 | data[4]) % patched.size();
    for (size_t i = 6; i < size && at < patched.size(); ++i, ++at)
      patched[at] = static_cast<char>(data[i]);
    built = ExampleBuilder()
                .addInt64(keys::kHeight, 16)
                .addInt64(keys::kWidth, 24)
                .addInt64(keys::kLabel, static_cast<int8_t>(data[5]))
                .addBytes(keys::kFormat, "JPEG")
                .addBytes(keys::kEncoded, patched)
                .build();
    record = built;
  }

  Example example;
  RecordImage image;
  kiln::Status checked = inspectRecord(record, options, example, image);
  if (!checked.isOk()) {
    // Bad data, or (kInvalidArgument) an image the policy does not let the
    // model take: other channels or smaller than the output.
    bool refused =
        checked.code() == kiln::StatusCode::kInvalidArgument &&
        ((image.channels != options.channels && !options.convertChannels) ||
         (!options.upscale && options.augment != KILN_RT_AUGMENT_PAD_CROP_FLIP &&
          (image.width < options.width || image.height < options.height)));
    if (checked.code() != kiln::StatusCode::kDataLoss && !refused)
      std::abort();
    return 0;
  }
  if ((image.channels != options.channels && !options.convertChannels) ||
      (!options.upscale && options.augment != KILN_RT_AUGMENT_PAD_CROP_FLIP &&
       (image.width < options.width || image.height < options.height)))
    std::abort(); // the policy let through what it must refuse
  if (options.numClasses &&
      (image.label < 0 || image.label >= int32_t(options.numClasses)))
    std::abort();
  if (uint64_t(image.width) * uint64_t(image.height) > options.maxImagePixels)
    std::abort();

  ExampleTransform transform(options);
  std::vector<float> out(8 * 8 * 3);
  int32_t label = -1;
  kiln::Status applied = transform.apply(record, 42, out.data(), label);
  if (!applied.isOk()) {
    // PAD_CROP_FLIP refuses images smaller than the output (a caller error,
    // kInvalidArgument); anything else is bad data.
    if (applied.code() != kiln::StatusCode::kDataLoss &&
        applied.code() != kiln::StatusCode::kUnimplemented &&
        !(applied.code() == kiln::StatusCode::kInvalidArgument &&
          options.augment == KILN_RT_AUGMENT_PAD_CROP_FLIP))
      std::abort();
    return 0;
  }
  if (label != image.label)
    std::abort();
  for (size_t i = 0; i < size_t(8 * 8 * options.channels); ++i)
    if (!std::isfinite(out[i]) || out[i] < 0 || out[i] > 255)
      std::abort();
  return 0;
}
