// The staging budget's team sized by the copies at once (issue 37, item 4):
// it grows to the sum of the teams of the copies running together, no
// further than staged_cpu_share of the physical cores (injected here, so the
// counts do not depend on this machine's CPUs); one device's team stays as
// it was; XFER_STAGED_BUDGET_THREADS fixes it whatever runs. And the count of
// physical cores behind that limit, read from a made-up sysfs tree.
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>
#include <xfer/mem/staged/staged_copier.hpp>
#include <xfer/mem/staged/staging_budget.hpp>
#include <xfer/mem/staged/tuning.hpp>

#include "budget_helpers.hpp"
#include "staged_conformance.hpp"

namespace xfer::test {
namespace {

using mem::staging_budget;

// A growing team (no fixed count) bounded by `cores` physical cores.
mem::staging_budget_options on_cores(unsigned cores) {
  mem::staging_budget_options o;
  o.cores = cores;
  return o;
}

// `n` runs of up to `cap` threads each, all in progress at once: no piece
// returns before the n-th run has come in (then every run finishes).
void runs_at_once(staging_budget& b, unsigned n, unsigned cap) {
  std::atomic<bool> all_in{false};
  std::vector<std::thread> callers;
  for (unsigned r = 0; r < n; ++r)
    callers.emplace_back([&] {
      std::atomic<int> left{8};
      const std::function<bool()> piece = [&] {
        if (!all_in.load()) {
          EXPECT_TRUE(wait_until([&] { return all_in.load() || b.runs() >= n; })) << "the runs never all came";
          all_in.store(true);
        }
        return left.fetch_sub(1) > 0;
      };
      b.run(cap, piece);
    });
  for (auto& t : callers) t.join();
}

TEST(StagingBudgetTeam, GrowsToTheSumOfTheRunsAtOnceUpToTheCoresShare) {
  struct grow_case {
    unsigned cores, runs, expected;
  };
  // Runs of 3 threads each, the team joined at 3: two at once want 6, four
  // want 12; 16 cores allow 12, 12 cores 9, 8 cores 6.
  for (const auto& c : {grow_case{16, 2, 6}, grow_case{16, 4, 12}, grow_case{12, 4, 9}, grow_case{8, 4, 6}}) {
    SCOPED_TRACE(testing::Message() << c.runs << " runs at once on " << c.cores << " cores");
    staging_budget b(on_cores(c.cores));
    EXPECT_EQ(b.grow_limit(), mem::staged_cpu_share(c.cores));
    b.reserve(3);
    ASSERT_EQ(b.threads(), 3u);
    runs_at_once(b, c.runs, 3);
    EXPECT_EQ(b.threads(), c.expected);
    runs_at_once(b, 1, 3);
    EXPECT_EQ(b.threads(), c.expected) << "the team never shrinks";
  }
}

TEST(StagingBudgetTeam, OneRunAtATimeKeepsTheTeamItJoinedWith) {
  staging_budget b(on_cores(64));
  b.reserve(3);
  for (int i = 0; i < 3; ++i) runs_at_once(b, 1, 3);
  EXPECT_EQ(b.threads(), 3u) << "one copy at a time: one device's team";
  // Fewer cores than one device's team: that team is kept, never cut.
  staging_budget small(on_cores(2));
  small.reserve(3);
  runs_at_once(small, 4, 3);
  EXPECT_EQ(small.threads(), 3u);
}

TEST(StagingBudgetTeam, AFixedTeamDoesNotGrow) {
  auto o = on_cores(64);
  o.threads = 2;
  staging_budget b(o);
  EXPECT_EQ(b.grow_limit(), 2u);
  runs_at_once(b, 4, 3);
  EXPECT_EQ(b.threads(), 2u);
}

TEST(StagingBudgetTeam, TheInputsCountWinsOverTheCopiesAtOnce) {
  const auto shared = budget_inputs(mem::staging_budget_options{});
  {
    const auto fixed = budget_inputs(mem::staging_budget_options{.threads = 2});
    auto b = mem::process_staging_budget();
    ASSERT_TRUE(b);
    runs_at_once(*b, 4, 12);
    EXPECT_EQ(b->threads(), 2u);
  }
  auto b = mem::process_staging_budget();  // a new one: the last is gone
  EXPECT_EQ(b->grow_limit(), std::min(mem::staged_cpu_share(mem::physical_cores()), mem::max_staged_threads))
      << "the process's budget grows to three quarters of this machine's cores";
}

// Host "devices" on one budget, copying at once: the team grows as their
// copies run together, each copier reports it, and every copy's data arrives.
void devices_copy_at_once(unsigned devices, unsigned cores, unsigned expected) {
  SCOPED_TRACE(testing::Message() << devices << " devices on " << cores << " cores");
  auto budget = std::make_shared<staging_budget>(on_cores(cores));
  devices_on_budget all(budget, devices, 64 * 4096, small_chunks(4096, 4, 3), 60);
  EXPECT_EQ(all.copiers.front()->team_threads(), 3u) << "joined: one device's team";
  all.copy_to_devices();
  for (unsigned d = 0; d < devices; ++d) EXPECT_EQ(all.copiers[d]->team_threads(), expected) << "device " << d;
  EXPECT_EQ(budget->threads(), expected);
}

TEST(StagingBudgetTeam, HostDevicesCopyingAtOnceGrowTheTeam) {
  devices_copy_at_once(2, 16, 6);   // the sum of two teams of 3
  devices_copy_at_once(4, 16, 12);  // of four
  devices_copy_at_once(4, 12, 9);   // capped at three quarters of 12 cores
  devices_copy_at_once(1, 16, 3);   // alone: its own team's size
}

TEST(StagingBudgetTeam, ACopierWithATeamOfItsOwnReportsIt) {
  mem::host_step step;
  mem::staged_copier c(step, with_tuning(small_chunks(4096, 4, 3)));
  EXPECT_EQ(c.team_threads(), 3u);
}

// ---- physical cores ---------------------------------------------------------

class fake_sysfs {
 public:
  fake_sysfs() : root_(std::filesystem::temp_directory_path() / ("xfer-cpus-" + std::to_string(::getpid()))) {}
  ~fake_sysfs() {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
  void cpu(unsigned n, const std::string& siblings) {
    const auto dir = root_ / ("cpu" + std::to_string(n)) / "topology";
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "thread_siblings_list") << siblings << "\n";
  }
  std::string root() const { return root_.string(); }

 private:
  std::filesystem::path root_;
};

TEST(PhysicalCores, HyperthreadsOfOneCoreCountOnce) {
  fake_sysfs sys;
  // Two cores of two threads each, numbered as Linux does on x86 (a core's
  // second thread after every core's first).
  sys.cpu(0, "0,2");
  sys.cpu(1, "1,3");
  sys.cpu(2, "0,2");
  sys.cpu(3, "1,3");
  EXPECT_EQ(mem::physical_cores_among({0, 1, 2, 3}, sys.root()), 2u);
  EXPECT_EQ(mem::physical_cores_among({0, 1}, sys.root()), 2u) << "one thread of each core";
  EXPECT_EQ(mem::physical_cores_among({0, 2}, sys.root()), 1u) << "both threads of one core";
  // No topology to read: each CPU a core of its own (the CPU count).
  EXPECT_EQ(mem::physical_cores_among({0, 1, 7, 8}, sys.root()), 4u);
  EXPECT_EQ(mem::physical_cores_among({0, 1, 2}, sys.root() + "/missing"), 3u);
}

TEST(PhysicalCores, ThisProcessHasAtLeastOneAndNoMoreThanItsCpus) {
  const unsigned cores = mem::physical_cores();
  EXPECT_GE(cores, 1u);
  EXPECT_LE(cores, std::max(1u, std::thread::hardware_concurrency()));
}

}  // namespace
}  // namespace xfer::test
