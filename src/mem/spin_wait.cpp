#include <sched.h>

#include <xfer/mem/spin_wait.hpp>

namespace xfer::mem {

std::chrono::microseconds spin_before_sleep() {
  static const std::chrono::microseconds spin = [] {
    cpu_set_t set;
    const int cpus = ::sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
    return cpus >= 4 ? std::chrono::microseconds{200} : std::chrono::microseconds{0};
  }();
  return spin;
}

}  // namespace xfer::mem
