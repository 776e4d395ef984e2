//===- tfrecord.cpp - TFRecord reader and writer --------------------------===//
#include "kiln/rt/tfrecord.h"

#include "kiln/rt/crc32c.h"

#include <algorithm>
#include <cinttypes>
#include <cstring>
#include <sys/stat.h>

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
RecordReader::openFile(const std::string &path) {
  std::FILE *file = std::fopen(path.c_str(), "rb");
  KILN_CHECK_LIBC_PTR(file, "cannot open TFRecord file " + path);
  struct stat st;
  if (::fstat(::fileno(file), &st) != 0) {
    int err = errno;
    std::fclose(file);
    return errnoStatus(__FILE__, __LINE__, "cannot stat " + path, err);
  }
  // Large sequential reads; the default 4 KiB buffer costs a syscall per page.
  std::setvbuf(file, nullptr, _IOFBF, 1 << 20);
  return std::unique_ptr<RecordReader>(new RecordReader(
      path, file, std::string_view(), static_cast<uint64_t>(st.st_size)));
}

std::unique_ptr<RecordReader> RecordReader::fromMemory(std::string name,
                                                       std::string_view bytes) {
  return std::unique_ptr<RecordReader>(
      new RecordReader(std::move(name), nullptr, bytes, bytes.size()));
}

Status RecordReader::readFully(void *dst, size_t n, size_t &got) {
  if (!file_) {
    got = static_cast<size_t>(std::min<uint64_t>(n, memory_.size() - pos_));
    std::memcpy(dst, memory_.data() + pos_, got);
    pos_ += got;
    return Status::ok();
  }
  got = std::fread(dst, 1, n, file_);
  pos_ += got;
  if (got < n && std::ferror(file_))
    return errnoStatus(
        __FILE__, __LINE__,
        name_ + ": read failed at byte offset " + std::to_string(pos_), errno);
  return Status::ok();
}

Status RecordReader::corrupt(const std::string &what) const {
  return KILN_STATUS(kDataLoss, name_ + ": record " + std::to_string(index_) +
                                    " at byte offset " +
                                    std::to_string(offset_) + ": " + what);
}

Status RecordReader::next(std::string &record) {
  if (failed_ && !canContinue_)
    return KILN_STATUS(kDataLoss,
                       name_ + ": cannot read past the corrupt record " +
                           std::to_string(index_) + " at byte offset " +
                           std::to_string(offset_));
  failed_ = false;
  index_ = nextIndex_;
  offset_ = pos_;
  auto fail = [&](Status s, bool canContinue) {
    failed_ = true;
    canContinue_ = canContinue;
    return s;
  };

  unsigned char header[kTfRecordHeaderBytes];
  size_t got = 0;
  KILN_RETURN_IF_ERROR(readFully(header, sizeof(header), got));
  if (got == 0)
    return Status(StatusCode::kOutOfRange, name_ + ": end of file");
  if (got < sizeof(header))
    return fail(corrupt("truncated header: expected 12 bytes, found " +
                        std::to_string(got)),
                false);
  uint64_t length = getLe64(header);
  uint32_t storedLenCrc = unmaskCrc(getLe32(header + 8));
  uint32_t lenCrc = crc32c(header, 8);
  if (storedLenCrc != lenCrc)
    return fail(corrupt("length CRC mismatch (stored " + hex32(storedLenCrc) +
                        ", computed " + hex32(lenCrc) + ")"),
                false);
  // The length is now trusted, but the file may still be cut short; check
  // before allocating so a truncated multi-GB claim does not allocate.
  uint64_t remaining = size_ - pos_;
  if (length + kTfRecordFooterBytes > remaining || length > remaining)
    return fail(corrupt("truncated: record needs " +
                        std::to_string(length + kTfRecordFooterBytes) +
                        " more bytes but only " + std::to_string(remaining) +
                        " remain"),
                false);
  record.resize(length);
  KILN_RETURN_IF_ERROR(readFully(record.data(), length, got));
  unsigned char footer[kTfRecordFooterBytes];
  size_t gotFooter = 0;
  if (got == length)
    KILN_RETURN_IF_ERROR(readFully(footer, sizeof(footer), gotFooter));
  if (got < length || gotFooter < sizeof(footer))
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
