//===- files.cpp - Finding shard files ------------------------------------===//
#include "kiln/rt/files.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <dirent.h>
#include <sys/stat.h>

namespace kiln::rt {

std::string shardName(const std::string &split, size_t index, size_t count) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "-%05zu-of-%05zu", index, count);
  return split + buf;
}

bool isShardName(const std::string &name, const std::string &split) {
  if (name.size() <= split.size() + 1 || name.compare(0, split.size(), split) ||
      name[split.size()] != '-')
    return false;
  size_t p = split.size() + 1;
  auto digits = [&](size_t &pos) {
    size_t start = pos;
    while (pos < name.size() &&
           std::isdigit(static_cast<unsigned char>(name[pos])))
      ++pos;
    return pos > start;
  };
  if (!digits(p) || name.compare(p, 4, "-of-") != 0)
    return false;
  p += 4;
  return digits(p) && p == name.size();
}

StatusOr<std::vector<std::string>> listShards(const std::string &dir,
                                              const std::string &split) {
  DIR *d = ::opendir(dir.c_str());
  KILN_CHECK_LIBC_PTR(d, "cannot open data directory " + dir);
  std::vector<std::string> names;
  errno = 0;
  while (dirent *e = ::readdir(d)) {
    std::string name = e->d_name;
    if (isShardName(name, split))
      names.push_back(name);
  }
  int readErr = errno;
  ::closedir(d);
  if (readErr)
    return errnoStatus(__FILE__, __LINE__, "cannot list " + dir, readErr);
  if (names.empty())
    return KILN_STATUS(kNotFound,
                       "no files named " + split + "-NNNNN-of-NNNNN in " + dir);
  std::sort(names.begin(), names.end());
  std::vector<std::string> paths;
  for (const auto &n : names) {
    std::string path = dir + "/" + n;
    // Opening a FIFO or a device would block or read forever; a directory
    // fails later with a message that does not say why.
    struct stat st;
    KILN_CHECK_LIBC(::stat(path.c_str(), &st), "cannot stat " + path);
    if (!S_ISREG(st.st_mode))
      return KILN_STATUS(kInvalidArgument,
                         path + " is not a regular file (" +
                             (S_ISDIR(st.st_mode)    ? "a directory"
                              : S_ISFIFO(st.st_mode) ? "a FIFO"
                                                     : "a device or socket") +
                             "); shards must be files");
    paths.push_back(std::move(path));
  }
  return paths;
}

Status makeDirectories(const std::string &dir) {
  std::string partial;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = dir.find('/', pos + 1);
    partial = dir.substr(0, pos);
    if (partial.empty())
      continue;
    if (::mkdir(partial.c_str(), 0777) != 0 && errno != EEXIST)
      return errnoStatus(__FILE__, __LINE__,
                         "cannot create directory " + partial, errno);
  }
  struct stat st;
  KILN_CHECK_LIBC(::stat(dir.c_str(), &st), "cannot stat " + dir);
  if (!S_ISDIR(st.st_mode))
    return KILN_STATUS(kInvalidArgument,
                       dir + " exists and is not a directory");
  return Status::ok();
}

} // namespace kiln::rt
