//===- files.h - Finding shard files ----------------------------*- C++ -*-===//
#ifndef KILN_RT_FILES_H
#define KILN_RT_FILES_H

#include "kiln/base/status.h"

#include <string>
#include <vector>

namespace kiln::rt {

/// "train-00003-of-01024" for (split "train", index 3, count 1024).
std::string shardName(const std::string &split, size_t index, size_t count);

/// True if `name` is `<split>-<digits>-of-<digits>`.
bool isShardName(const std::string &name, const std::string &split);

/// Full paths of the shards of `split` in `dir`, sorted by name. kNotFound
/// if the directory is missing or holds no such file.
StatusOr<std::vector<std::string>> listShards(const std::string &dir,
                                              const std::string &split);

/// Creates `dir` and its parents (like mkdir -p).
Status makeDirectories(const std::string &dir);

} // namespace kiln::rt

#endif // KILN_RT_FILES_H
