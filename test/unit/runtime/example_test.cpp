//===- example_test.cpp - tf.train.Example parsing of hand-encoded bytes --===//
#include "kiln/rt/example.h"
#include "kiln/rt/protobuf_wire.h"

#include <gtest/gtest.h>

namespace kiln::rt {
namespace {

std::string bytesOf(std::initializer_list<int> v) {
  std::string s;
  for (int b : v)
    s.push_back(static_cast<char>(b));
  return s;
}

// Example{features{feature{key:"k" value{int64_list{value:1 value:300}}}}},
// the repeated field unpacked, written out byte by byte.
const std::string kUnpackedInt64 =
    bytesOf({0x0A, 0x0E,                     // Example.features, 14 bytes
             0x0A, 0x0C,                     // Features.feature entry, 12 bytes
             0x0A, 0x01, 'k',                // key
             0x12, 0x07,                     // value: Feature, 7 bytes
             0x1A, 0x05,                     // Feature.int64_list, 5 bytes
             0x08, 0x01, 0x08, 0xAC, 0x02}); // value 1, value 300 (varints)

// The same with the values packed: Int64List.value as one length-delimited
// field holding both varints.
const std::string kPackedInt64 =
    bytesOf({0x0A, 0x0E, 0x0A, 0x0C, 0x0A, 0x01, 'k', 0x12, 0x07, 0x1A, 0x05,
             0x0A, 0x03, 0x01, 0xAC, 0x02});

TEST(Example, UnpackedAndPackedInt64AreEqual) {
  for (const std::string *bytes : {&kUnpackedInt64, &kPackedInt64}) {
    Example ex;
    ASSERT_TRUE(ex.parse(*bytes).isOk());
    const Feature *f = ex.find("k");
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->kind, Feature::Kind::kInt64);
    EXPECT_EQ(f->ints, (std::vector<int64_t>{1, 300}));
  }
}

// Wraps hand-encoded Feature payloads into an Example.
std::string
exampleWith(const std::vector<std::pair<std::string, std::string>> &features) {
  std::string entries;
  for (const auto &[key, feature] : features) {
    std::string entry;
    appendLengthDelimited(entry, 1, key);
    appendLengthDelimited(entry, 2, feature);
    appendLengthDelimited(entries, 1, entry);
  }
  std::string out;
  appendLengthDelimited(out, 1, entries);
  return out;
}

TEST(Example, FloatListsPackedAndUnpacked) {
  // 1.5f = 0x3FC00000, -2.0f = 0xC0000000, little-endian fixed32.
  std::string unpacked = bytesOf(
      {0x12, 0x0A, 0x0D, 0x00, 0x00, 0xC0, 0x3F, 0x0D, 0x00, 0x00, 0x00, 0xC0});
  std::string packed = bytesOf(
      {0x12, 0x0A, 0x0A, 0x08, 0x00, 0x00, 0xC0, 0x3F, 0x00, 0x00, 0x00, 0xC0});
  // The parsed views point into the record: keep it alive.
  const std::string record = exampleWith({{"u", unpacked}, {"p", packed}});
  Example ex;
  ASSERT_TRUE(ex.parse(record).isOk());
  for (const char *key : {"u", "p"}) {
    const Feature *f = ex.find(key);
    ASSERT_NE(f, nullptr) << key;
    EXPECT_EQ(f->kind, Feature::Kind::kFloat);
    EXPECT_EQ(f->floats, (std::vector<float>{1.5f, -2.0f})) << key;
  }
}

TEST(Example, BytesListsNegativeIntsAndUnknownFields) {
  std::string bytesFeature =
      bytesOf({0x0A, 0x06, 0x0A, 0x02, 'x', 'y', 0x0A, 0x00});
  // int64 -1 is a 10-byte varint.
  std::string negative = bytesOf({0x1A, 0x0B, 0x08, 0xFF, 0xFF, 0xFF, 0xFF,
                                  0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01});
  std::string ex = exampleWith({{"b", bytesFeature}, {"n", negative}});
  // Unknown fields in Example (field 5, varint; field 6, fixed64) are skipped.
  ex += bytesOf({0x28, 0x07, 0x31, 1, 2, 3, 4, 5, 6, 7, 8});
  Example parsed;
  ASSERT_TRUE(parsed.parse(ex).isOk());
  const Feature *b = parsed.find("b");
  ASSERT_NE(b, nullptr);
  ASSERT_EQ(b->bytes.size(), 2u);
  EXPECT_EQ(b->bytes[0], "xy");
  EXPECT_EQ(b->bytes[1], "");
  auto n = parsed.getInt64("n");
  ASSERT_TRUE(n.isOk());
  EXPECT_EQ(*n, -1);
  EXPECT_EQ(parsed.find("missing"), nullptr);
}

TEST(Example, RepeatedKeyKeepsTheLastValue) {
  std::string one = bytesOf({0x1A, 0x02, 0x08, 0x01});
  std::string two = bytesOf({0x1A, 0x02, 0x08, 0x02});
  const std::string record = exampleWith({{"k", one}, {"k", two}});
  Example ex;
  ASSERT_TRUE(ex.parse(record).isOk());
  EXPECT_EQ(ex.size(), 1u);
  EXPECT_EQ(*ex.getInt64("k"), 2);
}

TEST(Example, BuilderRoundTrip) {
  std::string big(100000, 'z');
  std::string bytes = ExampleBuilder()
                          .addBytes("image/encoded", big)
                          .addInt64("image/class/label", 1000)
                          .addInt64List("ints", {-5, 0, int64_t(1) << 40})
                          .addFloatList("floats", {0.25f, -1e30f})
                          .build();
  Example ex;
  ASSERT_TRUE(ex.parse(bytes).isOk());
  EXPECT_EQ(*ex.getBytes("image/encoded"), big);
  EXPECT_EQ(*ex.getInt64("image/class/label"), 1000);
  EXPECT_EQ(ex.find("ints")->ints,
            (std::vector<int64_t>{-5, 0, int64_t(1) << 40}));
  EXPECT_EQ(ex.find("floats")->floats, (std::vector<float>{0.25f, -1e30f}));
}

TEST(Example, TypedGettersNameTheKey) {
  std::string bytes = ExampleBuilder().addInt64("image/class/label", 3).build();
  Example ex;
  ASSERT_TRUE(ex.parse(bytes).isOk());
  auto missing = ex.getBytes("image/encoded");
  ASSERT_FALSE(missing.isOk());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("missing feature 'image/encoded'"),
            std::string::npos);
  auto wrongKind = ex.getBytes("image/class/label");
  EXPECT_EQ(wrongKind.status().code(), StatusCode::kDataLoss);
}

TEST(Example, EveryTruncationIsAnErrorNotACrash) {
  std::string bytes = ExampleBuilder()
                          .addBytes("a", "hello")
                          .addInt64List("b", {1, 2, 300})
                          .addFloatList("c", {1.0f})
                          .build();
  for (size_t n = 1; n < bytes.size(); ++n) {
    Example ex;
    Status s = ex.parse(std::string_view(bytes.data(), n));
    EXPECT_EQ(s.code(), StatusCode::kDataLoss) << "prefix " << n;
  }
}

TEST(Example, MalformedInputsGiveBytePositions) {
  Example ex;
  // Length runs past the end.
  Status s = ex.parse(bytesOf({0x0A, 0x05, 0x0A}));
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("at byte 2"), std::string::npos) << s.message();
  // Wrong wire type for Example.features.
  EXPECT_EQ(ex.parse(bytesOf({0x08, 0x01})).code(), StatusCode::kDataLoss);
  // Group wire type.
  EXPECT_EQ(ex.parse(bytesOf({0x0B})).code(), StatusCode::kDataLoss);
  // Packed floats whose size is not a multiple of 4.
  std::string badFloat = bytesOf({0x12, 0x05, 0x0A, 0x03, 0, 0, 0});
  EXPECT_EQ(ex.parse(exampleWith({{"f", badFloat}})).code(),
            StatusCode::kDataLoss);
  // An 11-byte varint.
  EXPECT_EQ(ex.parse(bytesOf({0x28, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
                              0xFF, 0xFF, 0xFF, 0x01}))
                .code(),
            StatusCode::kDataLoss);
  // Field number 0.
  EXPECT_EQ(ex.parse(bytesOf({0x02, 0x00})).code(), StatusCode::kDataLoss);
}

} // namespace
} // namespace kiln::rt
