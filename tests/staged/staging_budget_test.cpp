// One staging budget shared by several copiers (issue 37, item 4): on the
// host step, "devices" copying at once through one team of threads. What is
// asserted is behaviour: the runs take turns, no more threads copy than the
// budget has, a copy alone gets all of them, every copy's data arrives, and
// one copier's failure or destruction leaves the others copying.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>
#include <xfer/mem/staged/host_step.hpp>
#include <xfer/mem/staged/staging_budget.hpp>

#include "budget_helpers.hpp"
#include "faulty_step.hpp"
#include "staged_conformance.hpp"
#include "thread_count.hpp"

namespace xfer::test {
namespace {

using namespace std::chrono_literals;
using mem::staging_budget;
using mem::staging_budget_options;

// ---- the team ---------------------------------------------------------------

TEST(StagingBudget, RunsTakeTurnsPieceByPiece) {
  // One thread, two runs: once both are in, the thread alternates between
  // them, one piece each, whatever order they came in.
  staging_budget b(with_threads(1));
  std::mutex m;
  std::string order;
  auto pieces = [&](char id, int n) {
    return [&, id, left = n]() mutable {
      if (left == 0) return false;
      if (order.empty()) {
        EXPECT_TRUE(wait_until([&] { return b.runs() == 2; })) << "the second run never came";
      }
      std::lock_guard lock(m);
      order += id;
      --left;
      return true;
    };
  };
  std::function<bool()> a = pieces('A', 20), c = pieces('B', 20);
  std::thread first([&] { b.run(3, a); });
  ASSERT_TRUE(wait_until([&] { return b.runs() == 1; }));
  std::thread second([&] { b.run(3, c); });
  first.join();
  second.join();
  std::string alternating;
  for (int i = 0; i < 20; ++i) alternating += "AB";
  EXPECT_EQ(order, alternating);
  EXPECT_EQ(b.runs(), 0u);
}

// Runs `wave` pieces that each wait (up to `patience`) for all of the wave
// to be inside at once; returns the most that were.
unsigned most_at_once(staging_budget& b, unsigned cap, unsigned wave, std::chrono::milliseconds patience) {
  std::atomic<unsigned> claimed{0}, inside{0}, most{0};
  std::function<bool()> piece = [&] {
    if (claimed.fetch_add(1) >= wave) return false;
    const unsigned now = inside.fetch_add(1) + 1;
    for (unsigned m = most.load(); now > m && !most.compare_exchange_weak(m, now);) {
    }
    (void)wait_until([&] { return most.load() >= wave; }, patience);
    inside.fetch_sub(1);
    return true;
  };
  b.run(cap, piece);
  return most.load();
}

TEST(StagingBudget, ACopyAloneGetsEveryThreadUpToItsOwn) {
  staging_budget b(with_threads(3));
  EXPECT_EQ(b.threads(), 3u);
  EXPECT_EQ(most_at_once(b, 3, 3, 10s), 3u) << "a run alone had fewer than the budget's threads";
  EXPECT_EQ(most_at_once(b, 2, 3, 200ms), 2u) << "a run had more threads than it asked for";
}

TEST(StagingBudget, NoMoreThreadsThanTheBudgetWhateverTheRuns) {
  staging_budget b(with_threads(2));
  std::atomic<unsigned> inside{0}, most{0};
  constexpr int runs = 4, each = 30;
  std::vector<std::atomic<int>> done(runs);
  std::vector<std::thread> callers;
  for (int r = 0; r < runs; ++r)
    callers.emplace_back([&, r] {
      std::atomic<int> left{each};
      std::function<bool()> piece = [&] {
        if (left.fetch_sub(1) <= 0) return false;
        const unsigned now = inside.fetch_add(1) + 1;
        for (unsigned m = most.load(); now > m && !most.compare_exchange_weak(m, now);) {
        }
        std::this_thread::sleep_for(200us);
        inside.fetch_sub(1);
        ++done[r];
        return true;
      };
      b.run(8, piece);  // each asks for more than the budget has
    });
  for (auto& t : callers) t.join();
  EXPECT_LE(most.load(), 2u);
  for (int r = 0; r < runs; ++r) EXPECT_EQ(done[r].load(), each) << "run " << r;
}

TEST(StagingBudget, GrowsToTheLargestTeamAskedFor) {
  staging_budget b;  // no fixed count
  EXPECT_EQ(b.threads(), 0u);
  std::atomic<int> started{0};
  b.reserve(2, [&] { ++started; });
  b.reserve(1);
  EXPECT_EQ(b.threads(), 2u);
  b.reserve(3, [&] { ++started; });
  EXPECT_EQ(b.threads(), 3u);
  EXPECT_TRUE(wait_until([&] { return started.load() == 3; })) << "each thread runs its thread_start";
  EXPECT_THROW(staging_budget{with_threads(mem::max_staged_threads + 1)}, std::invalid_argument);
}

TEST(StagingBudget, CopiesAtOnceShareTheCache) {
  staging_budget_options o;
  o.cache_bytes = std::size_t{64} << 20;
  staging_budget b(o);
  EXPECT_EQ(b.enter(), std::size_t{64} << 20) << "alone: all of it";
  EXPECT_EQ(b.enter(), std::size_t{32} << 20);
  EXPECT_EQ(b.enter(), (std::size_t{64} << 20) / 3);
  b.leave();
  b.leave();
  b.leave();
  EXPECT_EQ(b.enter(), std::size_t{64} << 20) << "the others gone";
  b.leave();
}

// ---- copiers on one budget --------------------------------------------------

mem::staged_copier_options on_budget(std::shared_ptr<staging_budget> b, unsigned threads = 3,
                                     std::size_t chunk = 4096) {
  auto o = with_tuning(small_chunks(chunk, 4, threads));
  o.budget = std::move(b);
  return o;
}

TEST(StagingBudgetCopiers, FourDevicesCopyAtOnceThroughOneTeam) {
  std::thread([] {}).join();  // ThreadSanitizer's own thread, before counting
  auto budget = std::make_shared<staging_budget>(with_threads(3));
  const int before = thread_count();
  std::atomic<int> started{0};
  {
    std::vector<std::unique_ptr<mem::host_step>> steps;
    std::vector<std::unique_ptr<mem::staged_copier>> copiers;
    for (int d = 0; d < 4; ++d) {
      steps.push_back(std::make_unique<mem::host_step>());
      auto o = on_budget(budget);
      o.thread_start = [&] { ++started; };
      copiers.push_back(std::make_unique<mem::staged_copier>(*steps.back(), o));
    }
    // Each copier adds the thread running its queue and its lane's engine,
    // no team: its pieces are the budget's three threads' work.
    EXPECT_EQ(budget->threads(), 3u);
    EXPECT_LE(thread_count() - before, 4 * 2);
    std::vector<std::thread> devices;
    for (int d = 0; d < 4; ++d)
      devices.emplace_back([&, d] {
        round_trip(*copiers[d], 300 * 4096 + 11, 1 + d, 3, 10 + d);
        round_trip(*copiers[d], 2 * 4096 + 5, 0, 0, 20 + d);
      });
    for (auto& t : devices) t.join();
    EXPECT_EQ(started.load(), 4) << "each copier's own thread, and no team";
    for (auto& c : copiers) EXPECT_EQ(c->staging_stats().handed_out_bytes, 0u);
  }
  budget.reset();
  EXPECT_LE(thread_count_down_to(before - 3), before - 3) << "a thread outlived the copiers and their budget";
}

TEST(StagingBudgetCopiers, EveryCopyMakesProgressWhileTheOthersRun) {
  // One thread for four copies: served in turn, each has queued most of its
  // chunks by the time the first of them queues its last (one after another,
  // the others would have queued none).
  constexpr int devices = 4;
  constexpr std::size_t bytes = 64 * 4096;
  auto budget = std::make_shared<staging_budget>(with_threads(1));
  auto t = small_chunks(4096, 4, 2);
  t.size_chunks = false;  // the same cut for every copy, whatever its cache share
  devices_on_budget all(budget, devices, bytes, t, 40);
  all.copy_to_devices();
  const auto& order = all.order;
  std::lock_guard lock(all.m);
  std::vector<std::size_t> total(devices), last(devices);
  for (std::size_t i = 0; i < order.size(); ++i) ++total[order[i]], last[order[i]] = i;
  std::size_t first_done = order.size();
  for (int d = 0; d < devices; ++d) first_done = std::min(first_done, last[d]);
  std::vector<std::size_t> before(devices);
  for (std::size_t i = 0; i <= first_done; ++i) ++before[order[i]];
  for (int d = 0; d < devices; ++d)
    EXPECT_GE(2 * before[d], total[d]) << "device " << d << " queued " << before[d] << " of its " << total[d]
                                       << " chunks before the first copy ended";
}

TEST(StagingBudgetCopiers, ACopierDestroyedWhileAnotherCopies) {
  auto budget = std::make_shared<staging_budget>(with_threads(2));
  mem::host_step step_a, step_b;
  const std::size_t bytes = 400 * 4096 + 3;
  std::vector<unsigned char> src(bytes);
  for (std::size_t i = 0; i < bytes; ++i) src[i] = pattern_byte(i, 5);
  device_buffer dev_a(step_a, bytes), dev_b(step_b, bytes);
  auto a = std::make_unique<mem::staged_copier>(step_a, on_budget(budget));
  auto long_copy = a->copy_to_device_async(dev_a.ref(), 0, src.data(), bytes);
  {
    mem::staged_copier b(step_b, on_budget(budget));
    round_trip(b, 50 * 4096 + 1, 2, 2);
  }  // gone while a's copy may still run
  EXPECT_NO_THROW(long_copy.wait());
  EXPECT_EQ(0, std::memcmp(dev_a.ref().handle, src.data(), bytes));

  // The other way round, with the copiers holding the only references: the
  // budget outlives the first and goes with the second.
  auto b = std::make_unique<mem::staged_copier>(step_b, on_budget(budget));
  budget.reset();
  auto other = b->copy_to_device_async(dev_b.ref(), 0, src.data(), bytes);
  a.reset();
  EXPECT_NO_THROW(other.wait());
  EXPECT_EQ(0, std::memcmp(dev_b.ref().handle, src.data(), bytes));
  b.reset();
}

TEST(StagingBudgetCopiers, AFailedCopyLeavesTheOthersAlone) {
  auto budget = std::make_shared<staging_budget>(with_threads(2));
  for (const auto when : {fault_at::enqueue, fault_at::wait}) {
    faulty_step bad;
    mem::host_step good;
    mem::staged_copier failing(bad, on_budget(budget)), working(good, on_budget(budget));
    const std::size_t bytes = 200 * 4096, at = 37 * 4096;
    std::vector<unsigned char> src(bytes), back(bytes);
    for (std::size_t i = 0; i < bytes; ++i) src[i] = pattern_byte(i, 8);
    device_buffer dev_bad(bad, bytes), dev_good(good, bytes);
    bad.fail(at, when);
    auto fails = failing.copy_to_device_async(dev_bad.ref(), 0, src.data(), bytes);
    auto works = working.copy_to_device_async(dev_good.ref(), 0, src.data(), bytes);
    try {
      fails.wait();
      ADD_FAILURE() << "no error";
    } catch (const mem::staged_error& e) {
      EXPECT_EQ(e.why(), mem::staged_error::reason::device);
      EXPECT_EQ(e.at_offset(), at);
      EXPECT_EQ(e.bytes(), bytes);
    }
    EXPECT_NO_THROW(works.wait());
    working.copy_to_host(back.data(), dev_good.ref(), 0, bytes);
    EXPECT_EQ(src, back);
    EXPECT_EQ(failing.staging_stats().handed_out_bytes, 0u);
    bad.fail(SIZE_MAX, when);
    round_trip(failing, 30 * 4096 + 9, 0, 1);  // usable afterwards
  }
}

// ---- the process's budget ---------------------------------------------------

TEST(ProcessStagingBudget, OneWhileAnyCopierHoldsIt) {
  const auto on = budget_inputs(mem::staging_budget_options{});
  auto first = mem::process_staging_budget();
  ASSERT_TRUE(first);
  EXPECT_EQ(mem::process_staging_budget(), first);
  mem::host_step s0, s1;
  auto o = with_tuning(small_chunks(4096, 4, 2));
  o.budget = mem::process_staging_budget();
  mem::staged_copier c0(s0, o), c1(s1, o);
  EXPECT_EQ(c0.budget(), c1.budget());
  EXPECT_EQ(first->threads(), 2u) << "grown to the copiers' team";
  const std::weak_ptr<staging_budget> held = first;
  first.reset();
  o.budget.reset();
  EXPECT_FALSE(held.expired()) << "the copiers hold it";
}

TEST(ProcessStagingBudget, ARetiredBudgetIsNotHandedOutAgain) {
  const auto on = budget_inputs(mem::staging_budget_options{});
  auto hung = mem::process_staging_budget();
  mem::retire_process_staging_budget(nullptr);  // not the process's: nothing changes
  EXPECT_EQ(mem::process_staging_budget(), hung);
  mem::retire_process_staging_budget(hung.get());
  auto next = mem::process_staging_budget();
  EXPECT_NE(next, hung) << "a copier made now must not wait behind the retired budget's copy";
  EXPECT_EQ(mem::process_staging_budget(), next);
}

TEST(ProcessStagingBudget, OptedOutOrSizedByTheInputs) {
  {
    const auto off = budget_inputs(std::nullopt);
    EXPECT_EQ(mem::process_staging_budget(), nullptr);
  }
  {
    const auto threads = budget_inputs(mem::staging_budget_options{.threads = 2});
    auto b = mem::process_staging_budget();
    ASSERT_TRUE(b);
    EXPECT_EQ(b->threads(), 2u);
    b->reserve(5);
    EXPECT_EQ(b->threads(), 2u) << "a fixed team does not grow";
  }
}

// The front door reads the two variables; a bad value is one error naming it.
TEST(ProcessStagingBudget, TheFrontDoorReadsItsVariables) {
  {
    scoped_env off("XFER_STAGED_SHARED", "0");
    EXPECT_FALSE(mem::inputs_from_environment().budget);
  }
  {
    scoped_env threads("XFER_STAGED_BUDGET_THREADS", "2");
    const auto in = mem::inputs_from_environment();
    ASSERT_TRUE(in.budget);
    EXPECT_EQ(in.budget->threads, 2u);
  }
  for (const auto& [name, value] : {std::pair{"XFER_STAGED_SHARED", "yes"}, std::pair{"XFER_STAGED_BUDGET_THREADS", "0"}}) {
    scoped_env bad(name, value);
    try {
      (void)mem::inputs_from_environment();
      ADD_FAILURE() << name << "=" << value << " accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(std::string(name) + "=" + value), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace xfer::test
