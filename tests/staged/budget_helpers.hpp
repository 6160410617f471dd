#pragma once
// What the staging budget's tests share (staging_budget_test.cpp,
// budget_team_test.cpp): waiting for a state, a fixed budget, an environment
// variable for one scope, and host "devices" whose first DMA waits for the
// other copies.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>
#include <xfer/mem/staged/staging_budget.hpp>

#include "faulty_step.hpp"
#include "../support/scoped_inputs.hpp"
#include "staged_conformance.hpp"

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

// The process's budget as the inputs say (none: each copier a team of its own).
inline scoped_inputs budget_inputs(std::optional<mem::staging_budget_options> o) {
  return scoped_inputs([&](mem::library_inputs& in) { in.budget = o; });
}

// The host step, its lane's DMAs to the device recorded in one sequence
// for all the "devices"; until `runs` copies have been in the budget at once
// (`all_in`, shared by the devices: a copy may end before another device
// queues its first DMA), each DMA waits for that, so every copy is under way
// before the turns are counted.
class recording_step final : public forwarding_step {
 public:
  recording_step(int id, std::vector<int>& order, std::mutex& m, mem::staging_budget& b, unsigned runs,
                 std::atomic<bool>& all_in)
      : id_(id), order_(order), m_(m), budget_(b), runs_(runs), all_in_(all_in) {}
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
        EXPECT_TRUE(wait_until([&] { return s_.all_in_.load() || s_.budget_.runs() >= s_.runs_; }))
            << "the copies never all came";
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
  std::atomic<bool>& all_in_;
};

// `n` host "devices" on one budget, each a recording_step (DMAs recorded
// in `order`; the first waits for all n copies), a copier of `tuning`, a
// device buffer and a source of `bytes` in a pattern of its own.
struct devices_on_budget {
  devices_on_budget(const std::shared_ptr<mem::staging_budget>& budget, unsigned n, std::size_t bytes,
                    const mem::staged_tuning& tuning, unsigned seed)
      : bytes(bytes), src(n, std::vector<unsigned char>(bytes)) {
    for (unsigned d = 0; d < n; ++d) {
      steps.push_back(std::make_unique<recording_step>(static_cast<int>(d), order, m, *budget, n, all_in));
      auto o = with_tuning(tuning);
      o.budget = budget;
      copiers.push_back(std::make_unique<mem::staged_copier>(*steps.back(), o));
      dev.push_back(std::make_unique<device_buffer>(*steps.back(), bytes));
      for (std::size_t i = 0; i < bytes; ++i) src[d][i] = pattern_byte(i, seed + d);
    }
  }
  // Every device's copy to the device started at once, waited for and checked.
  void copy_to_devices() {
    std::vector<mem::staged_completion> done;
    for (std::size_t d = 0; d < copiers.size(); ++d)
      done.push_back(copiers[d]->copy_to_device_async(dev[d]->ref(), 0, src[d].data(), bytes));
    for (auto& c : done) EXPECT_NO_THROW(c.wait());
    for (std::size_t d = 0; d < copiers.size(); ++d)
      EXPECT_EQ(0, std::memcmp(dev[d]->ref().handle, src[d].data(), bytes)) << "device " << d;
  }

  std::size_t bytes;
  std::vector<int> order;
  std::mutex m;
  std::atomic<bool> all_in{false};
  std::vector<std::unique_ptr<recording_step>> steps;
  std::vector<std::unique_ptr<mem::staged_copier>> copiers;
  std::vector<std::unique_ptr<device_buffer>> dev;
  std::vector<std::vector<unsigned char>> src;
};

}  // namespace xfer::test
