//===- temp_dir.h - A scratch directory for unit tests --------------------===//

#ifndef KILN_TEST_UNIT_COMMON_TEMP_DIR_H
#define KILN_TEST_UNIT_COMMON_TEMP_DIR_H

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace kiln::test {

/// A fresh directory under $TMPDIR named after `prefix`, removed with
/// everything in it when the object dies.
class TempDir {
public:
  explicit TempDir(const std::string &prefix = "kiln-test") {
    const char *base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base ? base : "/tmp") + "/" + prefix + "-XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (!::mkdtemp(buf.data()))
      ADD_FAILURE() << "mkdtemp failed";
    path_ = buf.data();
  }
  ~TempDir() {
    std::string cmd = "rm -rf '" + path_ + "'";
    if (std::system(cmd.c_str()) != 0)
      std::fprintf(stderr, "could not remove %s\n", path_.c_str());
  }
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;
  const std::string &path() const { return path_; }

private:
  std::string path_;
};

} // namespace kiln::test

#endif // KILN_TEST_UNIT_COMMON_TEMP_DIR_H
