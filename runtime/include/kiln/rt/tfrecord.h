//===- tfrecord.h - TFRecord framing: reader and writer ---------*- C++ -*-===//
//
// A TFRecord file is a concatenation of
//   uint64 length | uint32 masked_crc32c(length) | data[length] |
//   uint32 masked_crc32c(data)
// (little-endian, no header or index). The reader verifies both CRCs and
// reports every problem with the file name, the record index and the byte
// offset of the record's header.
//
// TensorFlow can also write the whole file as one GZIP or ZLIB stream
// (TFRecordOptions compression_type). The reader detects that from the first
// bytes and inflates as it reads; offsets then count uncompressed bytes.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RT_TFRECORD_H
#define KILN_RT_TFRECORD_H

#include "kiln/base/status.h"

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::rt {

constexpr size_t kTfRecordHeaderBytes = 12; // length + masked CRC of length
constexpr size_t kTfRecordFooterBytes = 4;  // masked CRC of data

/// Appends one framed record to `out` (used by tests, fuzzers, the writer).
void appendTfRecord(std::string &out, std::string_view data);

enum class TfRecordCompression { kNone, kGzip, kZlib };
const char *compressionName(TfRecordCompression compression);

/// The compression of a TFRecord file from its first bytes (at least 12 when
/// the file has them). Unambiguous: an uncompressed file starts with a length
/// whose masked CRC32C follows it, which is checked first; otherwise GZIP's
/// 1f 8b magic, or a zlib header (deflate, window <= 32K, FCHECK valid). Any
/// other start is taken as uncompressed, so the reader reports its length
/// CRC mismatch.
TfRecordCompression detectTfRecordCompression(std::string_view head);

struct TfRecordCount {
  uint64_t records = 0;
  /// With stopAtCorruption: why counting stopped before the end of the file
  /// (a bad length CRC or a truncation), else OK.
  Status stoppedBy;
};

/// Counts the records of a TFRecord file (compressed or not) from its
/// framing, verifying each length's CRC but not reading the data (plain
/// files seek past it, reading only the headers: a small buffer and no
/// read-ahead, so the data of large records never comes off the disk). A bad
/// length CRC or a truncation is an error naming the file, the record and its
/// offset; with `stopAtCorruption` it ends the count instead, as it ends that
/// file for a pipeline skipping bad records, and is returned in `stoppedBy`.
/// `offsets`, if given, receives the byte offset of each counted record's
/// header in a plain file (for RecordReader::seekToRecord), and stays empty
/// for a compressed one.
StatusOr<TfRecordCount> countTfRecords(const std::string &path,
                                       bool stopAtCorruption,
                                       std::vector<uint64_t> *offsets = nullptr);

/// Sequential reader over a file or an in-memory buffer.
class RecordReader {
public:
  /// How the file will be read: its records (large sequential reads), or
  /// mostly their headers, skipping the data (a small buffer and no kernel
  /// read-ahead, so that the data of large records is never read).
  enum class Pattern { kRecords, kHeaders };
  /// Opens `path`; kNotFound if it does not exist.
  static StatusOr<std::unique_ptr<RecordReader>>
  openFile(const std::string &path, Pattern pattern = Pattern::kRecords);
  /// Reads from memory that must outlive the reader; `name` is used in
  /// messages.
  static std::unique_ptr<RecordReader> fromMemory(std::string name,
                                                  std::string_view bytes);

  ~RecordReader();
  RecordReader(const RecordReader &) = delete;
  RecordReader &operator=(const RecordReader &) = delete;

  /// Reads the next record into `record`. Returns kOutOfRange at a clean end
  /// of file, kDataLoss on truncation, a CRC mismatch or a corrupt compressed
  /// stream, kIoError if the operating system fails.
  Status next(std::string &record);
  /// Like next() but skips the record's data and footer without reading or
  /// checking them (only the length CRC and the truncation are checked).
  Status skip();
  /// Continues at record `index`, whose header is at byte `offset` (as
  /// counted before), without reading the records before it. Plain files
  /// only (a compressed stream cannot be entered in the middle: skip()).
  Status seekToRecord(uint64_t index, uint64_t offset);

  /// Index (0-based) and byte offset of the record most recently attempted.
  uint64_t recordIndex() const { return index_; }
  uint64_t recordOffset() const { return offset_; }
  /// True when the last error left the framing intact (a data CRC mismatch)
  /// so that the following records can still be read. Truncation and a bad
  /// length CRC leave no trustworthy way to find the next record.
  bool canContinue() const { return canContinue_; }
  const std::string &name() const { return name_; }
  /// Bytes of the file as stored (compressed, if it is).
  uint64_t size() const { return size_; }
  TfRecordCompression compression() const { return compression_; }

private:
  struct Inflater;
  RecordReader(std::string name, std::FILE *file, std::string_view memory,
               uint64_t size);
  /// Detects the compression and sets up inflation.
  Status start();
  /// Reads exactly `n` (uncompressed) bytes or returns how many were
  /// available. kDataLoss (message without location) if inflation fails.
  Status readFully(void *dst, size_t n, size_t &got);
  /// The same from the stored bytes.
  Status readStored(void *dst, size_t n, size_t &got);
  Status inflateFully(void *dst, size_t n, size_t &got);
  /// Reads and checks the header of the next record.
  Status readHeader(uint64_t &length);
  Status corrupt(const std::string &what) const;
  Status fail(Status status, bool canContinue);

  static constexpr size_t kReadBufferBytes = 1 << 20;
  std::string name_;
  std::FILE *file_ = nullptr;
  std::unique_ptr<char[]> buffer_; // file_'s stdio buffer, freed after it
  std::string_view memory_;
  uint64_t size_ = 0;
  uint64_t storedPos_ = 0; // stored bytes consumed so far
  TfRecordCompression compression_ = TfRecordCompression::kNone;
  std::unique_ptr<Inflater> inflater_;
  uint64_t pos_ = 0;    // (uncompressed) bytes consumed so far
  uint64_t index_ = 0;  // index of the current record
  uint64_t offset_ = 0; // offset of the current record's header
  uint64_t nextIndex_ = 0;
  bool canContinue_ = true;
  bool failed_ = false;
};

/// Writes a TFRecord file to `path + ".partial"` and renames it to `path` on
/// a successful close(), so an interrupted run never leaves a shard that
/// looks complete.
class RecordWriter {
public:
  static StatusOr<std::unique_ptr<RecordWriter>>
  create(const std::string &path);
  ~RecordWriter();
  Status write(std::string_view data);
  Status close();
  uint64_t bytesWritten() const { return bytes_; }
  uint64_t recordsWritten() const { return records_; }

private:
  RecordWriter(std::string path, std::FILE *file)
      : path_(std::move(path)), file_(file) {}
  std::string path_;
  std::FILE *file_;
  std::string frame_;
  uint64_t bytes_ = 0;
  uint64_t records_ = 0;
};

} // namespace kiln::rt

#endif // KILN_RT_TFRECORD_H
