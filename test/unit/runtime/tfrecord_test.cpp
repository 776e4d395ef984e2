//===- tfrecord_test.cpp - TFRecord framing and corruption reports --------===//
#include "test_util.h"

#include "kiln/rt/crc32c.h"

namespace kiln::rt {
namespace {

using test::TempDir;

std::vector<std::string> sampleRecords() {
  std::vector<std::string> records;
  Rng rng(3);
  for (int i = 0; i < 50; ++i) {
    std::string r(rng.below(i == 0 ? 1 : 3000), '\0');
    for (auto &c : r)
      c = static_cast<char>(rng.next());
    records.push_back(r);
  }
  return records;
}

TEST(TfRecord, FramingLayout) {
  std::string bytes;
  appendTfRecord(bytes, "hello");
  ASSERT_EQ(bytes.size(), 12u + 5u + 4u);
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x05\0\0\0\0\0\0\0", 8));
  uint32_t lenCrc;
  std::memcpy(&lenCrc, bytes.data() + 8, 4);
  EXPECT_EQ(lenCrc, maskCrc(crc32c(bytes.data(), 8)));
  EXPECT_EQ(bytes.substr(12, 5), "hello");
  uint32_t dataCrc;
  std::memcpy(&dataCrc, bytes.data() + 17, 4);
  EXPECT_EQ(dataCrc, maskCrc(crc32c("hello", 5)));
}

TEST(TfRecord, WriterReaderRoundTrip) {
  TempDir dir;
  std::string path = dir.path() + "/train-00000-of-00001";
  auto records = sampleRecords();
  {
    auto writer = RecordWriter::create(path);
    ASSERT_TRUE(writer.isOk()) << writer.status().toString();
    for (const auto &r : records)
      ASSERT_TRUE((*writer)->write(r).isOk());
    ASSERT_TRUE((*writer)->close().isOk());
  }
  EXPECT_TRUE(test::readFileBytes(path + ".partial").empty());
  auto reader = RecordReader::openFile(path);
  ASSERT_TRUE(reader.isOk()) << reader.status().toString();
  std::string got;
  uint64_t offset = 0;
  for (size_t i = 0; i < records.size(); ++i) {
    Status s = (*reader)->next(got);
    ASSERT_TRUE(s.isOk()) << s.toString();
    EXPECT_EQ(got, records[i]);
    EXPECT_EQ((*reader)->recordIndex(), i);
    EXPECT_EQ((*reader)->recordOffset(), offset);
    offset += 16 + records[i].size();
  }
  EXPECT_EQ((*reader)->next(got).code(), StatusCode::kOutOfRange);
  EXPECT_EQ((*reader)->next(got).code(), StatusCode::kOutOfRange);
}

TEST(TfRecord, WriterWithoutCloseLeavesNoShard) {
  TempDir dir;
  std::string path = dir.path() + "/x";
  {
    auto writer = RecordWriter::create(path);
    ASSERT_TRUE(writer.isOk());
    ASSERT_TRUE((*writer)->write("abc").isOk());
  }
  EXPECT_TRUE(test::readFileBytes(path).empty());
  EXPECT_TRUE(test::readFileBytes(path + ".partial").empty());
}

TEST(TfRecord, MissingFileIsNotFoundAndNamed) {
  auto reader = RecordReader::openFile("/nonexistent/dir/train-00000-of-00001");
  ASSERT_FALSE(reader.isOk());
  EXPECT_EQ(reader.status().code(), StatusCode::kNotFound);
  EXPECT_NE(
      reader.status().message().find("/nonexistent/dir/train-00000-of-00001"),
      std::string::npos);
}

std::string framed(const std::vector<std::string> &records) {
  std::string bytes;
  for (const auto &r : records)
    appendTfRecord(bytes, r);
  return bytes;
}

TEST(TfRecord, TruncationAnywhereIsReportedWithIndexAndOffset) {
  std::vector<std::string> records = {"first", "second record", "third"};
  std::string bytes = framed(records);
  uint64_t secondOffset = 16 + records[0].size();
  uint64_t thirdOffset = secondOffset + 16 + records[1].size();
  // Every cut inside the second or third record.
  for (size_t cut = secondOffset + 1; cut < bytes.size(); ++cut) {
    if (cut == thirdOffset)
      continue; // a clean end after two records
    std::string truncated = bytes.substr(0, cut);
    auto reader = RecordReader::fromMemory("mem.tfrecord", truncated);
    std::string got;
    ASSERT_TRUE(reader->next(got).isOk());
    uint64_t badIndex = cut < thirdOffset ? 1 : 2;
    if (badIndex == 2)
      ASSERT_TRUE(reader->next(got).isOk());
    Status s = reader->next(got);
    ASSERT_EQ(s.code(), StatusCode::kDataLoss) << "cut " << cut;
    std::string expect =
        "mem.tfrecord: record " + std::to_string(badIndex) +
        " at byte offset " +
        std::to_string(badIndex == 1 ? secondOffset : thirdOffset) +
        ": truncated";
    EXPECT_NE(s.message().find(expect), std::string::npos)
        << s.message() << "\nexpected: " << expect;
    EXPECT_FALSE(reader->canContinue());
    EXPECT_EQ(reader->next(got).code(), StatusCode::kDataLoss);
  }
}

TEST(TfRecord, DataCrcMismatchIsReportedAndReadingCanContinue) {
  std::string bytes = framed({"aaaa", "bbbb", "cccc"});
  size_t second = 20;
  bytes[second + 12 + 2] ^= 0x01; // flip a bit inside "bbbb"
  auto reader = RecordReader::fromMemory("f.rec", bytes);
  std::string got;
  ASSERT_TRUE(reader->next(got).isOk());
  Status s = reader->next(got);
  ASSERT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(
      s.message().find("f.rec: record 1 at byte offset 20: data CRC mismatch"),
      std::string::npos)
      << s.message();
  EXPECT_TRUE(reader->canContinue());
  ASSERT_TRUE(reader->next(got).isOk());
  EXPECT_EQ(got, "cccc");
  EXPECT_EQ(reader->recordIndex(), 2u);
}

TEST(TfRecord, LengthCrcMismatchStopsTheFile) {
  std::string bytes = framed({"aaaa", "bbbb", "cccc"});
  bytes[20] = 0x7f; // the second record's length byte
  auto reader = RecordReader::fromMemory("f.rec", bytes);
  std::string got;
  ASSERT_TRUE(reader->next(got).isOk());
  Status s = reader->next(got);
  ASSERT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("record 1 at byte offset 20: length CRC mismatch"),
            std::string::npos)
      << s.message();
  EXPECT_FALSE(reader->canContinue());
  EXPECT_EQ(reader->next(got).code(), StatusCode::kDataLoss);
}

TEST(TfRecord, HugeLengthWithValidCrcDoesNotAllocate) {
  // A hostile header: a valid CRC over a length of 2^62 bytes.
  std::string bytes(12, '\0');
  uint64_t len = uint64_t(1) << 62;
  std::memcpy(bytes.data(), &len, 8);
  uint32_t crc = maskCrc(crc32c(bytes.data(), 8));
  std::memcpy(bytes.data() + 8, &crc, 4);
  auto reader = RecordReader::fromMemory("evil", bytes);
  std::string got;
  Status s = reader->next(got);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("truncated"), std::string::npos) << s.message();
}

/// Bytes this process has read through read(2) and friends so far.
uint64_t bytesReadSoFar() {
  std::string io = test::readFileBytes("/proc/self/io");
  size_t at = io.find("rchar: ");
  return at == std::string::npos ? 0 : std::stoull(io.substr(at + 7));
}

TEST(TfRecord, CountingReadsOnlyHeadersAndSeekingEntersAtARecord) {
  TempDir dir;
  std::string path = dir.path() + "/train-00000-of-00001";
  // 24 records of 200 KB: a 1 MiB buffer would read every one.
  std::vector<std::string> records;
  for (int i = 0; i < 24; ++i)
    records.push_back(std::string(200000 + i, char('a' + i)));
  test::writeRecords(path, records);
  std::vector<uint64_t> offsets;
  uint64_t before = bytesReadSoFar();
  auto count = countTfRecords(path, false, &offsets);
  uint64_t read = bytesReadSoFar() - before;
  ASSERT_TRUE(count.isOk()) << count.status().toString();
  EXPECT_EQ(count->records, 24u);
  ASSERT_EQ(offsets.size(), 24u);
  // 25 headers of 12 bytes (the 25th read finds the end) and the first 12
  // bytes, for the compression: 312, plus about 100 for reading
  // /proc/self/io itself (406 measured), against 4.8 MB of data.
  EXPECT_LT(read, 512u) << "counting read " << read << " bytes";
  uint64_t offset = 0;
  for (size_t i = 0; i < records.size(); ++i) {
    EXPECT_EQ(offsets[i], offset);
    offset += 16 + records[i].size();
  }

  auto reader = RecordReader::openFile(path);
  ASSERT_TRUE(reader.isOk());
  std::string got;
  ASSERT_TRUE((*reader)->seekToRecord(17, offsets[17]).isOk());
  ASSERT_TRUE((*reader)->next(got).isOk());
  EXPECT_EQ(got, records[17]);
  EXPECT_EQ((*reader)->recordIndex(), 17u);
  EXPECT_EQ((*reader)->recordOffset(), offsets[17]);
  ASSERT_TRUE((*reader)->seekToRecord(3, offsets[3]).isOk());
  ASSERT_TRUE((*reader)->next(got).isOk());
  EXPECT_EQ(got, records[3]);
  Status past = (*reader)->seekToRecord(99, offset + 1);
  EXPECT_EQ(past.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(past.message().find(path + ": cannot seek to record 99 at byte "
                                       "offset " +
                                std::to_string(offset + 1) +
                                " past the end of the file"),
            std::string::npos)
      << past.message();

  // A compressed file has no offsets to seek to.
  std::string bytes;
  for (const auto &r : records)
    appendTfRecord(bytes, r);
  test::writeFile(path, test::compress(bytes, TfRecordCompression::kGzip));
  count = countTfRecords(path, false, &offsets);
  ASSERT_TRUE(count.isOk());
  EXPECT_EQ(count->records, 24u);
  EXPECT_TRUE(offsets.empty());
  reader = RecordReader::openFile(path);
  ASSERT_TRUE(reader.isOk());
  Status compressed = (*reader)->seekToRecord(1, 200016);
  EXPECT_NE(compressed.message().find("of a compressed file"),
            std::string::npos)
      << compressed.message();
}

} // namespace
} // namespace kiln::rt
