//===- crc32c_test.cpp - CRC32C against published vectors -----------------===//
#include "kiln/rt/crc32c.h"
#include "kiln/rt/random.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace kiln::rt {
namespace {

// RFC 3720 (iSCSI) appendix B.4 and the common check value.
TEST(Crc32c, PublishedVectors) {
  EXPECT_EQ(crc32c("123456789", 9), 0xE3069283u);
  std::vector<uint8_t> buf(32, 0x00);
  EXPECT_EQ(crc32c(buf.data(), buf.size()), 0x8A9136AAu);
  std::fill(buf.begin(), buf.end(), 0xFF);
  EXPECT_EQ(crc32c(buf.data(), buf.size()), 0x62A8AB43u);
  for (int i = 0; i < 32; ++i)
    buf[i] = static_cast<uint8_t>(i);
  EXPECT_EQ(crc32c(buf.data(), buf.size()), 0x46DD794Eu);
  for (int i = 0; i < 32; ++i)
    buf[i] = static_cast<uint8_t>(31 - i);
  EXPECT_EQ(crc32c(buf.data(), buf.size()), 0x113FDB5Cu);
  const uint8_t iscsiRead[48] = {
      0x01, 0xC0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00,
      0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x18, 0x28, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
  EXPECT_EQ(crc32c(iscsiRead, sizeof(iscsiRead)), 0xD9963A56u);
  EXPECT_EQ(crc32c("", 0), 0u);
}

TEST(Crc32c, PortableMatchesHardwareAtEveryAlignmentAndLength) {
  std::vector<uint8_t> data(1100);
  Rng rng(7);
  for (auto &b : data)
    b = static_cast<uint8_t>(rng.next());
  for (size_t offset = 0; offset < 9; ++offset)
    for (size_t len : {0, 1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 1000}) {
      uint32_t hw = crc32c(data.data() + offset, len);
      uint32_t sw = crc32cExtendPortable(0, data.data() + offset, len);
      ASSERT_EQ(hw, sw) << "offset " << offset << " len " << len;
    }
}

TEST(Crc32c, ExtendEqualsOneShot) {
  std::string s = "The quick brown fox jumps over the lazy dog, twice over.";
  for (size_t split = 0; split <= s.size(); ++split) {
    uint32_t a = crc32c(s.data(), split);
    EXPECT_EQ(crc32cExtend(a, s.data() + split, s.size() - split),
              crc32c(s.data(), s.size()));
    EXPECT_EQ(crc32cExtendPortable(crc32cExtendPortable(0, s.data(), split),
                                   s.data() + split, s.size() - split),
              crc32c(s.data(), s.size()));
  }
}

TEST(Crc32c, MaskMatchesTensorFlowFormula) {
  // masked = ((crc >> 15) | (crc << 17)) + 0xa282ead8
  uint32_t crc = 0xE3069283u;
  uint32_t expect = ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
  EXPECT_EQ(maskCrc(crc), expect);
  EXPECT_NE(maskCrc(crc), crc);
  for (uint32_t v : {0u, 1u, 0x80000000u, 0xFFFFFFFFu, 0x12345678u})
    EXPECT_EQ(unmaskCrc(maskCrc(v)), v);
}

} // namespace
} // namespace kiln::rt
