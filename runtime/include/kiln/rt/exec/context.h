//===- context.h - What kiln_rt_context_t is inside the runtime -*- C++ -*-===//
//
// The generated code holds a kiln_rt_context_t* and passes it back to the
// runtime's entry points (model.h); this is its definition.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RT_EXEC_CONTEXT_H
#define KILN_RT_EXEC_CONTEXT_H

#include "kiln/rt/exec/comm.h"
#include "kiln/rt/exec/kernels.h"
#include "kiln/rt/model.h"

namespace kiln::rt::exec {
class SiteProfile;
} // namespace kiln::rt::exec

struct kiln_rt_context_s {
  kiln::rt::exec::Kernels *kernels = nullptr;
  kiln::rt::exec::Comm *comm = nullptr;
  /// Time per call site of generated code; null unless --profile.
  kiln::rt::exec::SiteProfile *sites = nullptr;
};

#endif // KILN_RT_EXEC_CONTEXT_H
