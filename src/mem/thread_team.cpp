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
  closing_.store(true);
  wake_.wake();
  for (auto& t : helpers_) t.join();
}

void thread_team::run(const std::function<void(unsigned)>& job) {
  if (!helpers_.empty()) {
    job_ = &job;
    outstanding_.store(static_cast<unsigned>(helpers_.size()));
    round_.fetch_add(1);  // publishes job_ and outstanding_
    wake_.wake();
  }
  job(0);
  if (helpers_.empty()) return;
  finished_.wait([this] { return outstanding_.load() == 0; });
  job_ = nullptr;
}

void thread_team::loop(unsigned index) {
  std::uint64_t seen = 0;
  for (;;) {
    wake_.wait([&] { return closing_.load() || round_.load() != seen; });
    if (closing_.load()) return;
    seen = round_.load();
    (*job_)(index);
    if (outstanding_.fetch_sub(1) == 1) finished_.wake();
  }
}

}  // namespace xfer::mem
