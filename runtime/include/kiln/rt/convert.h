//===- convert.h - kiln-data: raw data sets to sharded TFRecords -*- C++
//-*-===//
#ifndef KILN_DATA_CONVERT_H
#define KILN_DATA_CONVERT_H

#include "kiln/base/status.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace kiln::data {

struct ConvertOptions {
  std::string input;
  std::string output;
  size_t trainShards = 0;      ///< 0: the mode's default
  size_t validationShards = 0; ///< 0: the mode's default
  uint64_t seed = 0;
  unsigned threads = 0; ///< 0: hardware concurrency
  bool skipBad = false; ///< skip unreadable inputs, count them
  bool progress = true;
  std::vector<std::string> splits = {"train", "validation"};
};

/// Totals for the final summary.
struct ConvertSummary {
  uint64_t records = 0;
  uint64_t bytes = 0;
  uint64_t skipped = 0;
  uint64_t shards = 0;
};

/// Builds the serialized tf.train.Example of item `item`. Returning a
/// kDataLoss status with skipBad set drops the item (counted); any other
/// error stops the conversion.
using MakeExample = std::function<Status(size_t item, std::string &example)>;

/// Writes items in `order` to `numShards` files `<split>-NNNNN-of-NNNNN` in
/// `outDir`; shard s holds the s-th contiguous slice of `order`, so the
/// caller's shuffle decides how classes mix across shards.
Status writeShards(const ConvertOptions &options, const std::string &split,
                   const std::vector<size_t> &order, size_t numShards,
                   const MakeExample &make, ConvertSummary &summary);

/// Shuffles 0..n-1 deterministically for `seed`.
std::vector<size_t> shuffledOrder(size_t n, uint64_t seed);

/// `kiln-data idx`: MNIST-style IDX files (train-*, t10k-*) to shards.
Status convertIdx(const ConvertOptions &options, ConvertSummary &summary);
/// `kiln-data imagenet`: the folder layout imagenet_to_gcs.py reads.
Status convertImagenet(const ConvertOptions &options, ConvertSummary &summary);

} // namespace kiln::data

#endif // KILN_DATA_CONVERT_H
