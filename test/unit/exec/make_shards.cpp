//===- make_shards.cpp - Writes the raw test shards for the MPI tests -----===//
//
//   kiln-exec-make-shards DIR [LABEL_BASE]
//     -> DIR/train-0000{0..3}-of-00004 (13..25 records),
//        DIR/validation-00000-of-00002.., labels stored from LABEL_BASE
//        (default 1, as kiln-data; 0 as TensorFlow's 0-based shards).

#include "shards.h"

#include <algorithm>
#include <cstdio>
#include <string>

int main(int argc, char **argv) {
  if (argc != 2 && !(argc == 3 && (std::string(argv[2]) == "0" ||
                                   std::string(argv[2]) == "1"))) {
    std::fprintf(stderr, "usage: %s DIR [LABEL_BASE: 0 or 1]\n", argv[0]);
    return 2;
  }
  int base = argc == 3 ? argv[2][0] - '0' : 1;
  using kiln::rt::exec::test::writeRawShards;
  kiln::rt::Status s =
      writeRawShards(argv[1], "train", {25, 13, 21, 17}, 1, 10, base);
  if (s.isOk())
    s = writeRawShards(argv[1], "validation", {11, 9}, 2, 10, base);
  if (!s.isOk()) {
    std::fprintf(stderr, "%s\n", s.toString().c_str());
    return 1;
  }
  return 0;
}
