//===- idx_test.cpp - IDX reading, plain and gzip -------------------------===//
#include "test_util.h"

#include "kiln/rt/idx.h"

#include <zlib.h>

namespace kiln::rt {
namespace {

std::string idxBytes(std::vector<uint32_t> dims,
                     const std::vector<uint8_t> &data) {
  std::string s = {0, 0, 8, static_cast<char>(dims.size())};
  for (uint32_t d : dims)
    for (int i = 3; i >= 0; --i)
      s.push_back(static_cast<char>(d >> (8 * i)));
  s.append(data.begin(), data.end());
  return s;
}

void writeGzip(const std::string &path, const std::string &bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())),
            int(bytes.size()));
  ASSERT_EQ(gzclose(f), Z_OK);
}

TEST(Idx, PlainAndGzipReadTheSame) {
  test::TempDir dir;
  std::vector<uint8_t> pixels(3 * 2 * 5);
  for (size_t i = 0; i < pixels.size(); ++i)
    pixels[i] = static_cast<uint8_t>(i * 7);
  std::string bytes = idxBytes({3, 2, 5}, pixels);
  test::writeFile(dir.path() + "/plain", bytes);
  writeGzip(dir.path() + "/packed.gz", bytes);
  for (const char *name : {"/plain", "/packed.gz"}) {
    auto a = readIdxFile(dir.path() + name);
    ASSERT_TRUE(a.isOk()) << a.status().toString();
    EXPECT_EQ(a->dims, (std::vector<uint32_t>{3, 2, 5}));
    EXPECT_EQ(a->data, pixels);
    EXPECT_EQ(a->count(), 3u);
    EXPECT_EQ(a->itemBytes(), 10u);
  }
}

TEST(Idx, BadFilesAreNamedErrors) {
  test::TempDir dir;
  std::string good = idxBytes({4}, {1, 2, 3, 4});
  test::writeFile(dir.path() + "/short", good.substr(0, good.size() - 1));
  auto s = readIdxFile(dir.path() + "/short");
  EXPECT_EQ(s.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(s.status().message().find(dir.path() + "/short: truncated"),
            std::string::npos)
      << s.status().message();
  test::writeFile(dir.path() + "/long", good + "x");
  EXPECT_EQ(readIdxFile(dir.path() + "/long").status().code(),
            StatusCode::kDataLoss);
  test::writeFile(dir.path() + "/magic", "\x01\x02\x08\x01");
  EXPECT_EQ(readIdxFile(dir.path() + "/magic").status().code(),
            StatusCode::kDataLoss);
  std::string floats = good;
  floats[2] = 0x0D;
  test::writeFile(dir.path() + "/floats", floats);
  EXPECT_EQ(readIdxFile(dir.path() + "/floats").status().code(),
            StatusCode::kUnimplemented);
  EXPECT_EQ(readIdxFile(dir.path() + "/missing").status().code(),
            StatusCode::kNotFound);
  // Corrupt gzip stream.
  writeGzip(dir.path() + "/c.gz", idxBytes({64}, std::vector<uint8_t>(64, 9)));
  std::string gz = test::readFileBytes(dir.path() + "/c.gz");
  gz[gz.size() / 2] ^= 0xFF;
  gz[gz.size() / 2 + 1] ^= 0xFF;
  test::writeFile(dir.path() + "/c.gz", gz);
  EXPECT_FALSE(readIdxFile(dir.path() + "/c.gz").isOk());
  // Images and labels disagree on the count.
  test::writeFile(dir.path() + "/img", idxBytes({2, 1, 1}, {5, 6}));
  test::writeFile(dir.path() + "/lab", idxBytes({3}, {0, 1, 2}));
  auto pair = readIdxPair(dir.path() + "/img", dir.path() + "/lab");
  EXPECT_EQ(pair.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(pair.status().message().find("holds 2 images but"),
            std::string::npos);
}

} // namespace
} // namespace kiln::rt
