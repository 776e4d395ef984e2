//===- fuzz_manifest.cpp - libFuzzer target: the model manifest reader ----===//
//
// The manifest is the one description of a compiled model the runtime trusts
// for every offset it writes through, so the schema's verifier and the
// runtime's validation must reject any bytes that are inconsistent without
// crashing (ASan) and with a message.
//
//===----------------------------------------------------------------------===//
#include "kiln/rt/exec/manifest.h"

#include <cstdlib>
#include <cstring>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // FlatBuffers reads scalars in place: give the bytes the alignment the
  // object file gives them (8).
  std::vector<uint64_t> aligned((size + 7) / 8);
  if (size)
    std::memcpy(aligned.data(), data, size);
  auto manifest = kiln::rt::exec::parseManifest(
      kiln::rt::exec::manifestBytes(
          reinterpret_cast<const uint8_t *>(aligned.data()), size));
  if (!manifest.isOk() && manifest.status().message().empty())
    std::abort();
  return 0;
}
