//===- fuzz_example.cpp - libFuzzer target: tf.train.Example parser -------===//
#include "kiln/rt/example.h"

#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace kiln::rt;
  std::string_view bytes(reinterpret_cast<const char *>(data), size);
  Example ex;
  kiln::Status s = ex.parse(bytes);
  if (!s.isOk()) {
    if (s.code() != kiln::StatusCode::kDataLoss)
      std::abort();
    return 0;
  }
  // Every view must point inside the input.
  auto inside = [&](std::string_view v) {
    return v.empty() || (v.data() >= bytes.data() &&
                         v.data() + v.size() <= bytes.data() + bytes.size());
  };
  for (const auto &[key, feature] : ex.features()) {
    if (!inside(key))
      std::abort();
    for (std::string_view b : feature.bytes)
      if (!inside(b))
        std::abort();
    (void)ex.getBytes(key);
    (void)ex.getInt64(key);
  }
  // Re-encoding what was parsed and parsing again gives the same features.
  ExampleBuilder builder;
  for (const auto &[key, f] : ex.features()) {
    if (f.kind == Feature::Kind::kInt64)
      builder.addInt64List(key, f.ints);
    else if (f.kind == Feature::Kind::kBytes && f.bytes.size() == 1)
      builder.addBytes(key, f.bytes[0]);
  }
  std::string again = builder.build();
  Example ex2;
  if (!ex2.parse(again).isOk())
    std::abort();
  for (const auto &[key, f] : ex2.features()) {
    const Feature *orig = ex.find(key);
    if (!orig || orig->kind != f.kind || orig->ints != f.ints ||
        orig->bytes != f.bytes)
      std::abort();
  }
  return 0;
}
