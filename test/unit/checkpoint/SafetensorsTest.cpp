//===- SafetensorsTest.cpp - kiln_safetensors
//------------------------------===//

#include "kiln/rt/safetensors.h"

#include "gtest/gtest.h"

#include <csignal>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

namespace st = kiln::rt::safetensors;

namespace {

/// A fresh empty folder per test, removed afterwards.
class SafetensorsTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::string templ = ::testing::TempDir() + "kiln-st-XXXXXX";
    std::vector<char> buffer(templ.begin(), templ.end());
    buffer.push_back('\0');
    ASSERT_NE(::mkdtemp(buffer.data()), nullptr);
    dir = buffer.data();
  }
  void TearDown() override {
    for (const std::string &name : entries())
      std::remove((dir + "/" + name).c_str());
    ::rmdir(dir.c_str());
  }

  /// Names in the folder, "." and ".." excluded.
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    if (DIR *d = ::opendir(dir.c_str())) {
      while (dirent *e = ::readdir(d))
        if (std::strcmp(e->d_name, ".") && std::strcmp(e->d_name, ".."))
          names.push_back(e->d_name);
      ::closedir(d);
    }
    std::sort(names.begin(), names.end());
    return names;
  }

  std::string path(const std::string &name) const { return dir + "/" + name; }

  std::string dir;
};

st::File sampleFile() {
  st::File file;
  file.tensors.push_back(
      st::fromF32("conv1.weight", {2, 3}, {1, -2, 3.5f, 0, 1e-30f, -0.0f}));
  file.tensors.push_back(st::fromBf16Bits("act", {2}, {0x3f80, 0xc000}));
  file.tensors.push_back(
      st::fromF64("kiln.lr_schedule", {4}, {0.1, 260, 4.8, 4680}));
  file.tensors.push_back(st::fromI32("labels", {3}, {0, 9, -1}));
  file.tensors.push_back(st::fromI64("step", {}, {1234567890123LL}));
  file.tensors.push_back(st::fromF32("empty", {0, 4}, {}));
  file.tensors.push_back(st::fromF32("quote\"and\\slash/ü", {1}, {7}));
  file.metadata["format"] = "kiln-variables";
  file.metadata["note"] = "line\nbreak";
  return file;
}

std::vector<uint8_t> image(const std::string &header,
                           const std::vector<uint8_t> &data) {
  std::vector<uint8_t> bytes(8);
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i)
    bytes[i] = static_cast<uint8_t>(n >> (8 * i));
  bytes.insert(bytes.end(), header.begin(), header.end());
  bytes.insert(bytes.end(), data.begin(), data.end());
  return bytes;
}

/// Parses an image; returns the error ("" on success).
std::string parseError(const std::vector<uint8_t> &bytes) {
  st::File file;
  kiln::Status status;
  if ((status = st::parse(bytes.data(), bytes.size(), "x.safetensors", file))
          .isOk())
    return "";
  EXPECT_FALSE(status.message().empty());
  return status.message();
}

void writeBytes(const std::string &p, const std::vector<uint8_t> &bytes) {
  std::ofstream out(p, std::ios::binary);
  out.write(reinterpret_cast<const char *>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

std::vector<uint8_t> readBytes(const std::string &p) {
  std::ifstream in(p, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

TEST_F(SafetensorsTest, RoundTripsEveryDTypeAndMetadata) {
  st::File file = sampleFile();
  kiln::Status status;
  ASSERT_TRUE((status = st::write(path("m.safetensors"), file)).isOk())
      << status.message();
  st::File back;
  ASSERT_TRUE((status = st::read(path("m.safetensors"), back)).isOk())
      << status.message();
  EXPECT_EQ(back.metadata, file.metadata);
  ASSERT_EQ(back.tensors.size(), file.tensors.size());
  for (const st::Tensor &t : file.tensors) {
    const st::Tensor *u = back.find(t.name);
    ASSERT_NE(u, nullptr) << t.name;
    EXPECT_EQ(u->dtype, t.dtype) << t.name;
    EXPECT_EQ(u->shape, t.shape) << t.name;
    EXPECT_EQ(u->bytes, t.bytes) << t.name;
  }
  EXPECT_EQ(st::toF32(*back.find("conv1.weight")),
            (std::vector<float>{1, -2, 3.5f, 0, 1e-30f, -0.0f}));
  EXPECT_EQ(st::toBf16Bits(*back.find("act")),
            (std::vector<uint16_t>{0x3f80, 0xc000}));
  EXPECT_EQ(st::toF64(*back.find("kiln.lr_schedule")),
            (std::vector<double>{0.1, 260, 4.8, 4680}));
  EXPECT_EQ(st::toI32(*back.find("labels")), (std::vector<int32_t>{0, 9, -1}));
  EXPECT_EQ(st::toI64(*back.find("step")),
            (std::vector<int64_t>{1234567890123LL}));
  EXPECT_TRUE(back.find("empty")->bytes.empty());
  EXPECT_EQ(back.find("missing"), nullptr);
}

TEST_F(SafetensorsTest, WritesLittleEndianAlignedLayout) {
  st::File file;
  file.tensors.push_back(st::fromF32("a", {1}, {1.0f}));
  file.tensors.push_back(st::fromI64("b", {}, {-2}));
  std::vector<uint8_t> bytes;
  kiln::Status status;
  ASSERT_TRUE((status = st::serialize(file, bytes)).isOk()) << status.message();
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i)
    n |= static_cast<uint64_t>(bytes[i]) << (8 * i);
  EXPECT_EQ((8 + n) % 8, 0u);
  std::string header(bytes.begin() + 8, bytes.begin() + 8 + n);
  EXPECT_EQ(header.substr(0, header.find_last_not_of(' ') + 1),
            R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
            R"("b":{"dtype":"I64","shape":[],"data_offsets":[4,12]}})");
  std::vector<uint8_t> data(bytes.begin() + 8 + n, bytes.end());
  EXPECT_EQ(data, (std::vector<uint8_t>{0x00, 0x00, 0x80, 0x3f, 0xfe, 0xff,
                                        0xff, 0xff, 0xff, 0xff, 0xff, 0xff}));
}

TEST_F(SafetensorsTest, ReadsAHandWrittenFile) {
  // As another writer might lay it out: reverse data order, metadata last,
  // escapes and whitespace in the header.
  std::string header =
      R"( { "b" : {"shape":[2],"dtype":"I32","data_offsets":[0,8]},)"
      R"( "a\u00fc":{"dtype":"F32","shape":[],"data_offsets":[8,12]},)"
      R"("__metadata__":{"k":"v"}} )";
  st::File file;
  kiln::Status status;
  auto bytes = image(header, {1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0x20, 0x41});
  ASSERT_TRUE(
      (status = st::parse(bytes.data(), bytes.size(), "h", file)).isOk())
      << status.message();
  ASSERT_EQ(file.tensors.size(), 2u);
  EXPECT_EQ(file.tensors[0].name, "b");
  EXPECT_EQ(st::toI32(file.tensors[0]), (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(file.tensors[1].name, "a\xc3\xbc");
  EXPECT_EQ(st::toF32(file.tensors[1]), (std::vector<float>{10.0f}));
  EXPECT_EQ(file.metadata.at("k"), "v");
}

TEST_F(SafetensorsTest, RejectsCorruptHeadersNamingFileAndTensor) {
  auto entry = [](const std::string &name, const std::string &body) {
    return "{\"" + name + "\":" + body + "}";
  };
  std::vector<uint8_t> eight(8, 0);
  struct Case {
    const char *what;
    std::vector<uint8_t> bytes;
    const char *expected;
  } cases[] = {
      {"too short", {1, 2, 3}, "x.safetensors: truncated: 3 bytes"},
      {"header size beyond the file", image("{}", {}), ""},
      {"bad JSON", image("{\"a\":", {}), "x.safetensors: bad JSON header"},
      {"trailing JSON", image("{} x", {}), "unexpected characters"},
      {"not an object", image("[]", {}), "not an object"},
      {"duplicate key",
       image(
           R"({"a":{"dtype":"F32","shape":[],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[],"data_offsets":[4,8]}})",
           eight),
       "duplicate key \"a\""},
      {"unknown dtype",
       image(entry("w", R"({"dtype":"F8","shape":[1],"data_offsets":[0,1]})"),
             {0}),
       "x.safetensors: tensor 'w': unknown dtype \"F8\""},
      {"negative dim",
       image(entry("w", R"({"dtype":"F32","shape":[-1],"data_offsets":[0,4]})"),
             {0, 0, 0, 0}),
       "tensor 'w': shape holds"},
      {"missing field", image(entry("w", R"({"dtype":"F32","shape":[1]})"), {}),
       "tensor 'w': header entry needs"},
      {"unknown field",
       image(entry("w",
                   R"({"dtype":"F32","shape":[],"data_offsets":[0,4],"x":1})"),
             {0, 0, 0, 0}),
       "tensor 'w': unknown header field \"x\""},
      {"size mismatch",
       image(
           entry("w", R"({"dtype":"F32","shape":[2,3],"data_offsets":[0,12]})"),
           std::vector<uint8_t>(12)),
       "tensor 'w': data_offsets [0, 12] hold 12 bytes, but F32 [2,3] needs "
       "24"},
      {"offsets reversed",
       image(entry("w", R"({"dtype":"U8","shape":[0],"data_offsets":[4,0]})"),
             std::vector<uint8_t>(4)),
       "end before they begin"},
      {"beyond the data",
       image(entry("w", R"({"dtype":"F32","shape":[2],"data_offsets":[0,8]})"),
             std::vector<uint8_t>(4)),
       "tensor 'w': data_offsets [0, 8] reach beyond the 4 data bytes"},
      {"overlap",
       image(
           R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
           eight),
       "tensor 'b': data_offsets [4, 8] overlap tensor 'a'"},
      {"gap",
       image(entry("w", R"({"dtype":"F32","shape":[1],"data_offsets":[4,8]})"),
             eight),
       "tensor 'w': data_offsets begin at 4, leaving a gap"},
      {"trailing data",
       image(entry("w", R"({"dtype":"F32","shape":[1],"data_offsets":[0,4]})"),
             eight),
       "4 bytes after the last tensor"},
      {"metadata not strings", image(R"({"__metadata__":{"a":1}})", {}),
       "__metadata__ value of \"a\" is not a string"},
      {"deep nesting", image(std::string(100, '[') + std::string(100, ']'), {}),
       "nested too deeply"},
      {"bad escape", image("{\"a\\q\":1}", {}), "invalid escape"},
  };
  // The header-size case: claim 100 header bytes where there are 2.
  cases[1].bytes[0] = 100;
  cases[1].expected = "header size 100 exceeds the file (2 bytes";
  for (const Case &c : cases) {
    std::string error = parseError(c.bytes);
    EXPECT_NE(error.find(c.expected), std::string::npos)
        << c.what << ": got \"" << error << "\"";
    EXPECT_EQ(error.rfind("x.safetensors", 0), 0u) << c.what << ": " << error;
  }
}

TEST_F(SafetensorsTest, RejectsATruncatedFileOnDisk) {
  kiln::Status status;
  ASSERT_TRUE((status = st::write(path("t.safetensors"), sampleFile())).isOk())
      << status.message();
  std::vector<uint8_t> bytes = readBytes(path("t.safetensors"));
  for (size_t keep : {bytes.size() - 1, bytes.size() / 2, size_t(7)}) {
    writeBytes(path("cut.safetensors"),
               std::vector<uint8_t>(bytes.begin(), bytes.begin() + keep));
    st::File file;
    EXPECT_FALSE((status = st::read(path("cut.safetensors"), file)).isOk())
        << keep;
    EXPECT_EQ(status.message().rfind(path("cut.safetensors"), 0), 0u)
        << status.message();
  }
}

TEST_F(SafetensorsTest, ReportsAMissingFile) {
  st::File file;
  kiln::Status status;
  EXPECT_FALSE((status = st::read(path("none.safetensors"), file)).isOk());
  EXPECT_NE(status.message().find("none.safetensors: cannot open"),
            std::string::npos)
      << status.message();
}

TEST_F(SafetensorsTest, RefusesToSerializeInconsistentTensors) {
  kiln::Status status;
  std::vector<uint8_t> bytes;
  st::File dup;
  dup.tensors = {st::fromF32("a", {1}, {1}), st::fromF32("a", {1}, {2})};
  EXPECT_FALSE((status = st::serialize(dup, bytes)).isOk());
  EXPECT_NE(status.message().find("tensor 'a': appears twice"),
            std::string::npos)
      << status.message();
  st::File reserved;
  reserved.tensors = {st::fromF32("__metadata__", {1}, {1})};
  EXPECT_FALSE((status = st::serialize(reserved, bytes)).isOk());
  st::File bad;
  bad.tensors = {st::fromF32("a", {2}, {1, 2})};
  bad.tensors[0].shape = {3};
  EXPECT_FALSE((status = st::serialize(bad, bytes)).isOk());
  EXPECT_NE(status.message().find("8 data bytes, but F32 [3] needs 12"),
            std::string::npos)
      << status.message();
}

TEST_F(SafetensorsTest, AtomicWriteLeavesOnlyTheTarget) {
  kiln::Status status;
  ASSERT_TRUE((status = st::write(path("a.safetensors"), sampleFile())).isOk())
      << status.message();
  ASSERT_TRUE((status = st::write(path("a.safetensors"), sampleFile())).isOk())
      << status.message();
  EXPECT_EQ(entries(), std::vector<std::string>{"a.safetensors"});
  struct stat info;
  ASSERT_EQ(::stat(path("a.safetensors").c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0644u);
}

TEST_F(SafetensorsTest, FailedWriteKeepsTheOldFile) {
  kiln::Status status;
  st::File old;
  old.tensors = {st::fromF32("w", {1}, {42})};
  ASSERT_TRUE((status = st::write(path("c.safetensors"), old)).isOk())
      << status.message();
  std::vector<uint8_t> before = readBytes(path("c.safetensors"));

  // An inconsistent tensor: rejected before anything is written.
  st::File bad;
  bad.tensors = {st::fromF32("w", {2}, {1, 2})};
  bad.tensors[0].bytes.pop_back();
  EXPECT_FALSE((status = st::write(path("c.safetensors"), bad)).isOk());
  EXPECT_EQ(readBytes(path("c.safetensors")), before);

  // A write that fails halfway: the file-size limit makes write(2) fail with
  // EFBIG (SIGXFSZ ignored) once 4 KiB of the temporary file exist. This
  // works as root too, unlike a read-only folder.
  st::File big;
  big.tensors = {
      st::fromF32("w", {1 << 16}, std::vector<float>(1 << 16, 1.0f))};
  struct rlimit saved;
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  auto previous = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit limited = saved;
  limited.rlim_cur = 4096;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &limited), 0);
  bool ok = (status = st::write(path("c.safetensors"), big)).isOk();
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &saved), 0);
  std::signal(SIGXFSZ, previous);
  EXPECT_FALSE(ok);
  EXPECT_NE(status.message().find("c.safetensors: write failed"),
            std::string::npos)
      << status.message();
  EXPECT_EQ(readBytes(path("c.safetensors")), before);
  EXPECT_EQ(entries(), std::vector<std::string>{"c.safetensors"});

  // The rename fails: the destination is a non-empty folder.
  ASSERT_EQ(::mkdir(path("d").c_str(), 0755), 0);
  writeBytes(path("d/keep"), {1});
  EXPECT_FALSE((status = st::write(path("d"), old)).isOk());
  EXPECT_NE(status.message().find("rename failed"), std::string::npos)
      << status.message();
  EXPECT_EQ(readBytes(path("d/keep")), std::vector<uint8_t>{1});
  std::remove(path("d/keep").c_str());
  ::rmdir(path("d").c_str());
  EXPECT_EQ(entries(), std::vector<std::string>{"c.safetensors"});

  // A folder that does not exist.
  EXPECT_FALSE(
      (status = st::write(path("no/such/dir.safetensors"), old)).isOk());
  EXPECT_NE(status.message().find("cannot create a temporary file"),
            std::string::npos)
      << status.message();
}

} // namespace
