//===- make_shards.cpp - Writes the raw test shards for the MPI tests -----===//
//
//   kiln-exec-make-shards DIR   -> DIR/train-0000{0..3}-of-00004 (13..25
//                                  records), DIR/validation-00000-of-00002..

#include "shards.h"

#include <algorithm>
#include <cstdio>

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  using kiln::rt::exec::test::writeRawShards;
  kiln::rt::Status s = writeRawShards(argv[1], "train", {25, 13, 21, 17}, 1);
  if (s.isOk())
    s = writeRawShards(argv[1], "validation", {11, 9}, 2);
  if (!s.isOk()) {
    std::fprintf(stderr, "%s\n", s.toString().c_str());
    return 1;
  }
  return 0;
}
