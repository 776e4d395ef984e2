//===- tfrecord.cpp - TFRecord reader and writer --------------------------===//
#include "kiln/rt/tfrecord.h"

#include "kiln/rt/crc32c.h"

#include <algorithm>
#include <cinttypes>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <vector>
#include <zlib.h>

namespace kiln::rt {
namespace {

void putLe64(char *p, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    p[i] = static_cast<char>(v >> (8 * i));
}
void putLe32(char *p, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    p[i] = static_cast<char>(v >> (8 * i));
}
uint64_t getLe64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i)
    v = (v << 8) | p[i];
  return v;
}
uint32_t getLe32(const unsigned char *p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 |
         uint32_t(p[3]) << 24;
}

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%08" PRIx32, v);
  return buf;
}

} // namespace

void appendTfRecord(std::string &out, std::string_view data) {
  char header[kTfRecordHeaderBytes];
  putLe64(header, data.size());
  putLe32(header + 8, maskCrc(crc32c(header, 8)));
  char footer[kTfRecordFooterBytes];
  putLe32(footer, maskCrc(crc32c(data.data(), data.size())));
  out.append(header, sizeof(header));
  out.append(data.data(), data.size());
  out.append(footer, sizeof(footer));
}

//===----------------------------------------------------------------------===//
// Compression
//===----------------------------------------------------------------------===//

const char *compressionName(TfRecordCompression compression) {
  switch (compression) {
  case TfRecordCompression::kNone:
    return "uncompressed";
  case TfRecordCompression::kGzip:
    return "GZIP";
  case TfRecordCompression::kZlib:
    return "ZLIB";
  }
  return "?";
}

TfRecordCompression detectTfRecordCompression(std::string_view head) {
  auto *p = reinterpret_cast<const unsigned char *>(head.data());
  if (head.size() >= kTfRecordHeaderBytes &&
      unmaskCrc(getLe32(p + 8)) == crc32c(p, 8))
    return TfRecordCompression::kNone;
  if (head.size() >= 2 && p[0] == 0x1f && p[1] == 0x8b)
    return TfRecordCompression::kGzip;
  // RFC 1950: CM = 8 (deflate), CINFO <= 7, (CMF * 256 + FLG) % 31 == 0, no
  // preset dictionary (TensorFlow never sets one).
  if (head.size() >= 2 && (p[0] & 0x0f) == 8 && (p[0] >> 4) <= 7 &&
      (p[0] * 256u + p[1]) % 31 == 0 && !(p[1] & 0x20))
    return TfRecordCompression::kZlib;
  return TfRecordCompression::kNone;
}

struct RecordReader::Inflater {
  z_stream stream{};
  bool initialized = false;
  bool inputEnded = false;  // the stored bytes are exhausted
  bool streamEnded = false; // the (last) compressed stream ended cleanly
  std::vector<unsigned char> input;
  ~Inflater() {
    if (initialized)
      inflateEnd(&stream);
  }
};

//===----------------------------------------------------------------------===//
// RecordReader
//===----------------------------------------------------------------------===//

RecordReader::RecordReader(std::string name, std::FILE *file,
                           std::string_view memory, uint64_t size)
    : name_(std::move(name)), file_(file), memory_(memory), size_(size) {}

RecordReader::~RecordReader() {
  if (file_)
    std::fclose(file_); // Read-only stream: nothing to lose on close.
}

StatusOr<std::unique_ptr<RecordReader>>
RecordReader::openFile(const std::string &path, Pattern pattern) {
  std::FILE *file = std::fopen(path.c_str(), "rb");
  KILN_CHECK_LIBC_PTR(file, "cannot open TFRecord file " + path);
  struct stat st;
  if (::fstat(::fileno(file), &st) != 0) {
    int err = errno;
    std::fclose(file);
    return errnoStatus(__FILE__, __LINE__, "cannot stat " + path, err);
  }
  std::unique_ptr<RecordReader> reader(new RecordReader(
      path, file, std::string_view(), static_cast<uint64_t>(st.st_size)));
  if (pattern == Pattern::kHeaders) {
    // A 12-byte read after each seek: any buffer, or the kernel's
    // read-ahead, would read data that is skipped.
    std::setvbuf(file, nullptr, _IONBF, 0);
    (void)::posix_fadvise(::fileno(file), 0, 0, POSIX_FADV_RANDOM);
  } else {
    // Large sequential reads; the default 4 KiB buffer costs a syscall per
    // page. (glibc ignores the size of a buffer it is to allocate itself.)
    reader->buffer_.reset(new char[kReadBufferBytes]);
    std::setvbuf(file, reader->buffer_.get(), _IOFBF, kReadBufferBytes);
  }
  KILN_RETURN_IF_ERROR(reader->start());
  return reader;
}

std::unique_ptr<RecordReader> RecordReader::fromMemory(std::string name,
                                                       std::string_view bytes) {
  std::unique_ptr<RecordReader> reader(
      new RecordReader(std::move(name), nullptr, bytes, bytes.size()));
  // Memory cannot fail to read, and zlib's init fails only without memory.
  Status s = reader->start();
  if (!s.isOk())
    std::abort();
  return reader;
}

Status RecordReader::start() {
  unsigned char head[kTfRecordHeaderBytes];
  size_t got = 0;
  KILN_RETURN_IF_ERROR(readStored(head, sizeof(head), got));
  compression_ = detectTfRecordCompression(
      std::string_view(reinterpret_cast<const char *>(head), got));
  // Rewind: the bytes are read again as records or as compressed input.
  storedPos_ = 0;
  if (file_ && std::fseek(file_, 0, SEEK_SET) != 0)
    return errnoStatus(__FILE__, __LINE__, "cannot seek in " + name_, errno);
  if (compression_ == TfRecordCompression::kNone)
    return Status::ok();
  inflater_ = std::make_unique<Inflater>();
  // 15 window bits: zlib's header; +16: gzip's header and trailer (CRC32 and
  // length, which zlib checks).
  int windowBits = compression_ == TfRecordCompression::kGzip ? 15 + 16 : 15;
  if (inflateInit2(&inflater_->stream, windowBits) != Z_OK)
    return KILN_STATUS(kInternal, name_ + ": zlib's inflateInit2 failed");
  inflater_->initialized = true;
  inflater_->input.resize(1 << 16);
  return Status::ok();
}

Status RecordReader::readStored(void *dst, size_t n, size_t &got) {
  if (!file_) {
    got = static_cast<size_t>(
        std::min<uint64_t>(n, memory_.size() - storedPos_));
    std::memcpy(dst, memory_.data() + storedPos_, got);
    storedPos_ += got;
    return Status::ok();
  }
  got = std::fread(dst, 1, n, file_);
  storedPos_ += got;
  if (got < n && std::ferror(file_))
    return errnoStatus(__FILE__, __LINE__,
                       name_ + ": read failed at byte offset " +
                           std::to_string(storedPos_),
                       errno);
  return Status::ok();
}

Status RecordReader::inflateFully(void *dst, size_t n, size_t &got) {
  Inflater &in = *inflater_;
  z_stream &z = in.stream;
  z.next_out = static_cast<Bytef *>(dst);
  z.avail_out = static_cast<uInt>(n);
  auto where = [&] {
    return " at uncompressed byte offset " +
           std::to_string(pos_ + (n - z.avail_out)) + " (stored byte offset " +
           std::to_string(storedPos_ - z.avail_in) + ")";
  };
  auto refill = [&]() -> Status {
    size_t r = 0;
    KILN_RETURN_IF_ERROR(readStored(in.input.data(), in.input.size(), r));
    z.next_in = in.input.data();
    z.avail_in = static_cast<uInt>(r);
    in.inputEnded = r == 0;
    return Status::ok();
  };
  while (z.avail_out > 0 && !in.streamEnded) {
    if (z.avail_in == 0 && !in.inputEnded)
      KILN_RETURN_IF_ERROR(refill());
    int rc = inflate(&z, Z_NO_FLUSH);
    if (rc == Z_STREAM_END) {
      if (z.avail_in == 0 && !in.inputEnded)
        KILN_RETURN_IF_ERROR(refill());
      if (z.avail_in == 0) {
        in.streamEnded = true;
      } else if (compression_ == TfRecordCompression::kGzip) {
        // gzip allows concatenated members (`cat a.gz b.gz`).
        inflateReset(&z);
      } else {
        return Status(StatusCode::kDataLoss,
                      "bytes follow the end of the ZLIB stream" + where());
      }
      continue;
    }
    if (rc == Z_BUF_ERROR && z.avail_in == 0 && in.inputEnded)
      return Status(StatusCode::kDataLoss,
                    std::string("the ") + compressionName(compression_) +
                        " stream ends before its end marker (truncated "
                        "file?)" +
                        where());
    if (rc != Z_OK && rc != Z_BUF_ERROR)
      return Status(StatusCode::kDataLoss,
                    std::string("corrupt ") + compressionName(compression_) +
                        " stream (" + (z.msg ? z.msg : zError(rc)) + ")" +
                        where());
  }
  got = n - z.avail_out;
  pos_ += got;
  return Status::ok();
}

Status RecordReader::readFully(void *dst, size_t n, size_t &got) {
  if (inflater_)
    return inflateFully(dst, n, got);
  KILN_RETURN_IF_ERROR(readStored(dst, n, got));
  pos_ += got;
  return Status::ok();
}

Status RecordReader::corrupt(const std::string &what) const {
  return KILN_STATUS(kDataLoss, name_ + ": record " + std::to_string(index_) +
                                    " at byte offset " +
                                    std::to_string(offset_) + ": " + what);
}

Status RecordReader::fail(Status status, bool canContinue) {
  failed_ = true;
  canContinue_ = canContinue;
  return status;
}

Status RecordReader::readHeader(uint64_t &length) {
  if (failed_ && !canContinue_)
    return KILN_STATUS(kDataLoss,
                       name_ + ": cannot read past the corrupt record " +
                           std::to_string(index_) + " at byte offset " +
                           std::to_string(offset_));
  failed_ = false;
  index_ = nextIndex_;
  offset_ = pos_;
  // A failed inflation is corrupt data in this record; an I/O error is not.
  auto read = [&](void *dst, size_t n, size_t &got) -> Status {
    Status s = readFully(dst, n, got);
    if (s.code() == StatusCode::kDataLoss)
      return fail(corrupt(s.message()), false);
    return s;
  };
  unsigned char header[kTfRecordHeaderBytes];
  size_t got = 0;
  KILN_RETURN_IF_ERROR(read(header, sizeof(header), got));
  if (got == 0)
    return Status(StatusCode::kOutOfRange, name_ + ": end of file");
  if (got < sizeof(header))
    return fail(corrupt("truncated header: expected 12 bytes, found " +
                        std::to_string(got)),
                false);
  length = getLe64(header);
  uint32_t storedLenCrc = unmaskCrc(getLe32(header + 8));
  uint32_t lenCrc = crc32c(header, 8);
  if (storedLenCrc != lenCrc)
    return fail(corrupt("length CRC mismatch (stored " + hex32(storedLenCrc) +
                        ", computed " + hex32(lenCrc) + ")"),
                false);
  // The length is now trusted, but the file may still be cut short; check
  // before allocating so a truncated multi-GB claim does not allocate. (A
  // compressed file's uncompressed size is unknown: its records are read in
  // bounded chunks instead.)
  if (!inflater_) {
    uint64_t remaining = size_ - pos_;
    if (length + kTfRecordFooterBytes > remaining || length > remaining)
      return fail(corrupt("truncated: record needs " +
                          std::to_string(length + kTfRecordFooterBytes) +
                          " more bytes but only " + std::to_string(remaining) +
                          " remain"),
                  false);
  }
  return Status::ok();
}

Status RecordReader::next(std::string &record) {
  uint64_t length = 0;
  KILN_RETURN_IF_ERROR(readHeader(length));
  auto read = [&](void *dst, size_t n, size_t &got) -> Status {
    Status s = readFully(dst, n, got);
    if (s.code() == StatusCode::kDataLoss)
      return fail(corrupt(s.message()), false);
    return s;
  };
  // Compressed input grows the record as data arrives, so a length beyond
  // the stream's real content costs at most one chunk more than it holds.
  constexpr uint64_t kChunk = 1 << 20;
  record.clear();
  size_t got = 0;
  while (record.size() < length) {
    size_t chunk = inflater_ ? std::min<uint64_t>(length - record.size(), kChunk)
                             : length;
    size_t old = record.size();
    record.resize(old + chunk);
    KILN_RETURN_IF_ERROR(read(record.data() + old, chunk, got));
    if (got < chunk) {
      record.resize(old + got);
      break;
    }
  }
  unsigned char footer[kTfRecordFooterBytes];
  size_t gotFooter = 0;
  if (record.size() == length)
    KILN_RETURN_IF_ERROR(read(footer, sizeof(footer), gotFooter));
  if (record.size() < length || gotFooter < sizeof(footer))
    return fail(corrupt("truncated: file ended inside the record"), false);
  nextIndex_ = index_ + 1;
  uint32_t storedCrc = unmaskCrc(getLe32(footer));
  uint32_t crc = crc32c(record.data(), record.size());
  if (storedCrc != crc)
    return fail(corrupt("data CRC mismatch over " + std::to_string(length) +
                        " bytes (stored " + hex32(storedCrc) + ", computed " +
                        hex32(crc) + ")"),
                true);
  return Status::ok();
}

Status RecordReader::skip() {
  uint64_t length = 0;
  KILN_RETURN_IF_ERROR(readHeader(length));
  uint64_t toSkip = length + kTfRecordFooterBytes;
  if (inflater_) {
    // Compressed data can only be skipped by inflating it.
    char scratch[1 << 14];
    while (toSkip > 0) {
      size_t n = static_cast<size_t>(std::min<uint64_t>(toSkip, sizeof(scratch)));
      size_t got = 0;
      Status s = readFully(scratch, n, got);
      if (s.code() == StatusCode::kDataLoss)
        return fail(corrupt(s.message()), false);
      KILN_RETURN_IF_ERROR(s);
      if (got < n)
        return fail(corrupt("truncated: file ended inside the record"), false);
      toSkip -= n;
    }
  } else if (file_) {
    // readHeader checked that the record fits in the file.
    if (std::fseek(file_, static_cast<long>(toSkip), SEEK_CUR) != 0)
      return errnoStatus(__FILE__, __LINE__,
                         name_ + ": seek past record " +
                             std::to_string(index_) + " at byte offset " +
                             std::to_string(offset_),
                         errno);
    storedPos_ += toSkip;
    pos_ += toSkip;
  } else {
    storedPos_ += toSkip;
    pos_ += toSkip;
  }
  nextIndex_ = index_ + 1;
  return Status::ok();
}

Status RecordReader::seekToRecord(uint64_t index, uint64_t offset) {
  if (inflater_ || offset > size_)
    return KILN_STATUS(kInvalidArgument,
                       name_ + ": cannot seek to record " +
                           std::to_string(index) + " at byte offset " +
                           std::to_string(offset) +
                           (inflater_ ? " of a compressed file"
                                      : " past the end of the file (" +
                                            std::to_string(size_) +
                                            " bytes)"));
  if (file_ && std::fseek(file_, static_cast<long>(offset), SEEK_SET) != 0)
    return errnoStatus(__FILE__, __LINE__,
                       name_ + ": seek to record " + std::to_string(index) +
                           " at byte offset " + std::to_string(offset),
                       errno);
  storedPos_ = pos_ = offset;
  nextIndex_ = index;
  failed_ = false;
  canContinue_ = true;
  return Status::ok();
}

StatusOr<TfRecordCount> countTfRecords(const std::string &path,
                                       bool stopAtCorruption,
                                       std::vector<uint64_t> *offsets) {
  // Every rank of a data-parallel run counts every file: only the headers
  // of a plain file are read. A compressed stream is inflated whole anyway
  // (the inflater reads it in 64 KiB chunks, past the small buffer).
  KILN_ASSIGN_OR_RETURN(
      std::unique_ptr<RecordReader> reader,
      RecordReader::openFile(path, RecordReader::Pattern::kHeaders));
  bool plain = reader->compression() == TfRecordCompression::kNone;
  if (offsets)
    offsets->clear();
  TfRecordCount count;
  for (;;) {
    Status s = reader->skip();
    if (s.code() == StatusCode::kOutOfRange)
      break;
    if (s.code() == StatusCode::kDataLoss && stopAtCorruption) {
      count.stoppedBy = s;
      break;
    }
    KILN_RETURN_IF_ERROR(s);
    ++count.records;
    if (offsets && plain)
      offsets->push_back(reader->recordOffset());
  }
  return count;
}

//===----------------------------------------------------------------------===//
// RecordWriter
//===----------------------------------------------------------------------===//

StatusOr<std::unique_ptr<RecordWriter>>
RecordWriter::create(const std::string &path) {
  std::string partial = path + ".partial";
  std::FILE *file = std::fopen(partial.c_str(), "wb");
  KILN_CHECK_LIBC_PTR(file, "cannot create " + partial);
  std::setvbuf(file, nullptr, _IOFBF, 1 << 20);
  return std::unique_ptr<RecordWriter>(new RecordWriter(path, file));
}

RecordWriter::~RecordWriter() {
  if (file_) {
    // Not closed explicitly: an error path. Drop the partial file.
    std::fclose(file_);
    std::remove((path_ + ".partial").c_str());
  }
}

Status RecordWriter::write(std::string_view data) {
  frame_.clear();
  appendTfRecord(frame_, data);
  if (std::fwrite(frame_.data(), 1, frame_.size(), file_) != frame_.size())
    return errnoStatus(__FILE__, __LINE__, "write to " + path_ + ".partial",
                       errno);
  bytes_ += frame_.size();
  ++records_;
  return Status::ok();
}

Status RecordWriter::close() {
  std::FILE *file = file_;
  file_ = nullptr;
  std::string partial = path_ + ".partial";
  if (std::fclose(file) != 0) {
    int err = errno;
    std::remove(partial.c_str());
    return errnoStatus(__FILE__, __LINE__, "close " + partial, err);
  }
  KILN_CHECK_LIBC(std::rename(partial.c_str(), path_.c_str()),
                  "rename " + partial + " to " + path_);
  return Status::ok();
}

} // namespace kiln::rt
