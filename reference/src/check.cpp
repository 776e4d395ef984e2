//===- check.cpp - Precondition checks of the reference kernels -----------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "kiln/ref/check.h"

#include <cstdio>
#include <cstdlib>

namespace kiln::ref {

void fatalError(const char *file, int line, const std::string &message) {
  std::fprintf(stderr, "%s:%d: kiln::ref fatal error: %s\n", file, line,
               message.c_str());
  std::fflush(stderr);
  std::abort();
}

} // namespace kiln::ref
