#include <sched.h>

#include <cstdlib>

#include <xfer/mem/spin_wait.hpp>

namespace xfer::mem {

std::chrono::microseconds spin_before_sleep() {
  static const std::chrono::microseconds spin = [] {
    // XFER_SPIN_US overrides (for measuring what the wake-ups cost).
    if (const char* e = std::getenv("XFER_SPIN_US"); e && *e) {
      char* end = nullptr;
      const long us = std::strtol(e, &end, 10);
      if (end && !*end && us >= 0) return std::chrono::microseconds{us};
    }
    cpu_set_t set;
    const int cpus = ::sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
    return cpus >= 4 ? std::chrono::microseconds{200} : std::chrono::microseconds{0};
  }();
  return spin;
}

}  // namespace xfer::mem
