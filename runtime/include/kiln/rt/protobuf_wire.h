//===- protobuf_wire.h - Protobuf wire-format encoding ----------*- C++ -*-===//
//
// The few protobuf encoding primitives the runtime needs for the two message
// families it writes without a protobuf library: tf.train.Example (kiln-data's
// shards, example.h) and TensorBoard's Event (events.h). Little-endian
// fixed-width fields, as the wire format defines them.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RT_PROTOBUF_WIRE_H
#define KILN_RT_PROTOBUF_WIRE_H

#include <cstdint>
#include <string>
#include <string_view>

namespace kiln::rt {

enum WireType : uint32_t {
  kVarint = 0,
  kFixed64 = 1,
  kLengthDelimited = 2,
  kStartGroup = 3,
  kEndGroup = 4,
  kFixed32 = 5,
};

void appendVarint(std::string &out, uint64_t value);
void appendTag(std::string &out, uint32_t field, uint32_t wireType);
void appendLengthDelimited(std::string &out, uint32_t field,
                           std::string_view payload);
/// A `double` (wire type kFixed64) or `float` (kFixed32) field's payload.
void appendFixed64(std::string &out, double value);
void appendFixed32(std::string &out, float value);

} // namespace kiln::rt

#endif // KILN_RT_PROTOBUF_WIRE_H
