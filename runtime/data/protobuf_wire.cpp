//===- protobuf_wire.cpp - Protobuf wire-format encoding ------------------===//
#include "kiln/rt/protobuf_wire.h"

#include <cstring>

namespace kiln::rt {

void appendVarint(std::string &out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

void appendTag(std::string &out, uint32_t field, uint32_t wireType) {
  appendVarint(out, (uint64_t(field) << 3) | wireType);
}

void appendLengthDelimited(std::string &out, uint32_t field,
                           std::string_view payload) {
  appendTag(out, field, kLengthDelimited);
  appendVarint(out, payload.size());
  out.append(payload.data(), payload.size());
}

namespace {
template <typename Word, typename Value> void appendLittleEndian(std::string &out, Value value) {
  Word bits;
  static_assert(sizeof(bits) == sizeof(value));
  std::memcpy(&bits, &value, sizeof(bits));
  for (size_t i = 0; i < sizeof(bits); ++i)
    out.push_back(static_cast<char>(bits >> (8 * i)));
}
} // namespace

void appendFixed64(std::string &out, double value) {
  appendLittleEndian<uint64_t>(out, value);
}

void appendFixed32(std::string &out, float value) {
  appendLittleEndian<uint32_t>(out, value);
}

} // namespace kiln::rt
