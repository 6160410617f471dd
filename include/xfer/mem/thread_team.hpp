#pragma once
// Persistent threads for multi-threaded copies (the staged copier's chunk
// team, the host backend's memcpy-mt and bidir, the CPU study's --threads): a
// thread started inside a timed run or a copy would put thread creation, not
// memory traffic, on the clock.
#include <atomic>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>
#include <xfer/mem/spin_wait.hpp>

namespace xfer::mem {

class thread_team {
 public:
  // `size` threads take part in each run: the caller and size-1 helpers.
  // Each helper calls helper_start (when set) first, before any job: where a
  // program wants its own threads to set a signal mask, a name or affinity.
  // Throws std::invalid_argument for size 0.
  explicit thread_team(unsigned size, std::function<void()> helper_start = {});
  ~thread_team();
  thread_team(const thread_team&) = delete;
  thread_team& operator=(const thread_team&) = delete;

  unsigned size() const noexcept { return static_cast<unsigned>(helpers_.size()) + 1; }
  // Runs job(i) for i in [0, size()), job(0) on the caller; returns when all
  // are done. The job must not throw (a helper has nowhere to send it). One
  // run at a time: run() is not to be called from two threads at once.
  void run(const std::function<void(unsigned)>& job);

 private:
  void loop(unsigned index);
  void close() noexcept;  // stops and joins the helpers
  std::vector<std::thread> helpers_;
  // A round's hand-offs spin before they sleep (spin_wait.hpp): a team's
  // rounds follow each other closely, and a sleeping helper is slow to wake.
  sleeper wake_, finished_;
  const std::function<void(unsigned)>* job_ = nullptr;  // published by round_
  std::atomic<std::uint64_t> round_{0};
  std::atomic<unsigned> outstanding_{0};
  std::atomic<bool> closing_{false};
};

}  // namespace xfer::mem
