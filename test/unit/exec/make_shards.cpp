//===- make_shards.cpp - Writes the raw test shards for the MPI tests -----===//
//
//   kiln-exec-make-shards DIR [LABEL_BASE [TRAIN_RECORDS]]
//     -> DIR/train-0000{0..3}-of-00004 (13..25 records),
//        DIR/validation-00000-of-00002.., labels stored from LABEL_BASE
//        (default 1, as kiln-data; 0 as TensorFlow's 0-based shards).
//        TRAIN_RECORDS ("7,19,3,...") gives the train shards and their
//        record counts instead.

#include "shards.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

/// "7,19,3" -> {7, 19, 3}; empty on a malformed list.
std::vector<int> parseCounts(const std::string &list) {
  std::vector<int> counts;
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t comma = list.find(',', pos);
    std::string item = list.substr(pos, comma - pos);
    char *end = nullptr;
    long n = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end || n < 0 || n > 1000000)
      return {};
    counts.push_back(static_cast<int>(n));
    if (comma == std::string::npos)
      break;
    pos = comma + 1;
  }
  return counts;
}

} // namespace

int main(int argc, char **argv) {
  bool baseOk = argc < 3 || std::string(argv[2]) == "0" ||
                std::string(argv[2]) == "1";
  std::vector<int> train = {25, 13, 21, 17};
  if (argc == 4)
    train = parseCounts(argv[3]);
  if (argc < 2 || argc > 4 || !baseOk || train.empty()) {
    std::fprintf(stderr,
                 "usage: %s DIR [LABEL_BASE: 0 or 1 [TRAIN_RECORDS: "
                 "comma-separated records per train shard]]\n",
                 argv[0]);
    return 2;
  }
  int base = argc >= 3 ? argv[2][0] - '0' : 1;
  using kiln::rt::exec::test::writeRawShards;
  kiln::Status s = writeRawShards(argv[1], "train", train, 1, 10, base);
  if (s.isOk())
    s = writeRawShards(argv[1], "validation", {11, 9}, 2, 10, base);
  if (!s.isOk()) {
    std::fprintf(stderr, "%s\n", s.toString().c_str());
    return 1;
  }
  return 0;
}
