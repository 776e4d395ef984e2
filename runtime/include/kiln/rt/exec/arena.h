//===- arena.h - The one block of memory a compiled model runs in -*- C++ -*-===//
//
// The compiler planned every tensor at a fixed byte offset, so the runtime
// allocates the arena once and never again. It is 2 MiB aligned and advised
// for transparent huge pages: the arena of a ResNet-50 step is gigabytes, and
// 4 KiB pages would cost a TLB miss on most of oneDNN's streaming accesses.
// The pages come from mmap, so untouched scratch costs no physical memory and
// everything starts zeroed.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RT_EXEC_ARENA_H
#define KILN_RT_EXEC_ARENA_H

#include "kiln/base/status.h"
#include "kiln/rt/model.h"

#include <cstdint>
#include <memory>

namespace kiln::rt::exec {

class Arena {
public:
  static constexpr size_t kAlignment = size_t(2) << 20;

  /// Maps `bytes` (> 0) of zeroed, 2 MiB-aligned memory.
  static StatusOr<std::unique_ptr<Arena>> allocate(int64_t bytes);
  ~Arena();
  Arena(const Arena &) = delete;
  Arena &operator=(const Arena &) = delete;

  uint8_t *data() const { return data_; }
  int64_t size() const { return size_; }
  /// The memref<?xi8> descriptor the step functions take.
  kiln_rt_arena_ref_t ref() const;

private:
  Arena(uint8_t *data, int64_t size, size_t mapped)
      : data_(data), size_(size), mapped_(mapped) {}
  uint8_t *data_;
  int64_t size_;
  size_t mapped_;
};

} // namespace kiln::rt::exec

#endif // KILN_RT_EXEC_ARENA_H
