//===- abi_status.h - Status <-> kiln_rt_status_t at the C ABI --*- C++ -*-===//
#ifndef KILN_RT_ABI_STATUS_H
#define KILN_RT_ABI_STATUS_H

#include "kiln/base/status.h"
#include "kiln/rt/abi.h"

#include <exception>
#include <new>

namespace kiln::rt {

/// Null for OK, else a heap status the caller frees with kiln_rt_status_free.
kiln_rt_status_t toCStatus(Status status);
kiln_rt_status_t toCStatusOutOfMemory();

/// Runs `fn` (returning Status) and converts the result; an exception never
/// crosses the C boundary.
template <typename Fn> kiln_rt_status_t guardAbi(Fn &&fn) noexcept {
  try {
    return toCStatus(fn());
  } catch (const std::bad_alloc &) {
    return toCStatusOutOfMemory();
  } catch (const std::exception &e) {
    return toCStatus(Status(StatusCode::kInternal,
                            std::string("unexpected exception: ") + e.what()));
  } catch (...) {
    return toCStatus(Status(StatusCode::kInternal, "unexpected exception"));
  }
}

} // namespace kiln::rt

#endif // KILN_RT_ABI_STATUS_H
