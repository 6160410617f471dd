#pragma once
// Persistent threads for multi-threaded copies (the host backend's memcpy-mt
// and bidir, the CPU study's --threads): a thread started inside a timed run
// would put thread creation, not memory traffic, on the clock.
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace xfer {

class thread_team {
 public:
  // `size` threads take part in each run: the caller and size-1 helpers.
  // Throws std::invalid_argument for size 0.
  explicit thread_team(unsigned size);
  ~thread_team();
  thread_team(const thread_team&) = delete;
  thread_team& operator=(const thread_team&) = delete;

  unsigned size() const noexcept { return static_cast<unsigned>(helpers_.size()) + 1; }
  // Runs job(i) for i in [0, size()), job(0) on the caller; returns when all
  // are done. The job must not throw (a helper has nowhere to send it).
  void run(const std::function<void(unsigned)>& job);

 private:
  void loop(unsigned index);
  std::vector<std::thread> helpers_;
  std::mutex mutex_;
  std::condition_variable wake_, finished_;
  const std::function<void(unsigned)>* job_ = nullptr;
  std::uint64_t round_ = 0;
  unsigned outstanding_ = 0;
  bool closing_ = false;
};

}  // namespace xfer
