//===- data_checks_test.cpp - The pipeline never trains on garbage --------===//
//
// Labels against the convention and the model's classes, strict JPEG
// decoding, declared image sizes, record counting, compressed TFRecord files,
// exact epochs under skip mode, the eval recipe, and `kiln-data inspect`.
// Every error is checked for the file, record, offset and value it names.
//
//===----------------------------------------------------------------------===//
#include "test_util.h"

#include "kiln/rt/image.h"
#include "kiln/rt/inspect.h"
#include "kiln/rt/pipeline.h"

#include <chrono>
#include <climits>

namespace kiln::rt {
namespace {

using test::CStatus;
using test::Drained;
using test::TempDir;
using test::drain;
using test::expectContains;
using test::where;

/// Raw 4x4 records with the given stored labels; returns each header offset.
std::vector<uint64_t> writeLabels(const std::string &path,
                                  const std::vector<int64_t> &labels) {
  std::string bytes;
  std::vector<uint64_t> offsets;
  for (int64_t l : labels) {
    offsets.push_back(bytes.size());
    appendTfRecord(bytes, test::rawExample(4, 4, 7, l));
  }
  test::writeFile(path, bytes);
  return offsets;
}

//===----------------------------------------------------------------------===//
// Labels
//===----------------------------------------------------------------------===//

TEST(Labels, ZeroBasedDataIsRefusedWithTheConventionNamed) {
  TempDir dir;
  std::string path = dir.path() + "/train-00000-of-00001";
  std::vector<int64_t> stored = {3, 7, 0, 9, 1, 2, 4, 5, 6, 8};
  auto offsets = writeLabels(path, stored);
  auto c = test::rawConfig(dir.path(), 4, 2);
  c.shuffle = 0;
  c.num_classes = 10; // label_offset stays 1, the default
  Drained strict;
  drain(c, strict);
  ASSERT_FALSE(strict.error.ok());
  EXPECT_EQ(strict.error.code(), KILN_RT_STATUS_DATA_LOSS);
  std::string m = strict.error.message();
  expectContains(m, where(path, 2, offsets[2]));
  expectContains(m, "image/class/label 0 with label offset 1 is class -1, but "
                    "the model has classes 0..9 (stored labels 1..10 under "
                    "this offset)");
  expectContains(m, "the data looks 0-based: pass --label-offset 0");

  c.label_offset = 0;
  Drained ok;
  drain(c, ok);
  ASSERT_TRUE(ok.error.ok()) << ok.error.message();
  EXPECT_EQ(ok.labels, (std::vector<int32_t>{3, 7, 0, 9, 1, 2, 4, 5, 6, 8}));
}

TEST(Labels, OutOfRangeOneBasedAndInt32Overflow) {
  auto big = checkLabel(5000, 1, 10);
  ASSERT_FALSE(big.isOk());
  expectContains(big.status().message(),
                 "image/class/label 5000 with label offset 1 is class 4999, "
                 "but the model has classes 0..9");
  EXPECT_EQ(big.status().message().find("looks"), std::string::npos);
  // 1-based data read as 0-based: 10 is one past the classes.
  auto oneBased = checkLabel(10, 0, 10);
  ASSERT_FALSE(oneBased.isOk());
  expectContains(oneBased.status().message(),
                 "the data looks 1-based: pass --label-offset 1");
  // Unchecked range (num_classes 0), but never past int32.
  auto wide = checkLabel(int64_t(1) << 31, 0, 0);
  ASSERT_FALSE(wide.isOk());
  expectContains(wide.status().message(),
                 "image/class/label 2147483648 minus the label offset 0 does "
                 "not fit int32");
  auto lowest = checkLabel(INT64_MIN, 1, 0);
  ASSERT_FALSE(lowest.isOk());
  expectContains(lowest.status().message(), "does not fit int32");
  auto fits = checkLabel(int64_t(1) << 31, 1, 0);
  ASSERT_TRUE(fits.isOk());
  EXPECT_EQ(*fits, INT32_MAX);
  EXPECT_EQ(*checkLabel(10, 1, 10), 9);
}

TEST(Labels, OutOfRangeIsSkippedAndCountedUnderSkipMode) {
  TempDir dir;
  std::string path = dir.path() + "/train-00000-of-00001";
  auto offsets = writeLabels(path, {1, 2, 5000, 3, int64_t(1) << 40, 4});
  auto c = test::rawConfig(dir.path(), 4, 1);
  c.shuffle = 0;
  c.num_classes = 10;
  c.skip_bad_records = 1;
  Drained run;
  drain(c, run);
  ASSERT_TRUE(run.error.ok()) << run.error.message();
  EXPECT_EQ(run.labels, (std::vector<int32_t>{0, 1, 2, 3}));
  EXPECT_EQ(run.stats.records_skipped, 2u);
  ASSERT_FALSE(run.epochStats.empty());
  EXPECT_EQ(run.epochStats.back().records_skipped, 2u);
  expectContains(run.firstSkipped.back(), where(path, 2, offsets[2]));
}

//===----------------------------------------------------------------------===//
// Strict JPEG decoding
//===----------------------------------------------------------------------===//

/// Offset of the first byte of entropy-coded data (after the SOS segment).
size_t scanStart(const std::string &jpeg) {
  size_t sos = jpeg.find("\xff\xda");
  EXPECT_NE(sos, std::string::npos);
  size_t len = (uint8_t(jpeg[sos + 2]) << 8) | uint8_t(jpeg[sos + 3]);
  return sos + 2 + len;
}

std::string photoJpeg(int w, int h) {
  return test::encodeJpeg(test::photoPattern(w, h, 11), w, h, 3, 90,
                          TJSAMP_420);
}

/// A marker (FF D3, a restart marker in a stream without restarts) a third
/// of the way into the scan.
std::string withStrayMarker(std::string jpeg) {
  size_t s = scanStart(jpeg);
  size_t at = s + (jpeg.size() - 2 - s) / 3;
  jpeg[at] = '\xff';
  jpeg[at + 1] = '\xd3';
  return jpeg;
}

/// 24 one-bits (FF 00 is a stuffed FF): no Huffman code is that long.
std::string withBadHuffmanCode(std::string jpeg) {
  size_t s = scanStart(jpeg);
  size_t at = s + (jpeg.size() - 2 - s) / 3;
  for (int i = 0; i < 3; ++i)
    jpeg.replace(at + 2 * i, 2, std::string("\xff\x00", 2));
  return jpeg;
}

TEST(StrictJpeg, CorruptScanDataIsAnErrorOnEveryPath) {
  const int w = 160, h = 120;
  std::string good = photoJpeg(w, h);
  const CropBox crop{8, 8, w - 16, h - 16}; // crosses the damage
  struct Case {
    std::string jpeg;
    const char *message;
  } cases[] = {
      {withStrayMarker(good),
       "corrupt JPEG: Corrupt JPEG data: premature end of data segment"},
      {withBadHuffmanCode(good), "corrupt JPEG: Corrupt JPEG data: bad Huffman "
                                 "code"},
  };
  for (const Case &k : cases) {
    ASSERT_TRUE(readJpegInfo(k.jpeg).isOk()); // the header is intact
    for (JpegDecodeMode mode : {JpegDecodeMode::kCropOnly, JpegDecodeMode::kFull})
      for (const CropBox *box : {&crop, static_cast<const CropBox *>(nullptr)}) {
        ImageU8 img;
        Status s = decodeJpeg(k.jpeg, box, 3, mode, img);
        EXPECT_EQ(s.code(), StatusCode::kDataLoss) << k.message;
        expectContains(s.message(), k.message);
      }
  }
  // A crop entirely above the damage decodes: its pixels are intact.
  ImageU8 top;
  CropBox above{0, 0, w, 16};
  EXPECT_TRUE(decodeJpeg(withStrayMarker(good), &above, 3,
                         JpegDecodeMode::kCropOnly, top)
                  .isOk());
}

TEST(StrictJpeg, PipelineNamesTheRecordAndSkipsIt) {
  TempDir dir;
  const int w = 96, h = 64;
  std::string good = photoJpeg(w, h);
  std::vector<std::string> records = {
      test::jpegExample(good, 1, w, h),
      test::jpegExample(withBadHuffmanCode(good), 2, w, h),
      test::jpegExample(good, 3, w, h), test::jpegExample(good, 4, w, h)};
  std::string path = dir.path() + "/train-00000-of-00001";
  test::writeRecords(path, records);
  kiln_rt_dataset_config_t c;
  kiln_rt_dataset_config_init(&c);
  c.path = dir.path().c_str();
  c.batch_size = 2;
  c.height = c.width = 32;
  c.shuffle = 0;
  c.augment = KILN_RT_AUGMENT_CENTER_CROP;
  c.log_skipped = 0;
  Drained strict;
  drain(c, strict);
  ASSERT_FALSE(strict.error.ok());
  expectContains(strict.error.message(),
                 where(path, 1, 16 + records[0].size()) +
                     ": corrupt JPEG: Corrupt JPEG data: bad Huffman code");
  c.skip_bad_records = 1;
  Drained skip;
  drain(c, skip);
  ASSERT_TRUE(skip.error.ok()) << skip.error.message();
  EXPECT_EQ(skip.stats.records_skipped, 1u);
  EXPECT_EQ(skip.labels, (std::vector<int32_t>{0, 0, 2, 3}));
  EXPECT_EQ(skip.epochStats.back().records_repeated, 1u);
}

//===----------------------------------------------------------------------===//
// Declared image sizes
//===----------------------------------------------------------------------===//

/// The JPEG with its SOF0 frame size replaced.
std::string withDeclaredSize(std::string jpeg, int width, int height) {
  size_t sof = jpeg.find("\xff\xc0");
  EXPECT_NE(sof, std::string::npos);
  jpeg[sof + 5] = static_cast<char>(height >> 8);
  jpeg[sof + 6] = static_cast<char>(height & 0xff);
  jpeg[sof + 7] = static_cast<char>(width >> 8);
  jpeg[sof + 8] = static_cast<char>(width & 0xff);
  return jpeg;
}

TEST(ImageSize, DeclaredSizeMustMatchTheRecordAndStayUnderTheCap) {
  std::string bomb = withDeclaredSize(
      test::encodeJpeg(test::photoPattern(16, 16, 1), 16, 16, 3, 90), 65500,
      65500);
  TransformOptions options;
  Example example;
  RecordImage image;
  auto start = std::chrono::steady_clock::now();
  Status mismatch = inspectRecord(test::jpegExample(bomb, 1, 16, 16), options,
                                  example, image);
  EXPECT_EQ(mismatch.code(), StatusCode::kDataLoss);
  expectContains(mismatch.message(),
                 "the JPEG declares 65500x65500 (width x height) in its SOF, "
                 "but image/width x image/height say 16x16");
  // Without the size keys the cap stops it.
  std::string bare = ExampleBuilder()
                         .addBytes(keys::kEncoded, bomb)
                         .addInt64(keys::kLabel, 1)
                         .build();
  Status capped = inspectRecord(bare, options, example, image);
  EXPECT_EQ(capped.code(), StatusCode::kDataLoss);
  expectContains(capped.message(),
                 "the JPEG declares 65500x65500 = 4290250000 pixels, more "
                 "than max_image_pixels 67108864");
  // Nothing was decoded: the checks read the header only.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  // A worker that decodes checks the same, before decoding.
  ExampleTransform transform(options);
  std::vector<float> out(224 * 224 * 3);
  int32_t label;
  Status applied = transform.apply(bare, 0, out.data(), label);
  expectContains(applied.message(), "more than max_image_pixels");

  // Raw images: the same cap (their size already must match the bytes).
  options.maxImagePixels = 15;
  Status raw = inspectRecord(test::rawExample(4, 4, 1, 1), options, example,
                             image);
  expectContains(raw.message(), "the raw image is 4x4 = 16 pixels, more than "
                                "max_image_pixels 15");
  Status rawSize = inspectRecord(
      ExampleBuilder()
          .addBytes(keys::kEncoded, std::string(15, 'x'))
          .addBytes(keys::kFormat, kRawFormat)
          .addInt64(keys::kLabel, 1)
          .addInt64(keys::kHeight, 4)
          .addInt64(keys::kWidth, 4)
          .addInt64(keys::kChannels, 1)
          .build(),
      TransformOptions(), example, image);
  expectContains(rawSize.message(), "raw image of 4x4x1 needs 16 bytes but "
                                    "image/encoded holds 15");
}

TEST(ImageSize, PipelineNamesTheRecord) {
  TempDir dir;
  std::string jpeg = test::encodeJpeg(test::photoPattern(16, 16, 1), 16, 16, 3,
                                      90);
  std::vector<std::string> records = {
      test::jpegExample(jpeg, 1, 16, 16),
      test::jpegExample(withDeclaredSize(jpeg, 65500, 65500), 2, 16, 16)};
  std::string path = dir.path() + "/train-00000-of-00001";
  test::writeRecords(path, records);
  auto c = test::rawConfig(dir.path(), 16, 1);
  c.channels = 3;
  c.shuffle = 0;
  Drained run;
  drain(c, run);
  ASSERT_FALSE(run.error.ok());
  expectContains(run.error.message(),
                 where(path, 1, 16 + records[0].size()) +
                     ": the JPEG declares 65500x65500");
}

//===----------------------------------------------------------------------===//
// Counting and compressed files
//===----------------------------------------------------------------------===//

/// The whole file as one stream, as TensorFlow's ZlibOutputBuffer writes it
/// (window bits 15 for ZLIB, 15 + 16 for GZIP).
std::string framed(const std::vector<std::string> &records) {
  std::string bytes;
  for (const auto &r : records)
    appendTfRecord(bytes, r);
  return bytes;
}

TEST(Counting, VerifiesLengthCrcsAndNamesTheRecord) {
  TempDir dir;
  std::vector<std::string> records;
  for (int i = 0; i < 5; ++i)
    records.push_back(std::string(100 + i, char('a' + i)));
  std::string bytes = framed(records);
  std::string path = dir.path() + "/train-00000-of-00001";
  test::writeFile(path, bytes);
  auto good = countTfRecords(path, false);
  ASSERT_TRUE(good.isOk()) << good.status().toString();
  EXPECT_EQ(good->records, 5u);

  // A flipped length byte of record 2: once a seek far past the end.
  uint64_t off2 = 16 * 2 + 100 + 101;
  std::string flipped = bytes;
  flipped[off2 + 1] ^= 0x10;
  test::writeFile(path, flipped);
  auto bad = countTfRecords(path, false);
  ASSERT_FALSE(bad.isOk());
  EXPECT_EQ(bad.status().code(), StatusCode::kDataLoss);
  expectContains(bad.status().message(),
                 where(path, 2, off2) + ": length CRC mismatch");
  // Skip mode: the count ends there, as the pipeline's reading does.
  auto partial = countTfRecords(path, true);
  ASSERT_TRUE(partial.isOk());
  EXPECT_EQ(partial->records, 2u);
  expectContains(partial->stoppedBy.message(), where(path, 2, off2));

  // Truncation inside record 4.
  test::writeFile(path, bytes.substr(0, bytes.size() - 10));
  auto cut = countTfRecords(path, false);
  ASSERT_FALSE(cut.isOk());
  expectContains(cut.status().message(),
                 where(path, 4, bytes.size() - 16 - 104) + ": truncated");
}

TEST(Compression, GzipAndZlibFilesAreDetectedReadAndCounted) {
  TempDir dir;
  std::vector<std::string> records;
  for (int i = 0; i < 40; ++i)
    records.push_back(test::rawExample(4, 4, uint8_t(i), i + 1));
  std::string plain = framed(records);
  EXPECT_EQ(detectTfRecordCompression(plain), TfRecordCompression::kNone);
  for (TfRecordCompression kind :
       {TfRecordCompression::kGzip, TfRecordCompression::kZlib}) {
    SCOPED_TRACE(compressionName(kind));
    std::string packed = test::compress(plain, kind);
    EXPECT_EQ(detectTfRecordCompression(packed), kind);
    std::string path = dir.path() + "/train-00000-of-00001";
    test::writeFile(path, packed);
    auto count = countTfRecords(path, false);
    ASSERT_TRUE(count.isOk()) << count.status().toString();
    EXPECT_EQ(count->records, 40u);
    auto reader = RecordReader::openFile(path);
    ASSERT_TRUE(reader.isOk());
    EXPECT_EQ((*reader)->compression(), kind);
    std::string record;
    for (const auto &want : records) {
      ASSERT_TRUE((*reader)->next(record).isOk());
      EXPECT_EQ(record, want);
    }
    EXPECT_EQ((*reader)->next(record).code(), StatusCode::kOutOfRange);
    // And through the whole pipeline.
    auto c = test::rawConfig(dir.path(), 4, 8);
    c.shuffle = 0;
    Drained run;
    drain(c, run);
    ASSERT_TRUE(run.error.ok()) << run.error.message();
    ASSERT_EQ(run.labels.size(), 40u);
    EXPECT_EQ(run.labels[39], 39);
  }
  // An empty file is an empty uncompressed file.
  EXPECT_EQ(detectTfRecordCompression(""), TfRecordCompression::kNone);
}

TEST(Compression, CorruptAndTruncatedStreamsNameFileAndOffset) {
  TempDir dir;
  std::vector<std::string> records;
  for (int i = 0; i < 30; ++i)
    records.push_back(test::rawExample(8, 8, uint8_t(7 * i), i + 1));
  std::string plain = framed(records);
  std::string path = dir.path() + "/train-00000-of-00001";
  std::string gz = test::compress(plain, TfRecordCompression::kGzip);
  std::string zl = test::compress(plain, TfRecordCompression::kZlib);
  auto readAll = [&](const std::string &bytes) {
    test::writeFile(path, bytes);
    auto reader = RecordReader::openFile(path);
    EXPECT_TRUE(reader.isOk());
    std::string record;
    Status s;
    int n = 0;
    while ((s = (*reader)->next(record)).isOk())
      ++n;
    return std::make_pair(s, n);
  };
  // The first deflate block made reserved (type 3): byte 10 follows the
  // 10-byte gzip header, byte 2 the 2-byte zlib header.
  std::string badGz = gz;
  badGz[10] |= 0x06;
  auto [s1, n1] = readAll(badGz);
  EXPECT_EQ(n1, 0);
  EXPECT_EQ(s1.code(), StatusCode::kDataLoss);
  expectContains(s1.message(), where(path, 0, 0) +
                                   ": corrupt GZIP stream (invalid block "
                                   "type) at uncompressed byte offset 0");
  std::string badZl = zl;
  badZl[2] |= 0x06;
  auto [s2, n2] = readAll(badZl);
  expectContains(s2.message(), "corrupt ZLIB stream (invalid block type)");
  // A wrong CRC32 in the gzip trailer: zlib checks it as the last record's
  // bytes come out, so that record fails, at the uncompressed size.
  std::string badCheck = gz;
  badCheck[gz.size() - 8] ^= 1;
  auto [s3, n3] = readAll(badCheck);
  EXPECT_EQ(n3, 29);
  expectContains(s3.message(), where(path, 29,
                                     plain.size() - 16 - records[29].size()) +
                                   ": corrupt GZIP stream (incorrect data "
                                   "check) at uncompressed byte offset " +
                                   std::to_string(plain.size()));
  // Truncated: the stream stops inside a record.
  auto [s4, n4] = readAll(gz.substr(0, gz.size() / 2));
  EXPECT_LT(n4, 30);
  expectContains(s4.message(), "the GZIP stream ends before its end marker");
  expectContains(s4.message(), where(path, n4, 0).substr(0, path.size() + 9));
  // Counting reports the same, and stops there under skip mode.
  test::writeFile(path, gz.substr(0, gz.size() / 2));
  auto count = countTfRecords(path, false);
  ASSERT_FALSE(count.isOk());
  expectContains(count.status().message(), "the GZIP stream ends before");
  auto partial = countTfRecords(path, true);
  ASSERT_TRUE(partial.isOk());
  EXPECT_EQ(partial->records, uint64_t(n4));
}

//===----------------------------------------------------------------------===//
// Exact epochs (batches_per_epoch)
//===----------------------------------------------------------------------===//

TEST(BatchesPerEpoch, ShortEpochsAreFilledAndTheSkipsReported) {
  TempDir dir;
  // 12 records: 2 with a bad label (class 50 of 10), 1 with a data CRC
  // mismatch. The framing count gives 12 / 2 = 6 batches per epoch.
  std::vector<int64_t> stored = {1, 2, 50, 3, 4, 5, 6, 50, 7, 8, 9, 10};
  std::string path = dir.path() + "/train-00000-of-00001";
  auto offsets = writeLabels(path, stored);
  std::string bytes = test::readFileBytes(path);
  bytes[offsets[5] + 12 + 3] ^= 0x40;
  test::writeFile(path, bytes);
  auto count = countTfRecords(path, true);
  ASSERT_TRUE(count.isOk());
  ASSERT_EQ(count->records, 12u);

  auto c = test::rawConfig(dir.path(), 4, 2);
  c.shuffle = 0;
  c.num_classes = 10;
  c.skip_bad_records = 1;
  c.batches_per_epoch = count->records / 2;
  c.num_epochs = 2;
  Drained run;
  drain(c, run);
  ASSERT_TRUE(run.error.ok()) << run.error.message();
  EXPECT_EQ(run.epochs, (std::vector<uint32_t>{0, 0, 0, 0, 0, 0, 1, 1, 1, 1,
                                               1, 1}));
  EXPECT_EQ(run.indices, (std::vector<uint64_t>{0, 1, 2, 3, 4, 5, 0, 1, 2, 3,
                                                4, 5}));
  // 9 good examples, then the last two repeated in order, three times over.
  std::vector<int32_t> epoch = {0, 1, 2, 3, 5, 6, 7, 8, 9, 8, 9, 8};
  std::vector<int32_t> want = epoch;
  want.insert(want.end(), epoch.begin(), epoch.end());
  EXPECT_EQ(run.labels, want);
  for (size_t b : {5u, 11u}) {
    const auto &es = run.epochStats[b];
    EXPECT_EQ(es.complete, 1u);
    EXPECT_EQ(es.batches, 6u);
    EXPECT_EQ(es.records_skipped, 3u);
    EXPECT_EQ(es.records_repeated, 3u);
    expectContains(run.firstSkipped[b], where(path, 2, offsets[2]));
  }
  EXPECT_EQ(run.epochStats[4].complete, 0u);
  EXPECT_EQ(run.stats.records_skipped, 6u);

  // Without skip mode the first bad record is the error, as always; a
  // batches_per_epoch beyond the data is one too.
  c.skip_bad_records = 0;
  c.num_classes = 0;
  c.batches_per_epoch = 7;
  writeLabels(path, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  Drained tooMany;
  drain(c, tooMany);
  ASSERT_FALSE(tooMany.error.ok());
  expectContains(tooMany.error.message(),
                 "gave 12 records, fewer than the 7 batches of 2 "
                 "(batches_per_epoch) need");
  EXPECT_EQ(tooMany.labels.size(), 12u); // the batches before still arrive
}

TEST(BatchesPerEpoch, AnEpochStopsEarlyWhenTheRankHasMore) {
  TempDir dir;
  writeLabels(dir.path() + "/train-00000-of-00001",
              {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  auto c = test::rawConfig(dir.path(), 4, 2);
  c.shuffle = 0;
  c.batches_per_epoch = 3;
  c.num_epochs = 2;
  Drained run;
  drain(c, run);
  ASSERT_TRUE(run.error.ok()) << run.error.message();
  EXPECT_EQ(run.labels,
            (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(run.epochStats[2].complete, 1u);
  EXPECT_EQ(run.epochStats[2].records_skipped, 0u);
}

TEST(BatchesPerEpoch, AnEpochWithoutGoodRecordsIsAnError) {
  TempDir dir;
  writeLabels(dir.path() + "/train-00000-of-00001", {70, 80, 90, 99});
  auto c = test::rawConfig(dir.path(), 4, 2);
  c.num_classes = 10;
  c.skip_bad_records = 1;
  c.batches_per_epoch = 2;
  Drained run;
  drain(c, run);
  ASSERT_FALSE(run.error.ok());
  expectContains(run.error.message(),
                 "no usable records in epoch 0 of the 1 train files");
}

//===----------------------------------------------------------------------===//
// The eval recipe and the ABI
//===----------------------------------------------------------------------===//

TEST(EvalAugment, FollowsTheImageFormat) {
  const int w = 120, h = 90;
  std::string jpeg = photoJpeg(w, h);
  std::string jpegRecord = test::jpegExample(jpeg, 1, w, h);
  TransformOptions o;
  o.height = o.width = 32;
  o.flip = true; // ignored by the eval recipe
  std::vector<float> eval(32 * 32 * 3), center(32 * 32 * 3);
  int32_t label;
  o.augment = KILN_RT_AUGMENT_EVAL;
  ASSERT_TRUE(ExampleTransform(o).apply(jpegRecord, 5, eval.data(), label)
                  .isOk());
  o.augment = KILN_RT_AUGMENT_CENTER_CROP;
  ASSERT_TRUE(ExampleTransform(o).apply(jpegRecord, 9, center.data(), label)
                  .isOk());
  EXPECT_EQ(eval, center);

  // A JPEG already of the output size is taken whole, not cropped and
  // enlarged (a small-image data set stored as JPEG).
  std::string small = test::jpegExample(photoJpeg(32, 32), 1, 32, 32);
  std::vector<float> none(32 * 32 * 3);
  o.augment = KILN_RT_AUGMENT_EVAL;
  ASSERT_TRUE(ExampleTransform(o).apply(small, 5, eval.data(), label).isOk());
  o.augment = KILN_RT_AUGMENT_NONE;
  ASSERT_TRUE(ExampleTransform(o).apply(small, 9, none.data(), label).isOk());
  o.augment = KILN_RT_AUGMENT_CENTER_CROP;
  ASSERT_TRUE(ExampleTransform(o).apply(small, 9, center.data(), label).isOk());
  EXPECT_EQ(eval, none);
  EXPECT_NE(eval, center);

  // Raw: the whole image, pixels exact at the same size.
  std::string raw = test::rawExample(6, 6, 77, 1);
  o.channels = 1;
  o.height = o.width = 6;
  o.augment = KILN_RT_AUGMENT_EVAL;
  std::vector<float> whole(36);
  ASSERT_TRUE(ExampleTransform(o).apply(raw, 5, whole.data(), label).isOk());
  EXPECT_EQ(whole, std::vector<float>(36, 77.0f));
}

// --predict: a bare JPEG gives exactly the pixels of the record holding it,
// under the same checks (policy, pixel cap) with the same messages.
TEST(EvalAugment, ABareJpegIsTransformedAsItsRecord) {
  const int w = 120, h = 90;
  std::string jpeg = photoJpeg(w, h);
  TransformOptions o;
  o.height = o.width = 32;
  o.augment = KILN_RT_AUGMENT_EVAL;
  std::vector<float> fromRecord(32 * 32 * 3), fromFile(32 * 32 * 3);
  int32_t label;
  ASSERT_TRUE(ExampleTransform(o)
                  .apply(test::jpegExample(jpeg, 1, w, h), 5,
                         fromRecord.data(), label)
                  .isOk());
  ASSERT_TRUE(ExampleTransform(o).applyToImage(jpeg, fromFile.data()).isOk());
  EXPECT_EQ(fromFile, fromRecord);

  Status s = ExampleTransform(o).applyToImage("\x89PNG\r\n\x1a\nrest",
                                              fromFile.data());
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  expectContains(s.message(), "not a JPEG");
  // Gray into an RGB model: only with the policy's conversion.
  std::string gray =
      test::encodeJpeg(std::vector<uint8_t>(40 * 40, 128), 40, 40, 1, 95);
  s = ExampleTransform(o).applyToImage(gray, fromFile.data());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  expectContains(s.message(), "pass --convert-channels");
  o.convertChannels = true;
  ASSERT_TRUE(ExampleTransform(o).applyToImage(gray, fromFile.data()).isOk());
  EXPECT_NEAR(fromFile[0], 128.0f, 1.0f);
  o.maxImagePixels = 1000;
  s = ExampleTransform(o).applyToImage(jpeg, fromFile.data());
  expectContains(s.message(), "more than max_image_pixels 1000");
}

TEST(Abi, AMinorOneCallerGetsTheNewFieldsDefaults) {
  TempDir dir;
  writeLabels(dir.path() + "/train-00000-of-00001", {1, 2, 30, 40});
  auto c = test::rawConfig(dir.path(), 4, 2);
  c.shuffle = 0;
  c.abi_version = (KILN_RT_ABI_VERSION_MAJOR << 16) | 1;
  c.num_classes = 3;       // not part of a minor-1 struct: ignored
  c.max_image_pixels = 0;  // likewise (0 would be rejected)
  Drained run;
  drain(c, run);
  ASSERT_TRUE(run.error.ok()) << run.error.message();
  EXPECT_EQ(run.labels, (std::vector<int32_t>{0, 1, 29, 39}));
  c.abi_version = (KILN_RT_ABI_VERSION_MAJOR << 16) | 0x7fff;
  Drained newer;
  drain(c, newer);
  expectContains(newer.error.message(), "abi_version minor 32767 is newer");
}

//===----------------------------------------------------------------------===//
// kiln-data inspect
//===----------------------------------------------------------------------===//

TEST(Inspect, ReportsEveryBadRecordTheLabelsAndTheImages) {
  TempDir dir;
  // Shard 0: GZIP, 0-based labels 0..9. Shard 1: a data CRC mismatch at
  // record 1 and a JPEG with corrupt scan data at record 2.
  std::vector<std::string> first;
  for (int i = 0; i < 10; ++i)
    first.push_back(test::rawExample(4, 4, 1, i));
  std::string path0 = dir.path() + "/train-00000-of-00002";
  test::writeFile(path0,
                  test::compress(framed(first), TfRecordCompression::kGzip));
  const int w = 64, h = 48;
  std::string good = photoJpeg(w, h);
  std::vector<std::string> second = {
      test::jpegExample(good, 3, w, h), test::jpegExample(good, 4, w, h),
      test::jpegExample(withStrayMarker(good), 5, w, h)};
  std::string bytes = framed(second);
  uint64_t off1 = 16 + second[0].size(), off2 = off1 + 16 + second[1].size();
  bytes[off1 + 12 + 40] ^= 1;
  std::string path1 = dir.path() + "/train-00001-of-00002";
  test::writeFile(path1, bytes);

  InspectOptions options;
  options.path = dir.path();
  options.decode = 13; // every record
  InspectReport report;
  ASSERT_TRUE(inspectData(options, report).isOk());
  EXPECT_EQ(report.records, 13u);
  ASSERT_EQ(report.files.size(), 2u);
  EXPECT_EQ(report.files[0].compression, TfRecordCompression::kGzip);
  EXPECT_EQ(report.labels.min, 0);
  EXPECT_EQ(report.labels.max, 9);
  ASSERT_EQ(report.problems.size(), 2u);
  expectContains(report.problems[0], where(path1, 1, off1) +
                                         ": data CRC mismatch");
  expectContains(report.problems[1],
                 where(path1, 2, off2) + ": corrupt JPEG: Corrupt JPEG data: "
                                         "premature end of data segment");
  std::string text = formatInspectReport(options, report);
  expectContains(text, "labels: stored image/class/label 0..9 over 12 records");
  expectContains(text, "the data looks 0-based; train with --label-offset 0");
  expectContains(text, "image/class/label");
  expectContains(text, "images: 10 raw, width 4..4, height 4..4");
  expectContains(text, "images: 2 JPEG, width 64..64");
  expectContains(text, "FAILED: 2 bad records among 13 in 2 files");

  // The tool: exit status 1 with the report, 0 on the good shard alone.
  std::string exe = KILN_DATA_EXE;
  EXPECT_EQ(std::system((exe + " inspect " + dir.path() +
                         " --decode 5 > /dev/null")
                            .c_str()),
            1 << 8);
  EXPECT_EQ(std::system((exe + " inspect " + path0 +
                         " --label-offset 0 --classes 10 > /dev/null")
                            .c_str()),
            0);
  // --classes with the default offset: label 0 is out of range.
  EXPECT_EQ(std::system((exe + " inspect " + path0 +
                         " --classes 10 > /dev/null")
                            .c_str()),
            1 << 8);
}

/// A raw Example of the given pixels (kiln-data idx's form, any channels).
std::string rawPixelsExample(int height, int width, int channels,
                             const std::string &pixels, int64_t label) {
  return ExampleBuilder()
      .addBytes(keys::kEncoded, pixels)
      .addBytes(keys::kFormat, kRawFormat)
      .addInt64(keys::kLabel, label)
      .addInt64(keys::kHeight, height)
      .addInt64(keys::kWidth, width)
      .addInt64(keys::kChannels, channels)
      .addBytes(keys::kFilename, "raw" + std::to_string(label))
      .build();
}

std::string netpbm(const char *magic, int width, int height,
                   const std::string &pixels) {
  return std::string(magic) + "\n" + std::to_string(width) + " " +
         std::to_string(height) + "\n255\n" + pixels;
}

TEST(Inspect, DumpWritesWhatThePipelineDecodes) {
  TempDir dir;
  // Raw gray and RGB pixels, a 4:2:0 colour JPEG at an odd size, a gray
  // JPEG, then two records the pipeline cannot decode: a PNG and a JPEG
  // whose scan is corrupt.
  std::string gray(6 * 5, '\0'), rgb(3 * 4 * 3, '\0');
  for (size_t i = 0; i < gray.size(); ++i)
    gray[i] = static_cast<char>(i * 37 + 11);
  for (size_t i = 0; i < rgb.size(); ++i)
    rgb[i] = static_cast<char>(255 - i * 7);
  const int w = 37, h = 23;
  std::string color =
      test::encodeJpeg(test::photoPattern(w, h, 5), w, h, 3, 90, TJSAMP_420);
  std::vector<uint8_t> grayPhoto(size_t(w) * h);
  for (size_t i = 0; i < grayPhoto.size(); ++i)
    grayPhoto[i] = static_cast<uint8_t>(i * 13 % 251);
  std::string grayJpeg = test::encodeJpeg(grayPhoto, w, h, 1, 85);
  std::string png =
      ExampleBuilder()
          .addBytes(keys::kEncoded,
                    std::string("\x89PNG\r\n\x1a\n", 8) + std::string(40, 'x'))
          .addBytes(keys::kFormat, "png")
          .addInt64(keys::kLabel, 9)
          .build();
  std::string path = dir.path() + "/train-00000-of-00001";
  test::writeRecords(
      path,
      {rawPixelsExample(6, 5, 1, gray, 1), rawPixelsExample(3, 4, 3, rgb, 2),
       test::jpegExample(color, 3, w, h), test::jpegExample(grayJpeg, 4, w, h),
       png, test::jpegExample(withStrayMarker(color), 5, w, h)});

  InspectOptions options;
  options.path = path;
  options.dumpDir = dir.path() + "/dump/sub"; // created with its parents
  InspectReport report;
  ASSERT_TRUE(inspectData(options, report).isOk());
  EXPECT_EQ(report.decoded, 5u); // all but the PNG, which fails its check
  EXPECT_EQ(report.dumped, 4u);
  ASSERT_EQ(report.problems.size(), 2u);
  expectContains(report.problems[0],
                 ": record 4 at byte offset " /* after 4 records */);
  expectContains(report.problems[0],
                 "not a JPEG (no FF D8 FF start-of-image marker in the first "
                 "bytes): the bytes are a PNG image (image/format 'png'); the "
                 "pipeline decodes JPEG images, and uint8 pixels stored as "
                 "they are under image/format \"raw\"");
  expectContains(report.problems[1], ": record 5 at byte offset ");
  expectContains(report.problems[1], "corrupt JPEG");

  // Each image file holds exactly the decoded bytes: raw pixels unchanged,
  // JPEGs as decodeJpeg gives them whole.
  std::string d = options.dumpDir + "/train-00000-of-00001.";
  EXPECT_EQ(test::readFileBytes(d + "0.pgm"), netpbm("P5", 5, 6, gray));
  EXPECT_EQ(test::readFileBytes(d + "1.ppm"), netpbm("P6", 4, 3, rgb));
  ImageU8 colorPixels, grayPixels;
  ASSERT_TRUE(
      decodeJpeg(color, nullptr, 3, JpegDecodeMode::kFull, colorPixels).isOk());
  ASSERT_TRUE(
      decodeJpeg(grayJpeg, nullptr, 1, JpegDecodeMode::kFull, grayPixels)
          .isOk());
  auto bytesOf = [](const ImageU8 &image) {
    return std::string(image.pixels.begin(), image.pixels.end());
  };
  EXPECT_EQ(test::readFileBytes(d + "2.ppm"),
            netpbm("P6", w, h, bytesOf(colorPixels)));
  EXPECT_EQ(test::readFileBytes(d + "3.pgm"),
            netpbm("P5", w, h, bytesOf(grayPixels)));
  EXPECT_EQ(test::readFileBytes(options.dumpDir + "/records.tsv"),
            "file\trecord\tlabel\tclass\twidth\theight\tchannels\tfilename\t"
            "image\n"
            "train-00000-of-00001\t0\t1\t0\t5\t6\t1\traw1\t"
            "train-00000-of-00001.0.pgm\n"
            "train-00000-of-00001\t1\t2\t1\t4\t3\t3\traw2\t"
            "train-00000-of-00001.1.ppm\n"
            "train-00000-of-00001\t2\t3\t2\t37\t23\t3\timg3.JPEG\t"
            "train-00000-of-00001.2.ppm\n"
            "train-00000-of-00001\t3\t4\t3\t37\t23\t1\timg4.JPEG\t"
            "train-00000-of-00001.3.pgm\n");
  std::string text = formatInspectReport(options, report);
  expectContains(text, "dumped: 4 records to " + options.dumpDir);
  expectContains(text, "FAILED: 2 bad records among 6 in 1 files");

  // With --decode N only the sample is dumped; a directory that cannot be
  // made is an error of the tool, not of the data.
  std::string exe = KILN_DATA_EXE;
  EXPECT_EQ(std::system((exe + " inspect " + path + " --decode 2 --dump " +
                         dir.path() + "/two > /dev/null")
                            .c_str()),
            1 << 8); // the corrupt records still fail the check
  std::string two = test::readFileBytes(dir.path() + "/two/records.tsv");
  EXPECT_EQ(std::count(two.begin(), two.end(), '\n'), 3) << two;
  EXPECT_EQ(std::system((exe + " inspect " + path + " --dump " + path +
                         "/dump 2> " + dir.path() + "/err.txt > /dev/null")
                            .c_str()),
            1 << 8);
  expectContains(test::readFileBytes(dir.path() + "/err.txt"),
                 "kiln-data: error: ");
  expectContains(test::readFileBytes(dir.path() + "/err.txt"), path + "/dump");
}

//===----------------------------------------------------------------------===//
// Data the model does not take: channels and size
//===----------------------------------------------------------------------===//

TEST(ImagePolicy, OtherChannelsOrSmallerImagesAreErrorsUnlessAskedFor) {
  std::string gray6 = test::rawExample(6, 6, 77, 1);
  TransformOptions o;
  o.augment = KILN_RT_AUGMENT_NONE;
  o.channels = 3;
  o.height = o.width = 6;
  Example example;
  RecordImage image;
  Status s = inspectRecord(gray6, o, example, image);
  ASSERT_EQ(s.code(), StatusCode::kInvalidArgument);
  expectContains(s.message(),
                 "the image has 1 channel but the model takes 3: pass "
                 "--convert-channels to convert gray to RGB (or train a model "
                 "for this data: build_model.py --channels 1)");
  o.convertChannels = true;
  EXPECT_TRUE(inspectRecord(gray6, o, example, image).isOk());

  o.channels = 1;
  o.height = o.width = 8;
  s = inspectRecord(gray6, o, example, image);
  ASSERT_EQ(s.code(), StatusCode::kInvalidArgument);
  expectContains(s.message(),
                 "the image is 6x6, smaller than the model's 8x8 input: pass "
                 "--upscale to enlarge such images (or train a model for this "
                 "data: build_model.py --image-size 6)");
  o.upscale = true;
  EXPECT_TRUE(inspectRecord(gray6, o, example, image).isOk());
  // Pad-crop pads: no enlarging involved.
  o.upscale = false;
  o.augment = KILN_RT_AUGMENT_PAD_CROP_FLIP;
  EXPECT_TRUE(inspectRecord(gray6, o, example, image).isOk());
}

TEST(ImagePolicy, TheWrongDataIsNotSkippedAsCorrupt) {
  TempDir dir;
  std::string path = dir.path() + "/train-00000-of-00001";
  test::writeRecords(path, {test::rawExample(6, 6, 1, 1),
                            test::rawExample(6, 6, 2, 2)});
  auto c = test::rawConfig(dir.path(), 8, 1);
  c.shuffle = 0;
  c.skip_bad_records = 1;
  Drained run;
  drain(c, run);
  ASSERT_FALSE(run.error.ok());
  expectContains(run.error.message(), where(path, 0, 0) +
                                          ": the image is 6x6, smaller than "
                                          "the model's 8x8 input");
  c.image_policy = KILN_RT_IMAGE_UPSCALE;
  Drained upscaled;
  drain(c, upscaled);
  ASSERT_TRUE(upscaled.error.ok()) << upscaled.error.message();
  EXPECT_EQ(upscaled.labels, (std::vector<int32_t>{0, 1}));
}

TEST(Abi, AMinorTwoCallerKeepsItsConversions) {
  TempDir dir;
  test::writeRecords(dir.path() + "/train-00000-of-00001",
                     {test::rawExample(6, 6, 1, 1)});
  auto c = test::rawConfig(dir.path(), 8, 1);
  c.abi_version = (KILN_RT_ABI_VERSION_MAJOR << 16) | 2;
  c.image_policy = 0; // not part of a minor-2 struct: ignored
  Drained run;
  drain(c, run);
  ASSERT_TRUE(run.error.ok()) << run.error.message();
}

} // namespace
} // namespace kiln::rt
