//===- fuzz_manifest.cpp - libFuzzer target: the model manifest reader ----===//
//
// The manifest is the one description of a compiled model the runtime trusts
// for every offset it writes through, so its validation must reject anything
// inconsistent without crashing (ASan) and with a message.
//
//===----------------------------------------------------------------------===//
#include "kiln/rt/exec/manifest.h"

#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view text(reinterpret_cast<const char *>(data), size);
  auto manifest = kiln::rt::exec::parseManifest(text);
  if (!manifest.isOk() && manifest.status().message().empty())
    std::abort();
  return 0;
}
