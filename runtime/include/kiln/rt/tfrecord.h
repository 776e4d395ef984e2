//===- tfrecord.h - TFRecord framing: reader and writer ---------*- C++ -*-===//
//
// A TFRecord file is a concatenation of
//   uint64 length | uint32 masked_crc32c(length) | data[length] |
//   uint32 masked_crc32c(data)
// (little-endian, no header or index). The reader verifies both CRCs and
// reports every problem with the file name, the record index and the byte
// offset of the record's header.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RT_TFRECORD_H
#define KILN_RT_TFRECORD_H

#include "kiln/rt/status.h"

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

namespace kiln::rt {

constexpr size_t kTfRecordHeaderBytes = 12; // length + masked CRC of length
constexpr size_t kTfRecordFooterBytes = 4;  // masked CRC of data

/// Appends one framed record to `out` (used by tests, fuzzers, the writer).
void appendTfRecord(std::string &out, std::string_view data);

/// Sequential reader over a file or an in-memory buffer.
class RecordReader {
public:
  /// Opens `path`; kNotFound if it does not exist.
  static StatusOr<std::unique_ptr<RecordReader>>
  openFile(const std::string &path);
  /// Reads from memory that must outlive the reader; `name` is used in
  /// messages.
  static std::unique_ptr<RecordReader> fromMemory(std::string name,
                                                  std::string_view bytes);

  ~RecordReader();
  RecordReader(const RecordReader &) = delete;
  RecordReader &operator=(const RecordReader &) = delete;

  /// Reads the next record into `record`. Returns kOutOfRange at a clean end
  /// of file, kDataLoss on truncation or a CRC mismatch, kIoError if the
  /// operating system fails.
  Status next(std::string &record);

  /// Index (0-based) and byte offset of the record most recently attempted.
  uint64_t recordIndex() const { return index_; }
  uint64_t recordOffset() const { return offset_; }
  /// True when the last error left the framing intact (a data CRC mismatch)
  /// so that the following records can still be read. Truncation and a bad
  /// length CRC leave no trustworthy way to find the next record.
  bool canContinue() const { return canContinue_; }
  const std::string &name() const { return name_; }
  uint64_t size() const { return size_; }

private:
  RecordReader(std::string name, std::FILE *file, std::string_view memory,
               uint64_t size);
  /// Reads exactly `n` bytes or returns how many were available.
  Status readFully(void *dst, size_t n, size_t &got);
  Status corrupt(const std::string &what) const;

  std::string name_;
  std::FILE *file_ = nullptr;
  std::string_view memory_;
  uint64_t size_ = 0;
  uint64_t pos_ = 0;    // bytes consumed so far
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
