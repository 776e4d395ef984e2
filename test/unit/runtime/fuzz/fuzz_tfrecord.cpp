//===- fuzz_tfrecord.cpp - libFuzzer target: TFRecord reader + Example ----===//
//
// Feeds arbitrary bytes to the record reader as a file's contents, and every
// record it accepts to the Example parser. Nothing may crash, hang or
// allocate without bound; errors must keep the reader's contract.
//
// Inputs that start like a GZIP or ZLIB stream exercise inflation directly.
// Every other input is also read GZIP- and ZLIB-compressed (as TensorFlow
// writes such files) and must give the same records and the same error at
// the same record and offset as the plain read: offsets count uncompressed
// bytes either way.
//
//===----------------------------------------------------------------------===//
#include "kiln/rt/example.h"
#include "kiln/rt/tfrecord.h"

#include <cstdlib>
#include <string>
#include <vector>
#include <zlib.h>

namespace {

using namespace kiln::rt;

struct Outcome {
  std::vector<std::string> records;
  kiln::StatusCode end = kiln::StatusCode::kOk;
  uint64_t index = 0, offset = 0;
  std::string message;
};

Outcome readAll(std::string_view bytes) {
  Outcome out;
  auto reader = RecordReader::fromMemory("fuzz", bytes);
  std::string record;
  Example example;
  for (int guard = 0; guard < 100000; ++guard) {
    kiln::Status s = reader->next(record);
    if (s.code() == kiln::StatusCode::kOutOfRange)
      break;
    if (!s.isOk()) {
      if (s.code() != kiln::StatusCode::kDataLoss ||
          s.message().find("fuzz: record ") != 0)
        std::abort(); // every corruption must be named with its record
      if (reader->canContinue())
        continue; // a data CRC mismatch: the framing holds
      out.end = s.code();
      out.index = reader->recordIndex();
      out.offset = reader->recordOffset();
      out.message = s.message();
      break;
    }
    (void)example.parse(record);
    out.records.push_back(record);
  }
  return out;
}

std::string compress(std::string_view bytes, int windowBits) {
  z_stream z{};
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, windowBits, 8,
                   Z_DEFAULT_STRATEGY) != Z_OK)
    std::abort();
  std::string out(deflateBound(&z, bytes.size()), '\0');
  z.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(bytes.data()));
  z.avail_in = static_cast<uInt>(bytes.size());
  z.next_out = reinterpret_cast<Bytef *>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  if (deflate(&z, Z_FINISH) != Z_STREAM_END)
    std::abort();
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char *>(data), size);
  Outcome plain = readAll(bytes);
  for (const std::string &r : plain.records)
    if (r.size() > size)
      std::abort();
  if (detectTfRecordCompression(bytes) != TfRecordCompression::kNone)
    return 0;
  for (int windowBits : {15, 15 + 16}) {
    Outcome packed = readAll(compress(bytes, windowBits));
    // A plain truncation is found before reading the record (the file size
    // is known); a compressed one when the stream runs dry. Both name the
    // same record at the same offset.
    if (packed.records != plain.records || packed.end != plain.end ||
        packed.index != plain.index || packed.offset != plain.offset)
      std::abort();
  }
  return 0;
}
