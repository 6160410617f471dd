#include <sched.h>

#include <cstdlib>
#include <stdexcept>

#include <xfer/mem/numbers.hpp>
#include <xfer/mem/spin_wait.hpp>

namespace xfer::mem {

std::optional<std::uint64_t> spin_us_from_environment() {
  const char* e = std::getenv("XFER_SPIN_US");
  if (!e || !*e) return std::nullopt;
  return parse_count(e, "XFER_SPIN_US", 0, max_spin_us);
}

std::chrono::microseconds spin_before_sleep() {
  static const std::chrono::microseconds spin = [] {
    // XFER_SPIN_US overrides (for measuring what the wake-ups cost).
    // A bad value was refused at the front door (check_environment); here it is the default.
    try {
      if (const auto us = spin_us_from_environment()) return std::chrono::microseconds{*us};
    } catch (const std::invalid_argument&) {
    }
    cpu_set_t set;
    const int cpus = ::sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
    return cpus >= 4 ? std::chrono::microseconds{200} : std::chrono::microseconds{0};
  }();
  return spin;
}

}  // namespace xfer::mem
