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

  static TransformOptions fromConfig(const kiln_rt_dataset_config_t &config);
};

/// What a record holds, found without decoding the pixels.
struct RecordImage {
  std::string_view encoded;
  bool raw = false;
  int width = 0;
  int height = 0;
  int channels = 0;
  int32_t label = 0; ///< stored label - labelOffset
};

/// Parses `record` into `example` and checks it: the keys exist, the label
/// fits int32, the JPEG header is readable (or the raw size matches
/// height*width*channels). Cheap: the reader thread runs it on every record
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

private:
  TransformOptions options_;
  Example example_;
  ImageU8 decoded_;
  ImageU8 scratch_;
};

} // namespace kiln::rt

#endif // KILN_RT_TRANSFORM_H
