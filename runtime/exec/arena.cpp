//===- arena.cpp - The model's memory arena -------------------------------===//

#include "kiln/rt/exec/arena.h"

#include <fmt/format.h>

#include <sys/mman.h>
#include <unistd.h>

#include <string>

namespace kiln::rt::exec {

StatusOr<std::unique_ptr<Arena>> Arena::allocate(int64_t bytes) {
  if (bytes <= 0)
    return KILN_STATUS(kInvalidArgument,
                       "arena size " + std::to_string(bytes) +
                           " is not positive");
  // The mapping reserves nothing (MAP_NORESERVE), so an arena larger than
  // the machine would map fine and be killed mid-step by the OOM killer.
  double physical = double(::sysconf(_SC_PHYS_PAGES)) *
                    double(::sysconf(_SC_PAGESIZE));
  if (physical > 0 && double(bytes) > physical)
    return KILN_STATUS(kInvalidArgument,
                       fmt::format("the model's arena needs {:.1f} GiB and "
                                   "this machine has {:.1f} GiB of memory "
                                   "(compile with a smaller --batch)",
                                   double(bytes) / double(1 << 30),
                                   physical / double(1 << 30)));
  size_t size = (static_cast<size_t>(bytes) + kAlignment - 1) / kAlignment *
                kAlignment;
  // Over-map by one alignment unit, then trim both ends to a 2 MiB boundary:
  // mmap only promises 4 KiB alignment.
  size_t mapped = size + kAlignment;
  void *raw = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED) {
    int err = errno;
    return errnoStatus(__FILE__, __LINE__,
                       "mmap of a " + std::to_string(bytes) +
                           "-byte arena",
                       err);
  }
  auto base = reinterpret_cast<uintptr_t>(raw);
  uintptr_t aligned = (base + kAlignment - 1) & ~(uintptr_t(kAlignment) - 1);
  size_t head = aligned - base;
  size_t tail = mapped - head - size;
  if (head)
    KILN_CHECK_LIBC(::munmap(raw, head), "munmap of the arena's head");
  if (tail)
    KILN_CHECK_LIBC(::munmap(reinterpret_cast<void *>(aligned + size), tail),
                    "munmap of the arena's tail");
  // Huge pages are an optimization: a kernel without THP refuses the advice
  // and the arena still works.
  (void)::madvise(reinterpret_cast<void *>(aligned), size, MADV_HUGEPAGE);
  return std::unique_ptr<Arena>(
      new Arena(reinterpret_cast<uint8_t *>(aligned), bytes, size));
}

Arena::~Arena() { ::munmap(data_, mapped_); }

kiln_rt_arena_ref_t Arena::ref() const {
  kiln_rt_arena_ref_t r;
  r.allocated = data_;
  r.aligned = data_;
  r.offset = 0;
  r.size = size_;
  r.stride = 1;
  return r;
}

} // namespace kiln::rt::exec
