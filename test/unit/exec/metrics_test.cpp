//===- metrics_test.cpp - metrics.jsonl never ends in a torn line ---------===//

#include "exec_test_util.h"

#include "kiln/rt/exec/metrics.h"

#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

namespace kiln::rt::exec::test {
namespace {

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<JsonField> row(int step) {
  return {JsonField::text("kind", "train"), JsonField::integer("step", step),
          JsonField::number("loss", 0.5)};
}

TEST(MetricsTest, AShortWriteIsCutBackToTheLastCompleteLine) {
  TempDir dir;
  std::string path = dir.path() + "/metrics.jsonl";
  {
    MetricsLog log;
    ASSERT_TRUE(log.open(dir.path()).isOk());
    ASSERT_TRUE(log.write(row(1)).isOk());
    ASSERT_TRUE(log.write(row(2)).isOk());
  }
  std::string complete = readFile(path);
  ASSERT_EQ(complete, "{\"kind\":\"train\",\"step\":1,\"loss\":0.5}\n"
                      "{\"kind\":\"train\",\"step\":2,\"loss\":0.5}\n");

  // A disk that fills up in the middle of a line: the file may grow by 10
  // more bytes (SIGXFSZ ignored, so write() stops short, then fails).
  struct rlimit old;
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  struct sigaction ignore = {}, oldAction;
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(::sigaction(SIGXFSZ, &ignore, &oldAction), 0);
  MetricsLog log;
  ASSERT_TRUE(log.open(dir.path()).isOk());
  struct rlimit limit = {rlim_t(complete.size() + 10), old.rlim_max};
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &limit), 0);
  Status s = log.write(row(3));
  ::setrlimit(RLIMIT_FSIZE, &old);
  ::sigaction(SIGXFSZ, &oldAction, nullptr);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("writing a line of 37 bytes to " + path +
                             " failed after 10 bytes: File too large; cut "
                             "back to its last complete line (74 bytes)"),
            std::string::npos)
      << s.message();
  EXPECT_EQ(readFile(path), complete);
  // Once there is room again, lines continue where the last complete one
  // ended.
  ASSERT_TRUE(log.write(row(4)).isOk());
  EXPECT_EQ(readFile(path),
            complete + "{\"kind\":\"train\",\"step\":4,\"loss\":0.5}\n");
}

TEST(MetricsTest, AFullDeviceIsAnErrorNamingTheFile) {
  TempDir dir;
  std::string path = dir.path() + "/metrics.jsonl";
  ASSERT_EQ(::symlink("/dev/full", path.c_str()), 0);
  MetricsLog log;
  ASSERT_TRUE(log.open(dir.path()).isOk());
  Status s = log.write(row(1));
  ASSERT_FALSE(s.isOk());
  // A device cannot be truncated, and the message says so.
  EXPECT_NE(s.message().find("writing a line of 37 bytes to " + path +
                             " failed after 0 bytes: No space left on "
                             "device; cutting it back to its last "
                             "complete line failed too: Invalid argument"),
            std::string::npos)
      << s.message();
}

TEST(MetricsTest, OpeningRemovesATornLastLine) {
  TempDir dir;
  std::string path = dir.path() + "/metrics.jsonl";
  std::ofstream(path) << "{\"kind\":\"train\",\"step\":1}\n{\"kind\":\"tr";
  MetricsLog log;
  ::testing::internal::CaptureStderr();
  Status s = log.open(dir.path());
  std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(s.isOk()) << s.toString();
  EXPECT_EQ(err, "kiln: warning: " + path +
                     " ended in a torn line; removed its 11 bytes\n");
  ASSERT_TRUE(log.write(row(2)).isOk());
  EXPECT_EQ(readFile(path), "{\"kind\":\"train\",\"step\":1}\n"
                            "{\"kind\":\"train\",\"step\":2,\"loss\":0.5}\n");
}

} // namespace
} // namespace kiln::rt::exec::test
