//===- fuzz_safetensors.cpp - libFuzzer target: safetensors reader --------===//
//
// Checkpoints come back from disk and from other tools. Beyond "no crash, no
// leak" (ASan), an accepted file must be self-consistent: every tensor's bytes
// match its dtype and shape, and serializing what was read and parsing that
// again gives the same tensors and metadata.
//
//===----------------------------------------------------------------------===//
#include "kiln/rt/safetensors.h"

#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  namespace st = kiln::rt::safetensors;
  st::File file;
  kiln::Status status;
  if (!(status = st::parse(data, size, "fuzz.safetensors", file)).isOk()) {
    if (status.message().rfind("fuzz.safetensors", 0) != 0)
      std::abort(); // every message names the file
    return 0;
  }
  for (const st::Tensor &t : file.tensors) {
    int64_t n = t.numElements();
    if (n < 0 ||
        t.bytes.size() != static_cast<size_t>(n) * st::dtypeSize(t.dtype))
      std::abort();
  }
  std::vector<uint8_t> image;
  if (!(status = st::serialize(file, image)).isOk())
    return 0; // e.g. an empty tensor name the reader accepts but no writer
              // makes
  st::File again;
  if (!(status = st::parse(image.data(), image.size(), "again", again)).isOk())
    std::abort();
  if (again.metadata != file.metadata ||
      again.tensors.size() != file.tensors.size())
    std::abort();
  for (const st::Tensor &t : file.tensors) {
    const st::Tensor *u = again.find(t.name);
    if (!u || u->dtype != t.dtype || u->shape != t.shape || u->bytes != t.bytes)
      std::abort();
  }
  return 0;
}
