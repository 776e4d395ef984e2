//===- status.cpp - Error reporting for the reference kernels --------------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "kiln/ref/status.h"

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
