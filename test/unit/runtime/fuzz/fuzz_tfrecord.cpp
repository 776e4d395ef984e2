//===- fuzz_tfrecord.cpp - libFuzzer target: TFRecord reader + Example ----===//
//
// Feeds arbitrary bytes to the record reader as a file's contents, and every
// record it accepts to the Example parser. Nothing may crash, hang or
// allocate without bound; errors must keep the reader's contract.
//
//===----------------------------------------------------------------------===//
#include "kiln/rt/example.h"
#include "kiln/rt/tfrecord.h"

#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace kiln::rt;
  auto reader = RecordReader::fromMemory(
      "fuzz", std::string_view(reinterpret_cast<const char *>(data), size));
  std::string record;
  Example example;
  for (int guard = 0; guard < 100000; ++guard) {
    Status s = reader->next(record);
    if (s.code() == StatusCode::kOutOfRange)
      break;
    if (!s.isOk()) {
      if (s.code() != StatusCode::kDataLoss ||
          s.message().find("fuzz: record ") != 0)
        std::abort(); // every corruption must be named with its record
      if (!reader->canContinue())
        break;
      continue;
    }
    if (record.size() > size)
      std::abort();
    (void)example.parse(record);
  }
  return 0;
}
