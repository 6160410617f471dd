#include <atomic>

#include <xfer/mem/os.hpp>
#include <xfer/mem/spin_wait.hpp>

namespace xfer::mem {
namespace {

// Microseconds; -1 until set or first asked for.
std::atomic<std::int64_t> spin_us{-1};

std::int64_t default_spin_us() { return usable_cpu_count() >= 4 ? 200 : 0; }

}  // namespace

void set_spin_before_sleep(std::optional<std::uint64_t> us) {
  spin_us.store(us ? static_cast<std::int64_t>(*us) : default_spin_us(), std::memory_order_relaxed);
}

std::chrono::microseconds spin_before_sleep() {
  std::int64_t us = spin_us.load(std::memory_order_relaxed);
  if (us < 0) {
    us = default_spin_us();
    spin_us.store(us, std::memory_order_relaxed);
  }
  return std::chrono::microseconds{us};
}

}  // namespace xfer::mem
