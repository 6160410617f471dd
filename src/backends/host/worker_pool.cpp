#include "worker_pool.hpp"

namespace xfer::host {

worker_pool::worker_pool(unsigned workers) {
  for (unsigned i = 0; i < workers; ++i) threads_.emplace_back([this, i] { loop(i); });
}

worker_pool::~worker_pool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  start_.notify_all();
  for (auto& t : threads_) t.join();
}

void worker_pool::run(const std::function<void(unsigned)>& job) {
  std::unique_lock lock(mutex_);
  job_ = &job;
  pending_ = size();
  ++generation_;
  start_.notify_all();
  done_.wait(lock, [this] { return pending_ == 0; });
  job_ = nullptr;
}

void worker_pool::loop(unsigned index) {
  std::uint64_t seen = 0;
  while (true) {
    const std::function<void(unsigned)>* job;
    {
      std::unique_lock lock(mutex_);
      start_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
      job = job_;
    }
    (*job)(index);
    {
      std::lock_guard lock(mutex_);
      if (--pending_ == 0) done_.notify_one();
    }
  }
}

}  // namespace xfer::host
