//===- transform.cpp - Record -> augmented image --------------------------===//
#include "kiln/rt/transform.h"

#include <climits>
#include <cstring>

namespace kiln::rt {

TransformOptions
TransformOptions::fromConfig(const kiln_rt_dataset_config_t &c) {
  TransformOptions o;
  o.augment = c.augment;
  o.height = static_cast<int>(c.height);
  o.width = static_cast<int>(c.width);
  o.channels = static_cast<int>(c.channels);
  o.flip = c.flip != 0;
  o.crop.minArea = c.min_area;
  o.crop.maxArea = c.max_area;
  o.crop.minAspect = c.min_aspect;
  o.crop.maxAspect = c.max_aspect;
  o.crop.attempts = static_cast<int>(c.crop_attempts);
  o.crop.centerFraction = c.center_crop_fraction;
  o.pad = static_cast<int>(c.pad);
  o.decodeMode =
      c.full_decode ? JpegDecodeMode::kFull : JpegDecodeMode::kCropOnly;
  o.labelOffset = c.label_offset;
  o.numClasses = c.num_classes;
  o.maxImagePixels = c.max_image_pixels;
  o.convertChannels = (c.image_policy & KILN_RT_IMAGE_CONVERT_CHANNELS) != 0;
  o.upscale = (c.image_policy & KILN_RT_IMAGE_UPSCALE) != 0;
  return o;
}

namespace {
/// A record lacking a required key is corrupt data (kDataLoss, skippable),
/// not a missing file.
template <typename T> StatusOr<T> required(StatusOr<T> value) {
  if (value.status().code() == StatusCode::kNotFound)
    return Status(StatusCode::kDataLoss, value.status().message());
  return value;
}

/// Data that is not what the model takes is the wrong data set, not a
/// corrupt record: kInvalidArgument, which --skip-bad-records does not skip.
/// Converting channels or enlarging images happens only when asked for.
Status checkAgainstModel(const RecordImage &image,
                         const TransformOptions &options) {
  auto str = [](int v) { return std::to_string(v); };
  if (image.channels != options.channels && !options.convertChannels)
    return KILN_STATUS(
        kInvalidArgument,
        "the image has " + str(image.channels) +
            (image.channels == 1 ? " channel" : " channels") +
            " but the model takes " + str(options.channels) +
            ": pass --convert-channels to convert " +
            (image.channels == 1 ? "gray to RGB" : "RGB to gray") +
            " (or train a model for this data: build_model.py --channels " +
            str(image.channels) + ")");
  bool padded = options.augment == KILN_RT_AUGMENT_PAD_CROP_FLIP;
  if (!padded && !options.upscale &&
      (image.width < options.width || image.height < options.height))
    return KILN_STATUS(
        kInvalidArgument,
        "the image is " + str(image.width) + "x" + str(image.height) +
            ", smaller than the model's " + str(options.width) + "x" +
            str(options.height) +
            " input: pass --upscale to enlarge such images (or train a model "
            "for this data: build_model.py --image-size " +
            str(std::max(image.width, image.height)) + ")");
  return Status::ok();
}
/// kDataLoss if an image of width x height is larger than the options
/// allow; `what` says where the size comes from.
Status checkPixelCap(const std::string &what, uint64_t width, uint64_t height,
                     const TransformOptions &options) {
  if (width * height <= options.maxImagePixels)
    return Status::ok();
  return KILN_STATUS(kDataLoss, what + " " + std::to_string(width) + "x" +
                                    std::to_string(height) + " = " +
                                    std::to_string(width * height) +
                                    " pixels, more than max_image_pixels " +
                                    std::to_string(options.maxImagePixels));
}

/// The checks of a JPEG's header that do not depend on a record: the pixel
/// cap, then what the model takes. Sets the image's size and channels.
Status checkJpeg(const JpegInfo &info, const TransformOptions &options,
                 RecordImage &image) {
  KILN_RETURN_IF_ERROR(checkPixelCap("the JPEG declares", uint64_t(info.width),
                                     uint64_t(info.height), options));
  image.width = info.width;
  image.height = info.height;
  image.channels = info.components;
  return checkAgainstModel(image, options);
}
} // namespace

StatusOr<int32_t> checkLabel(int64_t stored, int32_t labelOffset,
                             uint32_t numClasses) {
  const std::string offset = std::to_string(labelOffset);
  int64_t label = 0;
  if (__builtin_sub_overflow(stored, int64_t(labelOffset), &label) ||
      label < INT32_MIN || label > INT32_MAX)
    return KILN_STATUS(kDataLoss, "label: image/class/label " +
                                      std::to_string(stored) +
                                      " minus the label offset " + offset +
                                      " does not fit int32");
  if (numClasses == 0 || (label >= 0 && label < int64_t(numClasses)))
    return static_cast<int32_t>(label);
  // Both sums fit int64: |label| <= 2^31 and numClasses < 2^32.
  int64_t first = stored - label;
  int64_t last = first + numClasses - 1;
  std::string message =
      "label out of range: image/class/label " + std::to_string(stored) +
      " with label offset " + offset + " is class " + std::to_string(label) +
      ", but the model has classes 0.." + std::to_string(numClasses - 1) +
      " (stored labels " + std::to_string(first) + ".." +
      std::to_string(last) + " under this offset)";
  // The two conventions in use: TensorFlow's 0-based labels and the
  // 1-based ones of imagenet_to_gcs.py and kiln-data.
  int64_t hint = label == -1                    ? labelOffset - int64_t(1)
                 : label == int64_t(numClasses) ? labelOffset + int64_t(1)
                                                : -1;
  if (hint == 0 || hint == 1)
    message += "; the data looks " + std::to_string(hint) +
               "-based: pass --label-offset " + std::to_string(hint) +
               " (dataset config label_offset)";
  return KILN_STATUS(kDataLoss, message);
}

Status inspectRecord(std::string_view record, const TransformOptions &options,
                     Example &example, RecordImage &image) {
  KILN_RETURN_IF_ERROR(example.parse(record));
  KILN_ASSIGN_OR_RETURN(image.encoded,
                        required(example.getBytes(keys::kEncoded)));
  KILN_ASSIGN_OR_RETURN(image.storedLabel,
                        required(example.getInt64(keys::kLabel)));
  KILN_ASSIGN_OR_RETURN(image.label, checkLabel(image.storedLabel,
                                                options.labelOffset,
                                                options.numClasses));

  std::string_view format;
  if (example.find(keys::kFormat)) {
    KILN_ASSIGN_OR_RETURN(format, example.getBytes(keys::kFormat));
  }
  image.raw = format == kRawFormat;
  if (!image.raw) {
    // Anything but "raw" is taken for JPEG; say what else the pipeline
    // reads, since writers of other formats (PNG) usually say so here.
    if (!looksLikeJpeg(image.encoded))
      return notJpegError(
          image.encoded,
          (format.empty() ? std::string(" (the record has no image/format)")
                          : " (image/format '" + std::string(format) + "')") +
              "; the pipeline decodes JPEG images, and uint8 pixels stored "
              "as they are under image/format \"raw\" with image/height, "
              "image/width and image/channels: re-encode the images as "
              "JPEG or store them raw");
    KILN_ASSIGN_OR_RETURN(JpegInfo info, readJpegInfo(image.encoded));
    // TensorFlow-written records state the size; a JPEG that declares
    // another is not the image the record describes (or a decompression
    // bomb behind a small file).
    int64_t stated[2] = {-1, -1};
    const std::string_view sizeKeys[2] = {keys::kWidth, keys::kHeight};
    for (int i = 0; i < 2; ++i)
      if (example.find(sizeKeys[i])) {
        KILN_ASSIGN_OR_RETURN(stated[i], example.getInt64(sizeKeys[i]));
      }
    if ((stated[0] >= 0 && stated[0] != info.width) ||
        (stated[1] >= 0 && stated[1] != info.height)) {
      auto text = [](int64_t v) {
        return v >= 0 ? std::to_string(v) : std::string("(absent)");
      };
      return KILN_STATUS(kDataLoss,
                         "the JPEG declares " + std::to_string(info.width) +
                             "x" + std::to_string(info.height) +
                             " (width x height) in its SOF, but image/width x "
                             "image/height say " +
                             text(stated[0]) + "x" + text(stated[1]));
    }
    return checkJpeg(info, options, image);
  }
  int64_t dims[3];
  const std::string_view dimKeys[3] = {keys::kHeight, keys::kWidth,
                                       keys::kChannels};
  for (int i = 0; i < 3; ++i) {
    KILN_ASSIGN_OR_RETURN(dims[i], required(example.getInt64(dimKeys[i])));
    if (dims[i] < 1 || dims[i] > (1 << 16))
      return KILN_STATUS(kDataLoss, "raw image has " + std::string(dimKeys[i]) +
                                        " = " + std::to_string(dims[i]));
  }
  if (dims[2] != 1 && dims[2] != 3)
    return KILN_STATUS(kDataLoss, "raw image has " + std::to_string(dims[2]) +
                                      " channels; 1 or 3 are supported");
  KILN_RETURN_IF_ERROR(checkPixelCap("the raw image is", uint64_t(dims[1]),
                                     uint64_t(dims[0]), options));
  uint64_t want = uint64_t(dims[0]) * dims[1] * dims[2];
  if (image.encoded.size() != want)
    return KILN_STATUS(kDataLoss, "raw image of " + std::to_string(dims[0]) +
                                      "x" + std::to_string(dims[1]) + "x" +
                                      std::to_string(dims[2]) + " needs " +
                                      std::to_string(want) +
                                      " bytes but image/encoded "
                                      "holds " +
                                      std::to_string(image.encoded.size()));
  image.height = static_cast<int>(dims[0]);
  image.width = static_cast<int>(dims[1]);
  image.channels = static_cast<int>(dims[2]);
  return checkAgainstModel(image, options);
}

Status ExampleTransform::apply(std::string_view record, uint64_t seed,
                               float *out, int32_t &label) {
  RecordImage info;
  KILN_RETURN_IF_ERROR(inspectRecord(record, options_, example_, info));
  label = info.label;
  return transform(info, seed, out);
}

Status ExampleTransform::applyToImage(std::string_view encoded, float *out) {
  RecordImage info;
  info.encoded = encoded;
  KILN_ASSIGN_OR_RETURN(JpegInfo header, readJpegInfo(encoded));
  KILN_RETURN_IF_ERROR(checkJpeg(header, options_, info));
  // The eval recipe draws nothing: any seed gives the same pixels.
  return transform(info, 0, out);
}

Status ExampleTransform::transform(const RecordImage &info, uint64_t seed,
                                   float *out) {
  Rng rng(seed);
  const TransformOptions &o = options_;
  // The eval recipe follows the data: photos (JPEG) are center-cropped as
  // in the ImageNet references; raw images (IDX), and JPEGs already of the
  // model's input size (small-image data sets stored as JPEG, whose models
  // trained on the whole image), are used whole.
  kiln_rt_augment_t augment = o.augment;
  if (augment == KILN_RT_AUGMENT_EVAL) {
    bool inputSize = info.width == o.width && info.height == o.height;
    augment = info.raw || inputSize ? KILN_RT_AUGMENT_NONE
                                    : KILN_RT_AUGMENT_CENTER_CROP;
  }

  // Which source region feeds the output, and whether to mirror it.
  CropBox box{0, 0, info.width, info.height};
  bool needsRegion = false;
  if (augment == KILN_RT_AUGMENT_RANDOM_RESIZED_CROP) {
    box = sampleRandomResizedCrop(info.width, info.height, o.crop, rng);
    needsRegion = true;
  } else if (augment == KILN_RT_AUGMENT_CENTER_CROP) {
    box = centerCropBox(info.width, info.height, o.crop.centerFraction);
    needsRegion = true;
  }

  if (info.raw) {
    ImageU8 &src = needsRegion ? scratch_ : decoded_;
    src.width = info.width;
    src.height = info.height;
    src.channels = info.channels;
    src.pixels.assign(info.encoded.begin(), info.encoded.end());
    if (needsRegion)
      cropImage(scratch_, box, decoded_);
    KILN_RETURN_IF_ERROR(convertChannels(decoded_, o.channels));
  } else {
    KILN_RETURN_IF_ERROR(decodeJpeg(info.encoded, needsRegion ? &box : nullptr,
                                    o.channels, o.decodeMode, decoded_));
  }

  switch (augment) {
  case KILN_RT_AUGMENT_EVAL:
    return KILN_STATUS(kInternal, "the eval augmentation was not resolved");
  case KILN_RT_AUGMENT_RANDOM_RESIZED_CROP: {
    bool flip = o.flip && rng.coin();
    resizeBilinear(decoded_, o.width, o.height, flip, out);
    break;
  }
  case KILN_RT_AUGMENT_CENTER_CROP:
    resizeBilinear(decoded_, o.width, o.height, false, out);
    break;
  case KILN_RT_AUGMENT_PAD_CROP_FLIP: {
    int rangeX = decoded_.width + 2 * o.pad - o.width;
    int rangeY = decoded_.height + 2 * o.pad - o.height;
    if (rangeX < 0 || rangeY < 0)
      return KILN_STATUS(kInvalidArgument,
                         "pad-crop: a " + std::to_string(decoded_.width) + "x" +
                             std::to_string(decoded_.height) +
                             " image padded by " + std::to_string(o.pad) +
                             " is smaller than the " + std::to_string(o.width) +
                             "x" + std::to_string(o.height) + " output");
    int ox = static_cast<int>(rng.below(uint64_t(rangeX) + 1));
    int oy = static_cast<int>(rng.below(uint64_t(rangeY) + 1));
    bool flip = o.flip && rng.coin();
    padCrop(decoded_, o.pad, ox, oy, o.width, o.height, flip, out);
    break;
  }
  case KILN_RT_AUGMENT_NONE:
    if (decoded_.width == o.width && decoded_.height == o.height) {
      // Exact (lossless) path: IDX pixels reach the batch bit for bit.
      for (size_t i = 0; i < decoded_.pixels.size(); ++i)
        out[i] = decoded_.pixels[i];
    } else {
      resizeBilinear(decoded_, o.width, o.height, false, out);
    }
    break;
  }
  return Status::ok();
}

} // namespace kiln::rt
