#pragma once
// Spin, then block: for hand-offs between threads that usually follow each
// other within microseconds (a copy's chunks, a team's rounds, a queue of
// copies). Waking a thread that sleeps in the kernel costs tens of
// microseconds, and more on a virtual machine, whose idle virtual CPU must
// be scheduled again by the host. A staged copy hands off four times (to the
// leader, to the team, back, to the caller). So a waiter polls its condition
// for a short while first, and only then sleeps; the waker only pays for a
// notify when someone sleeps (docs/decisions/0007-spin-before-sleep.md).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <optional>
#include <mutex>

namespace xfer::mem {

// How long a waiter polls before it sleeps: 200 us, long enough to span the
// gap between back-to-back copies and short enough that idle threads stop
// costing a CPU soon after the work stops; 0 where this process has fewer
// than 4 CPUs, where a polling thread would hold a CPU that the thread it
// waits for needs (CI's 2-CPU machine: a host-step copy whose engine thread
// could not run while the team polled). The installed inputs' spin_us
// (settings.hpp: XFER_SPIN_US) overrides both.
std::chrono::microseconds spin_before_sleep();
// Sets it (none: the default above); install_inputs calls it.
void set_spin_before_sleep(std::optional<std::uint64_t> us);
// The most XFER_SPIN_US may ask for: a second.
inline constexpr std::uint64_t max_spin_us = 1'000'000;

inline void cpu_relax() noexcept {
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
  __builtin_ia32_pause();  // the pause instruction, without the intrinsics header
#else
  std::atomic_signal_fence(std::memory_order_seq_cst);
#endif
}

// Polls ready() until it holds or `spin` has passed; true if it held.
template <class Ready>
bool spin_until(Ready&& ready, std::chrono::microseconds spin = spin_before_sleep()) {
  if (spin.count() <= 0) return ready();
  const auto end = std::chrono::steady_clock::now() + spin;
  for (unsigned i = 0;; ++i) {
    if (ready()) return true;
    cpu_relax();
    if ((i & 63) == 63 && std::chrono::steady_clock::now() >= end) return ready();
  }
}

// A condition a waiter may sleep on, with a waker that skips the notify
// (and its lock) while nobody sleeps. ready() must read atomics that the
// waker wrote before calling wake() (sequentially consistent: the waker's
// write and its read of sleepers_, against the sleeper's increment of
// sleepers_ and its read of the condition, cannot both miss each other).
class sleeper {
 public:
  template <class Ready>
  void wait(Ready&& ready) {
    if (spin_until(ready)) return;
    std::unique_lock lock(mutex_);
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    cv_.wait(lock, ready);
    sleepers_.fetch_sub(1, std::memory_order_relaxed);
  }
  // As wait, for at most about `timeout` (the polling included): whether
  // ready() held. For a waiter that must stay responsive meanwhile.
  template <class Ready>
  bool wait_for(Ready&& ready, std::chrono::microseconds timeout) {
    if (spin_until(ready, std::min(timeout, spin_before_sleep()))) return true;
    std::unique_lock lock(mutex_);
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    const bool held = cv_.wait_for(lock, timeout, ready);
    sleepers_.fetch_sub(1, std::memory_order_relaxed);
    return held;
  }
  // Call after making the condition true (with a seq_cst or release store
  // followed by this call's seq_cst read).
  void wake() {
    if (sleepers_.load(std::memory_order_seq_cst) == 0) return;
    { std::lock_guard lock(mutex_); }  // a sleeper between its check and its wait has it: wait it out
    cv_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::atomic<unsigned> sleepers_{0};
};

}  // namespace xfer::mem
