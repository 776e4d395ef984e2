//===- status_abi.cpp - C ABI: version and status -------------------------===//
#include "kiln/rt/abi.h"

#include "kiln/rt/abi_status.h"

struct kiln_rt_status_s {
  kiln::Status status;
};

namespace kiln::rt {

kiln_rt_status_t toCStatus(Status status) {
  if (status.isOk())
    return nullptr;
  // nothrow: if even this allocation fails, report failure without a message
  // rather than let an exception cross the C boundary.
  auto *s = new (std::nothrow) kiln_rt_status_s{std::move(status)};
  return s ? s : toCStatusOutOfMemory();
}

kiln_rt_status_t toCStatusOutOfMemory() {
  // A static object, recognised and never freed, so OOM can still be reported.
  static kiln_rt_status_s oom{Status(StatusCode::kInternal, "out of memory")};
  return &oom;
}

} // namespace kiln::rt

extern "C" {

uint32_t kiln_rt_abi_version(void) { return KILN_RT_ABI_VERSION; }

kiln_rt_status_code_t kiln_rt_status_code(kiln_rt_status_t status) {
  if (!status)
    return KILN_RT_STATUS_OK;
  return static_cast<kiln_rt_status_code_t>(status->status.code());
}

const char *kiln_rt_status_message(kiln_rt_status_t status) {
  if (!status)
    return "OK";
  return status->status.message().c_str();
}

void kiln_rt_status_free(kiln_rt_status_t status) {
  if (status && status != kiln::rt::toCStatusOutOfMemory())
    delete status;
}

} // extern "C"
