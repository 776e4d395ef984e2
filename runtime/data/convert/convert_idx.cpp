//===- convert_idx.cpp - kiln-data idx ------------------------------------===//
//
// MNIST-style IDX files become Examples holding the raw uint8 pixels
// (image/format "raw", lossless), with image/class/label = IDX label + 1 so
// that labels are 1-based in every kiln-data output, as in ImageNet shards;
// the reader subtracts label_offset (default 1). image/filename is
// "<idx file>:<index>" so every record can be traced to its source.
//
//===----------------------------------------------------------------------===//
#include "kiln/rt/convert.h"

#include "kiln/rt/example.h"
#include "kiln/rt/idx.h"
#include "kiln/rt/transform.h"

#include <sys/stat.h>

namespace kiln::data {
namespace {

namespace keys = rt::keys;

bool exists(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

/// Finds `<dir>/<stem>` or `<dir>/<stem>.gz`.
StatusOr<std::string> findIdxFile(const std::string &dir,
                                  const std::string &stem) {
  for (const char *suffix : {"", ".gz"}) {
    std::string path = dir + "/" + stem + suffix;
    if (exists(path))
      return path;
  }
  return KILN_STATUS(kNotFound,
                     "missing IDX file " + dir + "/" + stem + "[.gz]");
}

std::string baseName(const std::string &path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

Status convertSplit(const ConvertOptions &options, const std::string &split,
                    const std::string &prefix, size_t shards,
                    ConvertSummary &summary) {
  KILN_ASSIGN_OR_RETURN(
      std::string imagesPath,
      findIdxFile(options.input, prefix + "-images-idx3-ubyte"));
  KILN_ASSIGN_OR_RETURN(
      std::string labelsPath,
      findIdxFile(options.input, prefix + "-labels-idx1-ubyte"));
  KILN_ASSIGN_OR_RETURN(rt::IdxDataset ds,
                        rt::readIdxPair(imagesPath, labelsPath));
  const int64_t rows = ds.images.dims[1], cols = ds.images.dims[2];
  const size_t itemBytes = ds.images.itemBytes();
  const std::string source = baseName(imagesPath) + ":";

  auto make = [&](size_t i, std::string &out) -> Status {
    std::string_view pixels(
        reinterpret_cast<const char *>(ds.images.data.data()) + i * itemBytes,
        itemBytes);
    out = rt::ExampleBuilder()
              .addBytes(keys::kEncoded, pixels)
              .addBytes(keys::kFormat, rt::kRawFormat)
              .addInt64(keys::kLabel, int64_t(ds.labels.data[i]) + 1)
              .addInt64(keys::kHeight, rows)
              .addInt64(keys::kWidth, cols)
              .addInt64(keys::kChannels, 1)
              .addBytes(keys::kColorspace, "grayscale")
              .addBytes(keys::kFilename, source + std::to_string(i))
              .build();
    return Status::ok();
  };
  // Training data is shuffled before sharding so every shard mixes classes;
  // evaluation data keeps its order, as imagenet_to_gcs.py does.
  std::vector<size_t> order =
      split == "train" ? shuffledOrder(ds.images.count(), options.seed)
                       : shuffledOrder(0, 0);
  if (split != "train")
    for (size_t i = 0; i < ds.images.count(); ++i)
      order.push_back(i);
  return writeShards(options, split, order, shards, make, summary);
}

} // namespace

Status convertIdx(const ConvertOptions &options, ConvertSummary &summary) {
  struct stat st;
  if (::stat(options.input.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return KILN_STATUS(kNotFound, "missing input directory " + options.input);
  for (const std::string &split : options.splits) {
    if (split == "train")
      KILN_RETURN_IF_ERROR(convertSplit(
          options, "train", "train",
          options.trainShards ? options.trainShards : 16, summary));
    else if (split == "validation")
      KILN_RETURN_IF_ERROR(convertSplit(
          options, "validation", "t10k",
          options.validationShards ? options.validationShards : 4, summary));
    else
      return KILN_STATUS(kInvalidArgument,
                         "unknown split '" + split + "' (train, validation)");
  }
  return Status::ok();
}

} // namespace kiln::data
