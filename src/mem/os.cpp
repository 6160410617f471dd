#include <atomic>
#include <sched.h>
#include <cstdlib>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <xfer/mem/os.hpp>

namespace xfer::mem {
namespace {

constexpr os_calls libc_calls{
    [](std::size_t n) { return std::malloc(n); },
    [](void* p) { std::free(p); },
    [](void** p, std::size_t a, std::size_t n) { return ::posix_memalign(p, a, n); },
    [](void* a, std::size_t n, int prot, int flags, int fd, off_t off) { return ::mmap(a, n, prot, flags, fd, off); },
    [](void* a, std::size_t n) { return ::munmap(a, n); },
    [](void* a, std::size_t n, int advice) { return ::madvise(a, n, advice); },
    [](void* a, unsigned long n, int mode, const unsigned long* mask, unsigned long maxnode, unsigned flags) {
      return ::syscall(SYS_mbind, a, n, mode, mask, maxnode, flags);
    },
    [](void* a, std::size_t n, unsigned char* v) { return ::mincore(a, n, v); },
};

std::atomic<const os_calls*> current{&libc_calls};

}  // namespace

const os_calls& os() noexcept { return *current.load(std::memory_order_acquire); }
const os_calls& real_os() noexcept { return libc_calls; }

scoped_os_override::scoped_os_override(const os_calls& calls) noexcept
    : previous_(current.exchange(&calls, std::memory_order_acq_rel)) {}
scoped_os_override::~scoped_os_override() { current.store(previous_, std::memory_order_release); }

std::size_t page_size() noexcept {
  static const std::size_t size = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return size;
}

unsigned usable_cpu_count() noexcept {
  cpu_set_t set;
  return ::sched_getaffinity(0, sizeof set, &set) == 0 ? static_cast<unsigned>(CPU_COUNT(&set)) : 1u;
}

}  // namespace xfer::mem
