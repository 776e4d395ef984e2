//===- example.cpp - tf.train.Example wire-format parser and builder ------===//
#include "kiln/rt/example.h"

#include "kiln/rt/protobuf_wire.h"

#include <cstring>

namespace kiln::rt {
namespace {

/// Reads protobuf primitives from a slice of the record, remembering where
/// the slice started so errors can give the absolute byte position.
class Cursor {
public:
  Cursor(std::string_view bytes, size_t base) : bytes_(bytes), base_(base) {}

  bool done() const { return pos_ >= bytes_.size(); }
  size_t position() const { return base_ + pos_; }

  Status error(const std::string &what) const {
    return KILN_STATUS(kDataLoss, "malformed tf.train.Example at byte " +
                                      std::to_string(position()) +
                                      " of the record: " + what);
  }

  Status varint(uint64_t &value) {
    value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= bytes_.size())
        return error("truncated varint");
      uint8_t b = static_cast<uint8_t>(bytes_[pos_++]);
      if (shift == 63 && b > 1)
        return error("varint longer than 64 bits");
      value |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80))
        return Status::ok();
    }
    return error("varint longer than 10 bytes");
  }

  Status tag(uint32_t &field, uint32_t &wireType) {
    uint64_t t;
    KILN_RETURN_IF_ERROR(varint(t));
    field = static_cast<uint32_t>(t >> 3);
    wireType = static_cast<uint32_t>(t & 7);
    if (field == 0 || (t >> 3) > 0x1fffffff)
      return error("invalid field number " + std::to_string(t >> 3));
    return Status::ok();
  }

  Status lengthDelimited(Cursor &sub) {
    uint64_t len;
    KILN_RETURN_IF_ERROR(varint(len));
    if (len > bytes_.size() - pos_)
      return error("length " + std::to_string(len) + " exceeds the " +
                   std::to_string(bytes_.size() - pos_) + " bytes left");
    sub = Cursor(bytes_.substr(pos_, len), base_ + pos_);
    pos_ += len;
    return Status::ok();
  }

  Status fixed32(uint32_t &value) {
    if (bytes_.size() - pos_ < 4)
      return error("truncated fixed32");
    std::memcpy(&value, bytes_.data() + pos_, 4); // little-endian host
    pos_ += 4;
    return Status::ok();
  }

  Status skip(uint32_t wireType) {
    uint64_t ignored;
    Cursor sub({}, 0);
    switch (wireType) {
    case kVarint:
      return varint(ignored);
    case kFixed64:
      if (bytes_.size() - pos_ < 8)
        return error("truncated fixed64");
      pos_ += 8;
      return Status::ok();
    case kLengthDelimited:
      return lengthDelimited(sub);
    case kFixed32:
      if (bytes_.size() - pos_ < 4)
        return error("truncated fixed32");
      pos_ += 4;
      return Status::ok();
    default:
      // Groups are deprecated and never appear in tf.train.Example.
      return error("unsupported wire type " + std::to_string(wireType));
    }
  }

  std::string_view rest() const { return bytes_.substr(pos_); }

private:
  std::string_view bytes_;
  size_t base_;
  size_t pos_ = 0;
};

Status expectWireType(const Cursor &c, uint32_t field, uint32_t got,
                      uint32_t want) {
  if (got == want)
    return Status::ok();
  return c.error("field " + std::to_string(field) + " has wire type " +
                 std::to_string(got) + ", expected " + std::to_string(want));
}

void resetTo(Feature &f, Feature::Kind kind) {
  if (f.kind == kind)
    return; // Same oneof member again: protobuf merges, i.e. appends.
  f = Feature();
  f.kind = kind;
}

Status parseBytesList(Cursor c, Feature &f) {
  while (!c.done()) {
    uint32_t field, wt;
    KILN_RETURN_IF_ERROR(c.tag(field, wt));
    if (field != 1) {
      KILN_RETURN_IF_ERROR(c.skip(wt));
      continue;
    }
    KILN_RETURN_IF_ERROR(expectWireType(c, field, wt, kLengthDelimited));
    Cursor v({}, 0);
    KILN_RETURN_IF_ERROR(c.lengthDelimited(v));
    f.bytes.push_back(v.rest());
  }
  return Status::ok();
}

Status parseFloatList(Cursor c, Feature &f) {
  while (!c.done()) {
    uint32_t field, wt;
    KILN_RETURN_IF_ERROR(c.tag(field, wt));
    if (field != 1) {
      KILN_RETURN_IF_ERROR(c.skip(wt));
      continue;
    }
    uint32_t bits;
    float value;
    if (wt == kFixed32) { // unpacked
      KILN_RETURN_IF_ERROR(c.fixed32(bits));
      std::memcpy(&value, &bits, 4);
      f.floats.push_back(value);
      continue;
    }
    KILN_RETURN_IF_ERROR(expectWireType(c, field, wt, kLengthDelimited));
    Cursor packed({}, 0);
    KILN_RETURN_IF_ERROR(c.lengthDelimited(packed));
    if (packed.rest().size() % 4 != 0)
      return packed.error("packed float list of " +
                          std::to_string(packed.rest().size()) +
                          " bytes is not a multiple of 4");
    while (!packed.done()) {
      KILN_RETURN_IF_ERROR(packed.fixed32(bits));
      std::memcpy(&value, &bits, 4);
      f.floats.push_back(value);
    }
  }
  return Status::ok();
}

Status parseInt64List(Cursor c, Feature &f) {
  while (!c.done()) {
    uint32_t field, wt;
    KILN_RETURN_IF_ERROR(c.tag(field, wt));
    if (field != 1) {
      KILN_RETURN_IF_ERROR(c.skip(wt));
      continue;
    }
    uint64_t v;
    if (wt == kVarint) { // unpacked
      KILN_RETURN_IF_ERROR(c.varint(v));
      f.ints.push_back(static_cast<int64_t>(v));
      continue;
    }
    KILN_RETURN_IF_ERROR(expectWireType(c, field, wt, kLengthDelimited));
    Cursor packed({}, 0);
    KILN_RETURN_IF_ERROR(c.lengthDelimited(packed));
    while (!packed.done()) {
      KILN_RETURN_IF_ERROR(packed.varint(v));
      f.ints.push_back(static_cast<int64_t>(v));
    }
  }
  return Status::ok();
}

Status parseFeature(Cursor c, Feature &f) {
  while (!c.done()) {
    uint32_t field, wt;
    KILN_RETURN_IF_ERROR(c.tag(field, wt));
    if (field < 1 || field > 3) {
      KILN_RETURN_IF_ERROR(c.skip(wt));
      continue;
    }
    KILN_RETURN_IF_ERROR(expectWireType(c, field, wt, kLengthDelimited));
    Cursor list({}, 0);
    KILN_RETURN_IF_ERROR(c.lengthDelimited(list));
    switch (field) {
    case 1:
      resetTo(f, Feature::Kind::kBytes);
      KILN_RETURN_IF_ERROR(parseBytesList(list, f));
      break;
    case 2:
      resetTo(f, Feature::Kind::kFloat);
      KILN_RETURN_IF_ERROR(parseFloatList(list, f));
      break;
    case 3:
      resetTo(f, Feature::Kind::kInt64);
      KILN_RETURN_IF_ERROR(parseInt64List(list, f));
      break;
    }
  }
  return Status::ok();
}

} // namespace

Feature &Example::insert(std::string_view key) {
  for (auto &kv : features_)
    if (kv.first == key)
      return kv.second;
  features_.emplace_back(key, Feature());
  return features_.back().second;
}

Status Example::parse(std::string_view record) {
  features_.clear();
  Cursor example(record, 0);
  while (!example.done()) {
    uint32_t field, wt;
    KILN_RETURN_IF_ERROR(example.tag(field, wt));
    if (field != 1) {
      KILN_RETURN_IF_ERROR(example.skip(wt));
      continue;
    }
    KILN_RETURN_IF_ERROR(expectWireType(example, field, wt, kLengthDelimited));
    Cursor features({}, 0);
    KILN_RETURN_IF_ERROR(example.lengthDelimited(features));
    while (!features.done()) {
      KILN_RETURN_IF_ERROR(features.tag(field, wt));
      if (field != 1) {
        KILN_RETURN_IF_ERROR(features.skip(wt));
        continue;
      }
      KILN_RETURN_IF_ERROR(
          expectWireType(features, field, wt, kLengthDelimited));
      Cursor entry({}, 0);
      KILN_RETURN_IF_ERROR(features.lengthDelimited(entry));
      // A map entry's fields may come in any order; collect both first.
      std::string_view key;
      Feature value;
      while (!entry.done()) {
        KILN_RETURN_IF_ERROR(entry.tag(field, wt));
        if (field == 1 || field == 2) {
          KILN_RETURN_IF_ERROR(
              expectWireType(entry, field, wt, kLengthDelimited));
          Cursor sub({}, 0);
          KILN_RETURN_IF_ERROR(entry.lengthDelimited(sub));
          if (field == 1)
            key = sub.rest();
          else
            KILN_RETURN_IF_ERROR(parseFeature(sub, value));
        } else {
          KILN_RETURN_IF_ERROR(entry.skip(wt));
        }
      }
      // Map semantics: a repeated key replaces the earlier value.
      insert(key) = std::move(value);
    }
  }
  return Status::ok();
}

const Feature *Example::find(std::string_view key) const {
  for (const auto &kv : features_)
    if (kv.first == key)
      return &kv.second;
  return nullptr;
}

StatusOr<std::string_view> Example::getBytes(std::string_view key) const {
  const Feature *f = find(key);
  if (!f)
    return KILN_STATUS(kNotFound, "missing feature '" + std::string(key) + "'");
  if (f->kind != Feature::Kind::kBytes || f->bytes.size() != 1)
    return KILN_STATUS(kDataLoss, "feature '" + std::string(key) +
                                      "' is not a single bytes value");
  return f->bytes[0];
}

StatusOr<int64_t> Example::getInt64(std::string_view key) const {
  const Feature *f = find(key);
  if (!f)
    return KILN_STATUS(kNotFound, "missing feature '" + std::string(key) + "'");
  if (f->kind != Feature::Kind::kInt64 || f->ints.size() != 1)
    return KILN_STATUS(kDataLoss, "feature '" + std::string(key) +
                                      "' is not a single int64 value");
  return f->ints[0];
}

//===----------------------------------------------------------------------===//
// Encoding
//===----------------------------------------------------------------------===//

namespace {
void appendEntry(std::string &entries, std::string_view key,
                 uint32_t featureField, const std::string &list) {
  std::string feature;
  appendLengthDelimited(feature, featureField, list);
  std::string entry;
  appendLengthDelimited(entry, 1, key);
  appendLengthDelimited(entry, 2, feature);
  appendLengthDelimited(entries, 1, entry);
}
} // namespace

ExampleBuilder &ExampleBuilder::addBytes(std::string_view key,
                                         std::string_view value) {
  std::string list;
  appendLengthDelimited(list, 1, value);
  appendEntry(entries_, key, 1, list);
  return *this;
}

ExampleBuilder &ExampleBuilder::addInt64(std::string_view key, int64_t value) {
  return addInt64List(key, {value});
}

ExampleBuilder &
ExampleBuilder::addInt64List(std::string_view key,
                             const std::vector<int64_t> &values) {
  std::string packed;
  for (int64_t v : values)
    appendVarint(packed, static_cast<uint64_t>(v));
  std::string list;
  appendLengthDelimited(list, 1, packed);
  appendEntry(entries_, key, 3, list);
  return *this;
}

ExampleBuilder &ExampleBuilder::addFloatList(std::string_view key,
                                             const std::vector<float> &values) {
  std::string packed(values.size() * 4, '\0');
  if (!values.empty())
    std::memcpy(packed.data(), values.data(), packed.size());
  std::string list;
  appendLengthDelimited(list, 1, packed);
  appendEntry(entries_, key, 2, list);
  return *this;
}

std::string ExampleBuilder::build() const {
  std::string out;
  appendLengthDelimited(out, 1, entries_);
  return out;
}

} // namespace kiln::rt
