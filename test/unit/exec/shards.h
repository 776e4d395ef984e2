//===- shards.h - Small raw-image TFRecord shards for runtime tests -*- C++ -*-===//
//
// Writes <split>-NNNNN-of-NNNNN files of raw 8x8x3 images (format "raw", as
// kiln-data writes IDX data) whose labels (stored from `labelBase`: 1 as
// kiln-data stores them, 0 as TensorFlow often does) are a function of the
// pixels, so a model can learn them.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_TEST_UNIT_EXEC_SHARDS_H
#define KILN_TEST_UNIT_EXEC_SHARDS_H

#include "kiln/rt/example.h"
#include "kiln/rt/files.h"
#include "kiln/rt/random.h"
#include "kiln/rt/tfrecord.h"
#include "kiln/rt/transform.h"

#include <algorithm>
#include <string>
#include <vector>

namespace kiln::rt::exec::test {

/// One file per entry of `recordsPerShard`; records of shard s are seeded
/// by (seed, s, index).
inline Status writeRawShards(const std::string &dir, const std::string &split,
                             const std::vector<int> &recordsPerShard,
                             uint64_t seed, int classes = 10,
                             int labelBase = 1) {
  KILN_RETURN_IF_ERROR(makeDirectories(dir));
  for (size_t s = 0; s < recordsPerShard.size(); ++s) {
    KILN_ASSIGN_OR_RETURN(
        auto writer,
        RecordWriter::create(dir + "/" +
                             shardName(split, s, recordsPerShard.size())));
    for (int r = 0; r < recordsPerShard[s]; ++r) {
      Rng rng(hashCombine(hashCombine(seed, s), uint64_t(r)));
      int label = static_cast<int>(rng.below(uint64_t(classes)));
      std::string pixels(8 * 8 * 3, '\0');
      for (size_t i = 0; i < pixels.size(); ++i) {
        // A class-dependent colour plus noise.
        int base = (i % 3 == 0 ? 25 * label : i % 3 == 1 ? 250 - 20 * label
                                                          : 128);
        pixels[i] = static_cast<char>(
            std::clamp<int>(base + static_cast<int>(rng.below(40)) - 20, 0,
                            255));
      }
      std::string record =
          ExampleBuilder()
              .addBytes(keys::kEncoded, pixels)
              .addBytes(keys::kFormat, "raw")
              .addInt64(keys::kHeight, 8)
              .addInt64(keys::kWidth, 8)
              .addInt64(keys::kChannels, 3)
              .addInt64(keys::kLabel, label + labelBase)
              .build();
      KILN_RETURN_IF_ERROR(writer->write(record));
    }
    KILN_RETURN_IF_ERROR(writer->close());
  }
  return Status::ok();
}

} // namespace kiln::rt::exec::test

#endif // KILN_TEST_UNIT_EXEC_SHARDS_H
