//===- example.h - tf.train.Example parsing and encoding --------*- C++ -*-===//
//
// The protobuf wire format of tf.train.Example, by hand (no protobuf
// dependency):
//   Example  { Features features = 1; }
//   Features { map<string, Feature> feature = 1; }   // entries: key=1, value=2
//   Feature  { oneof { BytesList bytes_list = 1; FloatList float_list = 2;
//                      Int64List int64_list = 3; } }
//   BytesList { repeated bytes value = 1; }
//   FloatList { repeated float value = 1 [packed]; }
//   Int64List { repeated int64 value = 1 [packed]; }
// Packed and unpacked encodings of the repeated scalars are both accepted, as
// protobuf parsers must. Unknown fields are skipped.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RT_EXAMPLE_H
#define KILN_RT_EXAMPLE_H

#include "kiln/base/status.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::rt {

/// One feature's values. Bytes values point into the parsed record.
struct Feature {
  enum class Kind { kNone, kBytes, kFloat, kInt64 };
  Kind kind = Kind::kNone;
  std::vector<std::string_view> bytes;
  std::vector<float> floats;
  std::vector<int64_t> ints;
};

/// A parsed Example; views into the record bytes, which must outlive it.
class Example {
public:
  /// Parses `record`. kDataLoss with a byte position on malformed input.
  Status parse(std::string_view record);

  /// Null if the key is absent.
  const Feature *find(std::string_view key) const;
  size_t size() const { return features_.size(); }
  const std::vector<std::pair<std::string_view, Feature>> &features() const {
    return features_;
  }

  /// Typed accessors: kNotFound if the key is missing, kDataLoss if it has
  /// the wrong kind or not exactly one value. Messages name the key.
  StatusOr<std::string_view> getBytes(std::string_view key) const;
  StatusOr<int64_t> getInt64(std::string_view key) const;

private:
  Feature &insert(std::string_view key);
  std::vector<std::pair<std::string_view, Feature>> features_;
};

/// Encodes an Example as TensorFlow does (packed repeated scalars, keys in
/// insertion order).
class ExampleBuilder {
public:
  ExampleBuilder &addBytes(std::string_view key, std::string_view value);
  ExampleBuilder &addInt64(std::string_view key, int64_t value);
  ExampleBuilder &addInt64List(std::string_view key,
                               const std::vector<int64_t> &values);
  ExampleBuilder &addFloatList(std::string_view key,
                               const std::vector<float> &values);
  /// The serialized Example.
  std::string build() const;

private:
  std::string entries_; // serialized map entries (Features field 1)
};

} // namespace kiln::rt

#endif // KILN_RT_EXAMPLE_H
