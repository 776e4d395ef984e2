//===- pipeline_test.cpp - The input pipeline through the C ABI -----------===//
#include "test_util.h"

#include "kiln/rt/augment.h"
#include "kiln/rt/output.h"

#include <algorithm>
#include <numeric>
#include <set>

namespace kiln::rt {
namespace {

using test::CStatus;
using test::Drained;
using test::TempDir;
using test::drain;

/// `files` shards of `perFile` raw 4x4 records; record g (global index) has
/// label g+1 (stored 1-based) and all pixels equal to g % 251.
void writeRawShards(const std::string &dir, int files, int perFile) {
  for (int f = 0; f < files; ++f) {
    std::vector<std::string> records;
    for (int i = 0; i < perFile; ++i) {
      int g = f * perFile + i;
      records.push_back(
          test::rawExample(4, 4, static_cast<uint8_t>(g % 251), g + 1));
    }
    test::writeRecords(dir + "/" + shardName("train", f, files), records);
  }
}

/// Photo-like JPEG shards; record g has label g+1.
void writeJpegShards(const std::string &dir, int files, int perFile) {
  std::vector<std::string> jpegs;
  for (int k = 0; k < 4; ++k) {
    int w = 160 + 16 * k, h = 120 + 8 * k;
    jpegs.push_back(
        test::encodeJpeg(test::photoPattern(w, h, k), w, h, 3, 90, TJSAMP_420));
  }
  for (int f = 0; f < files; ++f) {
    std::vector<std::string> records;
    for (int i = 0; i < perFile; ++i) {
      int g = f * perFile + i;
      int k = g % 4;
      records.push_back(
          test::jpegExample(jpegs[k], g + 1, 160 + 16 * k, 120 + 8 * k));
    }
    test::writeRecords(dir + "/" + shardName("train", f, files), records);
  }
}

TEST(Pipeline, SequentialOrderAndExactPixelsWithoutShuffle) {
  TempDir dir;
  writeRawShards(dir.path(), 3, 10);
  auto c = test::rawConfig(dir.path(), 4, 5);
  c.shuffle = 0;
  c.interleave = 1;
  Drained d;
  drain(c, d);
  ASSERT_TRUE(d.error.ok()) << d.error.message();
  std::vector<int32_t> want(30);
  std::iota(want.begin(), want.end(), 0);
  EXPECT_EQ(d.labels, want);
  ASSERT_EQ(d.images.size(), 6u);
  for (size_t b = 0; b < 6; ++b) {
    const float *px = reinterpret_cast<const float *>(d.images[b].data());
    for (int n = 0; n < 5; ++n)
      for (int i = 0; i < 16; ++i)
        ASSERT_EQ(px[n * 16 + i], float((b * 5 + n) % 251));
  }
  EXPECT_EQ(d.stats.records_read, 30u);
  EXPECT_EQ(d.stats.batches_returned, 6u);
  EXPECT_EQ(d.stats.files, 3u);
}

TEST(Pipeline, InterleaveAlternatesFiles) {
  TempDir dir;
  writeRawShards(dir.path(), 2, 4);
  auto c = test::rawConfig(dir.path(), 4, 4);
  c.shuffle = 0;
  c.interleave = 2;
  Drained d;
  drain(c, d);
  ASSERT_TRUE(d.error.ok()) << d.error.message();
  EXPECT_EQ(d.labels, (std::vector<int32_t>{0, 4, 1, 5, 2, 6, 3, 7}));
}

TEST(Pipeline, ShuffleVisitsEveryRecordOncePerEpochAndEpochsDiffer) {
  TempDir dir;
  writeRawShards(dir.path(), 4, 25);
  auto c = test::rawConfig(dir.path(), 4, 10);
  c.shuffle_buffer = 16;
  c.num_epochs = 2;
  c.seed = 5;
  Drained d;
  drain(c, d);
  ASSERT_TRUE(d.error.ok()) << d.error.message();
  ASSERT_EQ(d.labels.size(), 200u);
  std::vector<int32_t> e0(d.labels.begin(), d.labels.begin() + 100);
  std::vector<int32_t> e1(d.labels.begin() + 100, d.labels.end());
  EXPECT_NE(e0, e1);
  std::vector<int32_t> sequential(100);
  std::iota(sequential.begin(), sequential.end(), 0);
  EXPECT_NE(e0, sequential);
  std::sort(e0.begin(), e0.end());
  std::sort(e1.begin(), e1.end());
  EXPECT_EQ(e0, sequential);
  EXPECT_EQ(e1, sequential);
  EXPECT_EQ(d.epochs.front(), 0u);
  EXPECT_EQ(d.epochs.back(), 1u);
}

TEST(Pipeline, SameSeedSameBatchesForAnyWorkerCount) {
  TempDir dir;
  writeJpegShards(dir.path(), 3, 12);
  kiln_rt_dataset_config_t c;
  kiln_rt_dataset_config_init(&c);
  c.path = dir.path().c_str();
  c.batch_size = 6;
  c.height = c.width = 48;
  c.shuffle_buffer = 10;
  c.seed = 1234;
  c.log_skipped = 0;
  c.dtype = KILN_RT_DTYPE_BF16;
  c.layout = KILN_RT_LAYOUT_NCHW16C;
  Drained one, three, again, other;
  c.num_workers = 1;
  c.prefetch_batches = 1;
  drain(c, one);
  c.num_workers = 3;
  c.prefetch_batches = 5;
  drain(c, three);
  drain(c, again);
  c.seed = 1235;
  drain(c, other);
  for (Drained *d : {&one, &three, &again, &other})
    ASSERT_TRUE(d->error.ok()) << d->error.message();
  ASSERT_EQ(one.images.size(), 6u);
  EXPECT_EQ(one.labels, three.labels);
  EXPECT_TRUE(one.images == three.images);
  EXPECT_TRUE(three.images == again.images);
  EXPECT_NE(one.labels, other.labels);
  EXPECT_FALSE(one.images == other.images);
}

TEST(Pipeline, PartialFinalBatchIsPaddedWhenKept) {
  TempDir dir;
  writeRawShards(dir.path(), 1, 7);
  auto c = test::rawConfig(dir.path(), 4, 3);
  c.shuffle = 0;
  c.drop_remainder = 0;
  kiln_rt_dataset_t *ds = nullptr;
  CStatus st{kiln_rt_dataset_open(&c, &ds)};
  ASSERT_TRUE(st.ok()) << st.message();
  kiln_rt_batch_t b;
  for (int i = 0; i < 2; ++i) {
    CStatus s{kiln_rt_dataset_next_batch(ds, &b)};
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(b.size, 3u);
  }
  CStatus s{kiln_rt_dataset_next_batch(ds, &b)};
  ASSERT_TRUE(s.ok());
  ASSERT_EQ(b.size, 1u);
  EXPECT_EQ(b.labels[0], 6);
  EXPECT_EQ(b.labels[1], -1);
  EXPECT_EQ(b.labels[2], -1);
  const float *px = static_cast<const float *>(b.images);
  EXPECT_EQ(px[0], 6.0f);
  for (int i = 16; i < 48; ++i)
    EXPECT_EQ(px[i], 0.0f);
  CStatus end{kiln_rt_dataset_next_batch(ds, &b)};
  EXPECT_TRUE(end.ok());
  EXPECT_EQ(b.size, 0u);
  kiln_rt_dataset_close(ds);

  // Dropped by default.
  c.drop_remainder = 1;
  Drained d;
  drain(c, d);
  EXPECT_EQ(d.labels.size(), 6u);
}

TEST(Pipeline, EvalCenterCropMatchesManualDecodeResizeNormalize) {
  TempDir dir;
  const int w = 200, h = 150;
  std::string jpeg = test::encodeJpeg(test::photoPattern(w, h, 9), w, h, 3, 90);
  test::writeRecords(dir.path() + "/validation-00000-of-00001",
                     {test::jpegExample(jpeg, 7, w, h)});
  kiln_rt_dataset_config_t c;
  kiln_rt_dataset_config_init(&c);
  c.path = dir.path().c_str();
  c.split = "validation";
  c.batch_size = 1;
  c.height = c.width = 56;
  c.augment = KILN_RT_AUGMENT_CENTER_CROP;
  c.layout = KILN_RT_LAYOUT_NCHW;
  c.log_skipped = 0;
  Drained d;
  drain(c, d);
  ASSERT_TRUE(d.error.ok()) << d.error.message();
  ASSERT_EQ(d.labels, std::vector<int32_t>{6});

  CropBox box = centerCropBox(w, h, 0.875);
  ImageU8 crop;
  ASSERT_TRUE(decodeJpeg(jpeg, &box, 3, JpegDecodeMode::kFull, crop).isOk());
  std::vector<float> hwc(56 * 56 * 3);
  resizeBilinear(crop, 56, 56, false, hwc.data());
  const float *got = reinterpret_cast<const float *>(d.images[0].data());
  const float mean[3] = {0.485f * 255, 0.456f * 255, 0.406f * 255};
  const float stdv[3] = {0.229f * 255, 0.224f * 255, 0.225f * 255};
  for (int k = 0; k < 3; ++k)
    for (int p = 0; p < 56 * 56; ++p)
      ASSERT_NEAR(got[k * 56 * 56 + p], (hwc[p * 3 + k] - mean[k]) / stdv[k],
                  1e-5);
}

TEST(Pipeline, PadCropFlipOnRawImages) {
  TempDir dir;
  writeRawShards(dir.path(), 1, 20);
  auto c = test::rawConfig(dir.path(), 4, 20);
  c.augment = KILN_RT_AUGMENT_PAD_CROP_FLIP;
  c.pad = 2;
  c.shuffle = 0;
  Drained d;
  drain(c, d);
  ASSERT_TRUE(d.error.ok()) << d.error.message();
  const float *px = reinterpret_cast<const float *>(d.images[0].data());
  int shifted = 0;
  for (int n = 0; n < 20; ++n) {
    float v = float(n % 251);
    int zeros = 0;
    for (int i = 0; i < 16; ++i) {
      ASSERT_TRUE(px[n * 16 + i] == v || px[n * 16 + i] == 0.0f);
      zeros += px[n * 16 + i] == 0.0f;
    }
    if (n > 0 && zeros > 0)
      ++shifted;
  }
  EXPECT_GT(shifted, 5); // most random offsets expose some padding
}

//===----------------------------------------------------------------------===//
// Bad input: every case names the file, the record index and the byte offset.
//===----------------------------------------------------------------------===//

/// Four good raw records in one shard, then `bad` as record 4, then two more.
std::string shardWithBadRecord(const TempDir &dir, const std::string &bad,
                               uint64_t &badOffset) {
  std::vector<std::string> records;
  for (int i = 0; i < 4; ++i)
    records.push_back(test::rawExample(4, 4, 1, i + 1));
  std::string bytes;
  for (const auto &r : records)
    appendTfRecord(bytes, r);
  badOffset = bytes.size();
  appendTfRecord(bytes, bad);
  appendTfRecord(bytes, test::rawExample(4, 4, 1, 5));
  appendTfRecord(bytes, test::rawExample(4, 4, 1, 6));
  std::string path = dir.path() + "/train-00000-of-00001";
  test::writeFile(path, bytes);
  return path;
}

void expectNamed(const Drained &d, const std::string &path, uint64_t index,
                 uint64_t offset, const std::string &what) {
  ASSERT_FALSE(d.error.ok());
  EXPECT_EQ(d.error.code(), KILN_RT_STATUS_DATA_LOSS) << d.error.message();
  std::string want = path + ": record " + std::to_string(index) +
                     " at byte offset " + std::to_string(offset);
  EXPECT_NE(d.error.message().find(want), std::string::npos)
      << d.error.message() << "\nwanted: " << want;
  EXPECT_NE(d.error.message().find(what), std::string::npos)
      << d.error.message() << "\nwanted: " << what;
}

TEST(PipelineErrors, MissingKey) {
  TempDir dir;
  uint64_t off;
  std::string bad = ExampleBuilder().addInt64("image/class/label", 1).build();
  std::string path = shardWithBadRecord(dir, bad, off);
  Drained d;
  drain(test::rawConfig(dir.path(), 4, 2), d);
  expectNamed(d, path, 4, off, "missing feature 'image/encoded'");
}

TEST(PipelineErrors, NonJpegPayload) {
  TempDir dir;
  uint64_t off;
  std::string bad = ExampleBuilder()
                        .addBytes("image/encoded", "\x89PNG\r\n\x1a\n rest")
                        .addInt64("image/class/label", 1)
                        .build();
  std::string path = shardWithBadRecord(dir, bad, off);
  Drained d;
  drain(test::rawConfig(dir.path(), 4, 2), d);
  expectNamed(d, path, 4, off, "not a JPEG");
}

TEST(PipelineErrors, CrcMismatch) {
  TempDir dir;
  uint64_t off;
  std::string path = shardWithBadRecord(dir, test::rawExample(4, 4, 1, 9), off);
  std::string bytes = test::readFileBytes(path);
  bytes[off + 12 + 5] ^= 0x20;
  test::writeFile(path, bytes);
  Drained d;
  drain(test::rawConfig(dir.path(), 4, 2), d);
  expectNamed(d, path, 4, off, "data CRC mismatch");
}

TEST(PipelineErrors, TruncatedFile) {
  TempDir dir;
  uint64_t off;
  std::string path = shardWithBadRecord(dir, test::rawExample(4, 4, 1, 9), off);
  std::string bytes = test::readFileBytes(path);
  test::writeFile(path, bytes.substr(0, off + 20));
  Drained d;
  drain(test::rawConfig(dir.path(), 4, 2), d);
  expectNamed(d, path, 4, off, "truncated");
}

TEST(PipelineErrors, CorruptJpegDataFoundByAWorker) {
  TempDir dir;
  const int w = 96, h = 64;
  std::string jpeg = test::encodeJpeg(test::photoPattern(w, h, 4), w, h, 3, 90);
  // Keep the headers (readable), cut the entropy-coded data.
  std::string cut = jpeg.substr(0, jpeg.size() * 2 / 3);
  std::vector<std::string> records = {
      test::jpegExample(jpeg, 1, w, h), test::jpegExample(cut, 2, w, h),
      test::jpegExample(jpeg, 3, w, h), test::jpegExample(jpeg, 4, w, h)};
  std::string path = dir.path() + "/train-00000-of-00001";
  test::writeRecords(path, records);
  uint64_t off = 16 + records[0].size();
  kiln_rt_dataset_config_t c;
  kiln_rt_dataset_config_init(&c);
  c.path = dir.path().c_str();
  c.batch_size = 2;
  c.height = c.width = 32;
  c.shuffle = 0;
  c.augment = KILN_RT_AUGMENT_NONE;
  c.log_skipped = 0;
  Drained d;
  drain(c, d);
  expectNamed(d, path, 1, off, "Premature end of JPEG file");

  // Skipping: the bad example is replaced by the next good one of its batch.
  c.skip_bad_records = 1;
  Drained s;
  drain(c, s);
  ASSERT_TRUE(s.error.ok()) << s.error.message();
  EXPECT_EQ(s.stats.records_skipped, 1u);
  EXPECT_EQ(s.labels, (std::vector<int32_t>{0, 0, 2, 3}));
  EXPECT_EQ(s.images[0].substr(0, s.images[0].size() / 2),
            s.images[0].substr(s.images[0].size() / 2));
}

TEST(PipelineErrors, MissingDirectoryAndNoShards) {
  const std::string missing = "/nonexistent/kiln/data"; // outlives the config
  auto c = test::rawConfig(missing, 4, 2);
  Drained d;
  drain(c, d);
  EXPECT_EQ(d.error.code(), KILN_RT_STATUS_NOT_FOUND);
  EXPECT_NE(d.error.message().find("/nonexistent/kiln/data"), std::string::npos)
      << d.error.message();
  TempDir empty;
  test::writeFile(empty.path() + "/README", "not a shard");
  auto c2 = test::rawConfig(empty.path(), 4, 2);
  Drained e;
  drain(c2, e);
  EXPECT_EQ(e.error.code(), KILN_RT_STATUS_NOT_FOUND);
  EXPECT_NE(e.error.message().find("no files named train-NNNNN-of-NNNNN in " +
                                   empty.path()),
            std::string::npos)
      << e.error.message();
}

TEST(PipelineErrors, ErrorIsStickyAndEarlierBatchesArrive) {
  TempDir dir;
  uint64_t off;
  std::string bad = ExampleBuilder().addInt64("image/class/label", 1).build();
  shardWithBadRecord(dir, bad, off);
  auto c = test::rawConfig(dir.path(), 4, 2);
  c.shuffle = 0;
  kiln_rt_dataset_t *ds = nullptr;
  CStatus st{kiln_rt_dataset_open(&c, &ds)};
  ASSERT_TRUE(st.ok());
  kiln_rt_batch_t b;
  for (int i = 0; i < 2; ++i) { // records 0-3 come before the bad one
    CStatus s{kiln_rt_dataset_next_batch(ds, &b)};
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(b.size, 2u);
  }
  CStatus e1{kiln_rt_dataset_next_batch(ds, &b)};
  CStatus e2{kiln_rt_dataset_next_batch(ds, &b)};
  EXPECT_EQ(e1.code(), KILN_RT_STATUS_DATA_LOSS);
  EXPECT_EQ(e1.message(), e2.message());
  kiln_rt_dataset_close(ds);
}

TEST(PipelineErrors, SkipBadRecordsCountsThem) {
  TempDir dir;
  // File 0: records 0..5 with a missing key at 1, a non-JPEG at 3 and a data
  // CRC mismatch at 4. File 1: 4 good records, then a truncated tail.
  std::vector<std::string> recs;
  for (int i = 0; i < 6; ++i)
    recs.push_back(test::rawExample(4, 4, 1, 100 + i));
  recs[1] = ExampleBuilder().addInt64("image/class/label", 1).build();
  recs[3] = ExampleBuilder()
                .addBytes("image/encoded", "GIF89a....")
                .addInt64("image/class/label", 1)
                .build();
  std::string bytes;
  for (const auto &r : recs)
    appendTfRecord(bytes, r);
  size_t off4 = 0;
  for (int i = 0; i < 4; ++i)
    off4 += 16 + recs[i].size();
  bytes[off4 + 12 + 3] ^= 0x40;
  test::writeFile(dir.path() + "/train-00000-of-00002", bytes);
  std::string second;
  for (int i = 0; i < 4; ++i)
    appendTfRecord(second, test::rawExample(4, 4, 2, 200 + i));
  std::string tail;
  appendTfRecord(tail, test::rawExample(4, 4, 2, 299));
  second += tail.substr(0, tail.size() - 3);
  test::writeFile(dir.path() + "/train-00001-of-00002", second);

  auto c = test::rawConfig(dir.path(), 4, 1);
  c.skip_bad_records = 1;
  c.shuffle = 0;
  c.interleave = 1;
  Drained d;
  drain(c, d);
  ASSERT_TRUE(d.error.ok()) << d.error.message();
  EXPECT_EQ(d.stats.records_skipped, 4u);
  EXPECT_EQ(d.labels, (std::vector<int32_t>{99, 101, 104, 199, 200, 201, 202}));

  // Without skipping, the first bad record stops the run.
  c.skip_bad_records = 0;
  Drained strict;
  drain(c, strict);
  expectNamed(strict, dir.path() + "/train-00000-of-00002", 1,
              16 + recs[0].size(), "missing feature 'image/encoded'");
}

TEST(PipelineErrors, InvalidConfigsAreRejected) {
  TempDir dir;
  writeRawShards(dir.path(), 1, 4);
  auto base = test::rawConfig(dir.path(), 4, 2);
  struct Case {
    const char *what;
    void (*mutate)(kiln_rt_dataset_config_t &);
  };
  const Case cases[] = {
      {"batch_size", [](kiln_rt_dataset_config_t &c) { c.batch_size = 0; }},
      {"channels", [](kiln_rt_dataset_config_t &c) { c.channels = 2; }},
      {"std[0]", [](kiln_rt_dataset_config_t &c) { c.std[0] = 0; }},
      {"abi_version",
       [](kiln_rt_dataset_config_t &c) { c.abi_version = 7u << 16; }},
      {"num_workers", [](kiln_rt_dataset_config_t &c) { c.num_workers = 0; }},
      {"min_area", [](kiln_rt_dataset_config_t &c) { c.min_area = 0; }},
      {"layout",
       [](kiln_rt_dataset_config_t &c) {
         c.layout = static_cast<kiln_rt_layout_t>(9);
       }},
  };
  for (const Case &k : cases) {
    auto c = base;
    k.mutate(c);
    kiln_rt_dataset_t *ds = nullptr;
    CStatus s{kiln_rt_dataset_open(&c, &ds)};
    EXPECT_EQ(s.code(), KILN_RT_STATUS_INVALID_ARGUMENT) << k.what;
    EXPECT_NE(s.message().find(k.what), std::string::npos) << s.message();
    EXPECT_EQ(ds, nullptr);
  }
  CStatus nullArgs{kiln_rt_dataset_open(nullptr, nullptr)};
  EXPECT_EQ(nullArgs.code(), KILN_RT_STATUS_INVALID_ARGUMENT);
}

TEST(Abi, VersionAndStatusBasics) {
  EXPECT_EQ(kiln_rt_abi_version(), KILN_RT_ABI_VERSION);
  EXPECT_EQ(kiln_rt_abi_version() >> 16, uint32_t(KILN_RT_ABI_VERSION_MAJOR));
  EXPECT_STREQ(kiln_rt_status_message(nullptr), "OK");
  EXPECT_EQ(kiln_rt_status_code(nullptr), KILN_RT_STATUS_OK);
  kiln_rt_status_free(nullptr);
  kiln_rt_dataset_close(nullptr);
}

} // namespace
} // namespace kiln::rt
