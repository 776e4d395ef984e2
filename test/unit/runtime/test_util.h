//===- test_util.h - Helpers shared by the runtime unit tests ---*- C++ -*-===//
#ifndef KILN_TEST_UNIT_RUNTIME_TEST_UTIL_H
#define KILN_TEST_UNIT_RUNTIME_TEST_UTIL_H

#include "kiln/rt/abi.h"
#include "kiln/rt/example.h"
#include "kiln/rt/files.h"
#include "kiln/rt/random.h"
#include "kiln/rt/tfrecord.h"
#include "kiln/rt/transform.h"

#include "../common/temp_dir.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <turbojpeg.h>
#include <vector>
#include <zlib.h>

namespace kiln::rt::test {

/// A scratch directory named kiln-rt-test-*.
class TempDir : public kiln::test::TempDir {
public:
  TempDir() : kiln::test::TempDir("kiln-rt-test") {}
};

inline void writeFile(const std::string &path, const std::string &bytes) {
  std::FILE *f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr) << path;
  ASSERT_EQ(std::fwrite(bytes.data(), 1, bytes.size(), f), bytes.size());
  ASSERT_EQ(std::fclose(f), 0);
}

inline std::string readFileBytes(const std::string &path) {
  std::string out;
  std::FILE *f = std::fopen(path.c_str(), "rb");
  if (!f)
    return out;
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0)
    out.append(buf, n);
  std::fclose(f);
  return out;
}

/// Encodes RGB (or gray, channels == 1) pixels as JPEG.
inline std::string encodeJpeg(const std::vector<uint8_t> &pixels, int width,
                              int height, int channels, int quality,
                              int subsamp = TJSAMP_444) {
  tjhandle tj = tjInitCompress();
  unsigned char *buf = nullptr;
  unsigned long size = 0;
  int rc = tjCompress2(tj, pixels.data(), width, 0, height,
                       channels == 1 ? TJPF_GRAY : TJPF_RGB, &buf, &size,
                       channels == 1 ? TJSAMP_GRAY : subsamp, quality,
                       TJFLAG_ACCURATEDCT);
  EXPECT_EQ(rc, 0) << tjGetErrorStr2(tj);
  std::string out(reinterpret_cast<char *>(buf), size);
  tjFree(buf);
  tjDestroy(tj);
  return out;
}

/// A smooth, photo-like RGB pattern (gradients plus mild noise) so that JPEG
/// round trips are close but not trivial.
inline std::vector<uint8_t> photoPattern(int width, int height, uint64_t seed,
                                         int noise = 8) {
  std::vector<uint8_t> px(size_t(width) * height * 3);
  Rng rng(seed);
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x)
      for (int c = 0; c < 3; ++c) {
        double v = 128 + 90 * std::sin(0.02 * x * (c + 1) + 0.03 * y) *
                             std::cos(0.015 * y * (3 - c));
        v += noise ? double(rng.below(2 * noise + 1)) - noise : 0;
        px[(size_t(y) * width + x) * 3 + c] =
            static_cast<uint8_t>(std::clamp(v, 0.0, 255.0));
      }
  return px;
}

/// An ImageNet-style Example (as imagenet_to_gcs.py writes it).
inline std::string jpegExample(const std::string &jpeg, int64_t label,
                               int width, int height) {
  return ExampleBuilder()
      .addInt64(keys::kHeight, height)
      .addInt64(keys::kWidth, width)
      .addBytes(keys::kColorspace, "RGB")
      .addInt64(keys::kChannels, 3)
      .addInt64(keys::kLabel, label)
      .addBytes(keys::kSynset, "n0000000" + std::to_string(label))
      .addBytes(keys::kFormat, "JPEG")
      .addBytes(keys::kFilename, "img" + std::to_string(label) + ".JPEG")
      .addBytes(keys::kEncoded, jpeg)
      .build();
}

/// A raw grayscale Example whose pixels all equal `value` (kiln-data idx form).
inline std::string rawExample(int height, int width, uint8_t value,
                              int64_t label) {
  std::string pixels(size_t(height) * width, static_cast<char>(value));
  return ExampleBuilder()
      .addBytes(keys::kEncoded, pixels)
      .addBytes(keys::kFormat, kRawFormat)
      .addInt64(keys::kLabel, label)
      .addInt64(keys::kHeight, height)
      .addInt64(keys::kWidth, width)
      .addInt64(keys::kChannels, 1)
      .build();
}

/// Writes `records` as one TFRecord file.
inline void writeRecords(const std::string &path,
                         const std::vector<std::string> &records) {
  std::string bytes;
  for (const auto &r : records)
    appendTfRecord(bytes, r);
  writeFile(path, bytes);
}

/// `bytes` as one GZIP (TensorFlow's "GZIP") or zlib ("ZLIB") stream.
inline std::string compress(const std::string &bytes,
                            TfRecordCompression kind) {
  z_stream z{};
  int bits = kind == TfRecordCompression::kGzip ? 31 : 15;
  EXPECT_EQ(deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, bits, 8,
                         Z_DEFAULT_STRATEGY),
            Z_OK);
  std::string out(deflateBound(&z, bytes.size()), '\0');
  z.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(bytes.data()));
  z.avail_in = static_cast<uInt>(bytes.size());
  z.next_out = reinterpret_cast<Bytef *>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

/// A config for small raw grayscale data: no normalization (mean 0, std 1),
/// so batch values are the pixels themselves. `dir` must outlive the config.
inline kiln_rt_dataset_config_t rawConfig(const std::string &dir, int size,
                                          uint32_t batch) {
  kiln_rt_dataset_config_t c;
  kiln_rt_dataset_config_init(&c);
  c.path = dir.c_str();
  c.split = "train";
  c.batch_size = batch;
  c.height = c.width = size;
  c.channels = 1;
  c.mean[0] = 0;
  c.std[0] = 1;
  c.augment = KILN_RT_AUGMENT_NONE;
  c.log_skipped = 0;
  return c;
}

/// Frees a C status at scope exit and gives its message to assertions.
struct CStatus {
  kiln_rt_status_t s = nullptr;
  ~CStatus() { kiln_rt_status_free(s); }
  bool ok() const { return s == nullptr; }
  std::string message() const { return kiln_rt_status_message(s); }
  kiln_rt_status_code_t code() const { return kiln_rt_status_code(s); }
};

/// Asserts that `text` contains `want`, printing both otherwise.
inline void expectContains(const std::string &text, const std::string &want) {
  EXPECT_NE(text.find(want), std::string::npos)
      << text << "\nwanted: " << want;
}

/// How the pipeline's messages name a record.
inline std::string where(const std::string &path, uint64_t index,
                         uint64_t offset) {
  return path + ": record " + std::to_string(index) + " at byte offset " +
         std::to_string(offset);
}

/// Everything a dataset delivered until its end or its first error.
struct Drained {
  std::vector<int32_t> labels;     // valid examples only, in order
  std::vector<std::string> images; // one string per batch (whole buffer)
  std::vector<uint32_t> sizes;
  std::vector<uint32_t> epochs;
  std::vector<uint64_t> indices;
  std::vector<kiln_rt_dataset_epoch_stats_t> epochStats; // after each batch
  std::vector<std::string> firstSkipped;
  CStatus error; // the status that ended the run (null at a clean end)
  kiln_rt_dataset_stats_t stats{};
};

/// Opens a dataset with `config` and reads up to `maxBatches` batches.
inline void drain(const kiln_rt_dataset_config_t &config, Drained &out,
                  size_t maxBatches = SIZE_MAX) {
  kiln_rt_dataset_t *ds = nullptr;
  out.error.s = kiln_rt_dataset_open(&config, &ds);
  if (!out.error.ok())
    return;
  for (size_t i = 0; i < maxBatches; ++i) {
    kiln_rt_batch_t batch;
    out.error.s = kiln_rt_dataset_next_batch(ds, &batch);
    if (!out.error.ok() || batch.size == 0)
      break;
    EXPECT_EQ(batch.image_bytes, kiln_rt_dataset_batch_bytes(ds));
    out.labels.insert(out.labels.end(), batch.labels,
                      batch.labels + batch.size);
    out.images.emplace_back(static_cast<const char *>(batch.images),
                            batch.image_bytes);
    out.sizes.push_back(batch.size);
    out.epochs.push_back(batch.epoch);
    out.indices.push_back(batch.index);
    kiln_rt_dataset_epoch_stats_t es;
    kiln_rt_dataset_get_epoch_stats(ds, &es);
    out.epochStats.push_back(es);
    out.firstSkipped.push_back(es.first_skipped);
  }
  kiln_rt_dataset_get_stats(ds, &out.stats);
  kiln_rt_dataset_close(ds);
}

} // namespace kiln::rt::test

#endif // KILN_TEST_UNIT_RUNTIME_TEST_UTIL_H
