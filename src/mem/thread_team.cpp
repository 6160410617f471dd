#include <stdexcept>
#include <utility>
#include <xfer/mem/thread_team.hpp>

namespace xfer::mem {

thread_team::thread_team(unsigned size, std::function<void()> helper_start) {
  if (size == 0) throw std::invalid_argument("a thread team needs at least one thread");
  helpers_.reserve(size - 1);
  try {
    for (unsigned i = 1; i < size; ++i)
      helpers_.emplace_back([this, i, helper_start] {
        if (helper_start) helper_start();
        loop(i);
      });
  } catch (...) {
    // The threads already started must not outlive a team that never was
    // (a joinable std::thread destroyed would terminate the program).
    close();
    throw;
  }
}

thread_team::~thread_team() { close(); }

void thread_team::close() noexcept {
  {
    std::lock_guard lock(mutex_);
    closing_ = true;
  }
  wake_.notify_all();
  for (auto& t : helpers_) t.join();
}

void thread_team::run(const std::function<void(unsigned)>& job) {
  if (!helpers_.empty()) {
    std::lock_guard lock(mutex_);
    job_ = &job;
    outstanding_ = static_cast<unsigned>(helpers_.size());
    ++round_;
  }
  wake_.notify_all();
  job(0);
  if (helpers_.empty()) return;
  std::unique_lock lock(mutex_);
  finished_.wait(lock, [this] { return outstanding_ == 0; });
  job_ = nullptr;
}

void thread_team::loop(unsigned index) {
  std::uint64_t seen = 0;
  for (;;) {
    const std::function<void(unsigned)>* job = nullptr;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return closing_ || round_ != seen; });
      if (closing_) return;
      seen = round_;
      job = job_;
    }
    (*job)(index);
    {
      std::lock_guard lock(mutex_);
      if (--outstanding_ == 0) finished_.notify_one();
    }
  }
}

}  // namespace xfer::mem
