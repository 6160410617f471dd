#pragma once
// What the staging budget's tests share (staging_budget_test.cpp,
// budget_team_test.cpp): waiting for a state, a fixed budget, an environment
// variable for one scope, and a host step whose first DMA waits for the
// other copies.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>
#include <xfer/mem/staged/staging_budget.hpp>

#include "faulty_step.hpp"

namespace xfer::test {

using namespace std::chrono_literals;

// Spins until `ready` or `limit`; whether it held.
template <class F>
bool wait_until(F&& ready, std::chrono::milliseconds limit = 10s) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!ready()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::yield();
  }
  return true;
}

// A budget of `n` threads, fixed.
inline mem::staging_budget_options with_threads(unsigned n) {
  mem::staging_budget_options o;
  o.threads = n;
  return o;
}

// Sets an environment variable for one scope.
class scoped_env {
 public:
  scoped_env(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value, 1);
  }
  ~scoped_env() {
    if (old_.empty())
      ::unsetenv(name_);
    else
      ::setenv(name_, old_.c_str(), 1);
  }

 private:
  const char* name_;
  std::string old_;
};

// The host step, its lane's DMAs to the device recorded in one sequence
// for all the "devices"; the first waits until `runs` copies are in the
// budget, so every copy is under way before the turns are counted.
class recording_step final : public forwarding_step {
 public:
  recording_step(int id, std::vector<int>& order, std::mutex& m, mem::staging_budget& b, unsigned runs)
      : id_(id), order_(order), m_(m), budget_(b), runs_(runs) {}
  std::string_view name() const noexcept override { return "recording-host"; }
  std::unique_ptr<mem::staging_lane> open_lane(unsigned slots) override {
    return std::make_unique<lane>(*this, inner_.open_lane(slots));
  }

 private:
  class lane final : public mem::staging_lane {
   public:
    lane(recording_step& s, std::unique_ptr<mem::staging_lane> in) : s_(s), in_(std::move(in)) {}
    void to_device(const void* st, mem::device_ref d, std::size_t o, std::size_t n) override {
      if (!s_.all_in_.load()) {
        EXPECT_TRUE(wait_until([&] { return s_.budget_.runs() >= s_.runs_; })) << "the copies never all came";
        s_.all_in_.store(true);
      }
      {
        std::lock_guard lock(s_.m_);
        s_.order_.push_back(s_.id_);
      }
      in_->to_device(st, d, o, n);
    }
    void to_host(void* st, mem::device_ref d, std::size_t o, std::size_t n) override { in_->to_host(st, d, o, n); }
    void record(unsigned slot) override { in_->record(slot); }
    void wait(unsigned slot) override { in_->wait(slot); }
    void drain() noexcept override { in_->drain(); }

   private:
    recording_step& s_;
    std::unique_ptr<mem::staging_lane> in_;
  };
  int id_;
  std::vector<int>& order_;
  std::mutex& m_;
  mem::staging_budget& budget_;
  unsigned runs_;
  std::atomic<bool> all_in_{false};
};

}  // namespace xfer::test
