//===- parse_args.h - The executable's command line from a list -*- C++ -*-===//
#ifndef KILN_TEST_UNIT_EXEC_PARSE_ARGS_H
#define KILN_TEST_UNIT_EXEC_PARSE_ARGS_H

#include "kiln/rt/exec/options.h"

#include <initializer_list>
#include <vector>

namespace kiln::rt::exec::test {

/// parseOptions over `train ARGS...`, as the executable's main sees them.
inline StatusOr<RunOptions> parse(std::initializer_list<const char *> args) {
  std::vector<char *> argv = {const_cast<char *>("train")};
  for (const char *a : args)
    argv.push_back(const_cast<char *>(a));
  return parseOptions(static_cast<int>(argv.size()), argv.data());
}

} // namespace kiln::rt::exec::test

#endif // KILN_TEST_UNIT_EXEC_PARSE_ARGS_H
