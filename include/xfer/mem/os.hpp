#pragma once
// The one seam between xferbench and the OS memory calls (in the spirit of
// mimalloc's prim layer): resources call through os(), so tests can swap in a
// table that fails with ENOMEM, EINTR, ... without touching real memory.
#include <cstddef>
#include <sys/types.h>

namespace xfer::mem {

struct os_calls {
  void* (*malloc)(std::size_t);
  void (*free)(void*);
  int (*posix_memalign)(void**, std::size_t, std::size_t);
  void* (*mmap)(void*, std::size_t, int, int, int, off_t);
  int (*munmap)(void*, std::size_t);
  int (*madvise)(void*, std::size_t, int);
  long (*mbind)(void*, unsigned long, int, const unsigned long*, unsigned long, unsigned);  // the raw system call
  // Which pages of a range are resident (the registration cache's staleness
  // check). Last, so a table written before it leaves it null: callers treat
  // null as "cannot tell".
  int (*mincore)(void*, std::size_t, unsigned char*) = nullptr;
};

// The table in force (the real libc calls unless a test replaced it).
const os_calls& os() noexcept;

// Replaces the table for the lifetime of the object; restores the previous one.
class scoped_os_override {
 public:
  explicit scoped_os_override(const os_calls& calls) noexcept;
  ~scoped_os_override();
  scoped_os_override(const scoped_os_override&) = delete;
  scoped_os_override& operator=(const scoped_os_override&) = delete;

 private:
  const os_calls* previous_;
};

// The real libc table, for overrides that only change one entry.
const os_calls& real_os() noexcept;

std::size_t page_size() noexcept;
// The CPUs this process may use (sched_getaffinity); 1 where the kernel does not say.
unsigned usable_cpu_count() noexcept;

}  // namespace xfer::mem
