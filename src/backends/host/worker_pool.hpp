#pragma once
// Persistent threads for multi-threaded and concurrent copies: starting
// threads inside a timed batch would time thread creation, not copies.
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace xfer::host {

class worker_pool {
 public:
  explicit worker_pool(unsigned workers);
  ~worker_pool();
  worker_pool(const worker_pool&) = delete;
  worker_pool& operator=(const worker_pool&) = delete;

  unsigned size() const noexcept { return static_cast<unsigned>(threads_.size()); }
  // Runs job(i) on worker i for every worker; returns when all are done.
  void run(const std::function<void(unsigned)>& job);

 private:
  void loop(unsigned index);
  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable start_, done_;
  const std::function<void(unsigned)>* job_ = nullptr;
  std::uint64_t generation_ = 0;
  unsigned pending_ = 0;
  bool stopping_ = false;
};

}  // namespace xfer::host
