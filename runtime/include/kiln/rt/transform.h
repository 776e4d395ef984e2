//===- transform.h - One record to one normalized-ready image ---*- C++ -*-===//
//
// Turns a serialized tf.train.Example into an augmented float image (HWC,
// 0..255) and a label. Pure given (record, seed): the same inputs give the
// same pixels on any thread, which keeps the pipeline deterministic for any
// number of workers.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RT_TRANSFORM_H
#define KILN_RT_TRANSFORM_H

#include "kiln/rt/augment.h"
#include "kiln/rt/data.h"
#include "kiln/rt/example.h"
#include "kiln/rt/image.h"

#include <string_view>

namespace kiln::rt {

/// Feature keys, as imagenet_to_gcs.py writes them.
namespace keys {
inline constexpr std::string_view kEncoded = "image/encoded";
inline constexpr std::string_view kLabel = "image/class/label";
inline constexpr std::string_view kSynset = "image/class/synset";
inline constexpr std::string_view kHeight = "image/height";
inline constexpr std::string_view kWidth = "image/width";
inline constexpr std::string_view kFormat = "image/format";
inline constexpr std::string_view kFilename = "image/filename";
inline constexpr std::string_view kColorspace = "image/colorspace";
inline constexpr std::string_view kChannels = "image/channels";
} // namespace keys

/// image/format value for uncompressed uint8 HWC pixels (kiln-data idx).
inline constexpr std::string_view kRawFormat = "raw";

/// The default of kiln_rt_dataset_config_t::max_image_pixels: 64 Mi pixels
/// (8192 x 8192), 192 MiB decoded as RGB. docs/runtime-data.md says why.
inline constexpr uint64_t kDefaultMaxImagePixels = uint64_t(1) << 26;

struct TransformOptions {
  kiln_rt_augment_t augment = KILN_RT_AUGMENT_RANDOM_RESIZED_CROP;
  int height = 224;
  int width = 224;
  int channels = 3;
  bool flip = true;
  RandomCropParams crop;
  int pad = 4;
  JpegDecodeMode decodeMode = JpegDecodeMode::kCropOnly;
  int32_t labelOffset = 1;
  /// Labels (after the offset) must be in 0..numClasses-1; 0: unchecked.
  uint32_t numClasses = 0;
  /// Largest width * height decoded (the JPEG's SOF or the raw size).
  uint64_t maxImagePixels = kDefaultMaxImagePixels;
  /// Gray <-> RGB and enlarging images smaller than the output: only when
  /// asked for (kiln_rt_dataset_config_t::image_policy).
  bool convertChannels = false;
  bool upscale = false;

  static TransformOptions fromConfig(const kiln_rt_dataset_config_t &config);
};

/// What a record holds, found without decoding the pixels.
struct RecordImage {
  std::string_view encoded;
  bool raw = false;
  int width = 0;
  int height = 0;
  int channels = 0;
  int64_t storedLabel = 0; ///< image/class/label as stored
  int32_t label = 0;       ///< storedLabel - labelOffset
};

/// Checks a stored label against the convention: stored - labelOffset must
/// fit int32 and, if numClasses > 0, lie in 0..numClasses-1. kDataLoss
/// naming the stored value, the offset and the valid range; when the value
/// is just outside the range it says which --label-offset the data looks
/// like it needs.
StatusOr<int32_t> checkLabel(int64_t stored, int32_t labelOffset,
                             uint32_t numClasses);

/// Parses `record` into `example` and checks it: the keys exist, the label
/// passes checkLabel, the JPEG header is readable and its size agrees with
/// image/height and image/width when the record has them (or the raw size
/// matches height*width*channels), and the image has at most
/// maxImagePixels pixels; and that it is what the model takes: its channels
/// (unless convertChannels) and at least the output's size (unless upscale,
/// or pad-crop augmentation, which pads), else kInvalidArgument. Cheap: the reader thread runs it on every record
/// so most bad records are caught before a batch is formed.
Status inspectRecord(std::string_view record, const TransformOptions &options,
                     Example &example, RecordImage &image);

class ExampleTransform {
public:
  explicit ExampleTransform(const TransformOptions &options)
      : options_(options) {}

  /// Decodes and augments `record` into `out` (height*width*channels floats).
  Status apply(std::string_view record, uint64_t seed, float *out,
               int32_t &label);

  /// The same for a bare JPEG (a file's bytes, no record around it), as
  /// apply() treats a record holding it: the header's checks (a JPEG, at
  /// most maxImagePixels, the model's channels and size unless the image
  /// policy allows otherwise) and the augmentation, under
  /// KILN_RT_AUGMENT_EVAL the evaluation's center crop (none for an image of
  /// the model's input size). The executable's
  /// --predict classifies images with it exactly as --eval scores records.
  Status applyToImage(std::string_view encoded, float *out);

private:
  /// Decodes `info` (inspected) and augments it into `out`.
  Status transform(const RecordImage &info, uint64_t seed, float *out);

  TransformOptions options_;
  Example example_;
  ImageU8 decoded_;
  ImageU8 scratch_;
};

} // namespace kiln::rt

#endif // KILN_RT_TRANSFORM_H
