// `xferbench beside`'s measurement (issue 53): the sides run at once where
// they should, a side's fault reaches the caller, and the summary and the
// finding say what the readings say: the slowdown's sign, the way that won.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <gtest/gtest.h>
#include <stdexcept>
#include <thread>
#include <xfer/beside/measure.hpp>
#include <xfer/beside/study.hpp>
#include <xfer/core/errors.hpp>
#include <xfer/mem/blocks/block_step.hpp>
#include <xfer/mem/staged/host_step.hpp>

#include "recording_context.hpp"

namespace xfer::beside {
namespace {

// A side whose steps sleep 1 ms and note how many steps of any side were in
// flight at once.
class sleeper final : public activity {
 public:
  sleeper(std::atomic<int>& in_flight, std::atomic<int>& most, bool fail = false)
      : in_flight_(in_flight), most_(most), fail_(fail) {}
  std::string name() const override { return "sleeper"; }
  double amount_per_step() const override { return 1000; }
  void step() override {
    const int now = ++in_flight_;
    for (int seen = most_.load(); now > seen && !most_.compare_exchange_weak(seen, now);) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    --in_flight_;
    ++steps;
    if (fail_ && steps == 3) throw std::runtime_error("the copy broke");
  }
  std::uint64_t steps = 0;

 private:
  std::atomic<int>& in_flight_;
  std::atomic<int>& most_;
  bool fail_;
};

TEST(BesideMeasure, AloneOneSideRunsBesideAndJointBothRunAtOnce) {
  std::atomic<int> in_flight{0}, most{0};
  sleeper copy(in_flight, most), work(in_flight, most);
  EXPECT_GT(rate_alone(copy, 0.01), 0.0);
  EXPECT_EQ(most.load(), 1);
  const auto [c, w] = rates_beside(copy, work, 0.02);
  EXPECT_GT(c, 0.0);
  EXPECT_GT(w, 0.0);
  EXPECT_EQ(most.load(), 2);
  most = 0;
  copy.steps = work.steps = 0;
  EXPECT_GT(joint_seconds(copy, work, {.copy_steps = 5, .work_steps = 7}), 0.0);
  EXPECT_EQ(copy.steps, 5u);  // exactly the job
  EXPECT_EQ(work.steps, 7u);
  EXPECT_EQ(most.load(), 2);
}

TEST(BesideMeasure, ACopyThatFailsReachesTheCaller) {
  std::atomic<int> in_flight{0}, most{0};
  sleeper copy(in_flight, most, true), work(in_flight, most);
  EXPECT_THROW(joint_seconds(copy, work, {.copy_steps = 10, .work_steps = 2}), std::runtime_error);
  sleeper copy2(in_flight, most, true);
  EXPECT_THROW(rates_beside(copy2, work, 0.05), std::runtime_error);
}

TEST(BesideSummary, MedianAndRangeAndTheSlowdownsSign) {
  EXPECT_EQ(spread_of({3, 1, 2}).median, 2);
  EXPECT_EQ(spread_of({4, 1, 2, 3}).median, 2.5);
  EXPECT_EQ(spread_of({4, 1, 2, 3}).low, 1);
  EXPECT_EQ(spread_of({4, 1, 2, 3}).high, 4);
  EXPECT_THROW(spread_of({}), std::invalid_argument);
  // The workload does 10 steps/s alone and 8 beside: 25% longer. The copy keeps 3 of its 4 steps/s.
  const pair_summary s = summarize({{4, 10, 3, 8, 1.5}}, 1e6, 100);
  EXPECT_DOUBLE_EQ(s.slowdown.median, 0.25);
  EXPECT_DOUBLE_EQ(s.copy_share.median, 0.75);
  EXPECT_DOUBLE_EQ(s.copy_alone.median, 4e6);  // in the side's units per second
  EXPECT_DOUBLE_EQ(s.work_beside.median, 800);
  // A workload faster beside the copy (a cache warmed by it) is a negative slowdown, not a clamp.
  EXPECT_LT(summarize({{4, 10, 3, 12, 1.5}}, 1, 1).slowdown.median, 0);
}

way_summary way(const std::string& name, double alone, double joint_low, double joint_median, double joint_high) {
  way_summary w{name, {}};
  w.s.copy_alone = {alone, alone, alone};
  w.s.joint_s = {joint_median, joint_low, joint_high};
  return w;
}

TEST(BesideFinding, NamedOnlyWhereTheFastestAloneDoesNotFinishFirst) {
  // kernel is fastest alone (50 GB/s) but batch finishes both first, the ranges apart.
  const auto f = beside_finding("gemm", {way("kernel", 50e9, 1.10, 1.12, 1.15), way("batch", 40e9, 0.95, 1.0, 1.02)});
  ASSERT_TRUE(f);
  EXPECT_EQ(f->fastest_alone, "kernel");
  EXPECT_EQ(f->first_beside, "batch");
  EXPECT_NEAR(f->sooner, 1 - 1.0 / 1.12, 1e-12);
  EXPECT_NE(f->text.find("beside gemm, batch finishes both 11% sooner than kernel"), std::string::npos) << f->text;
  // The fastest alone also first: nothing to say.
  EXPECT_FALSE(beside_finding("gemm", {way("kernel", 50e9, 0.9, 0.95, 1.0), way("batch", 40e9, 1.05, 1.1, 1.2)}));
  // Ranges that meet: not a claim a rerun keeps.
  EXPECT_FALSE(beside_finding("gemm", {way("kernel", 50e9, 1.0, 1.12, 1.15), way("batch", 40e9, 0.95, 1.0, 1.02)}));
  EXPECT_FALSE(beside_finding("gemm", {way("kernel", 50e9, 1.1, 1.12, 1.15)}));
}

// The host step, except that its plain copy to the device loses the last
// byte's value: the plain way's data check must see it.
class lossy_step final : public mem::device_step {
 public:
  std::string_view name() const noexcept override { return "lossy"; }
  std::string device_key() const override { return "lossy"; }
  mem::host_resource& staging_memory() override { return inner_.staging_memory(); }
  std::unique_ptr<mem::staging_lane> open_lane(unsigned slots) override { return inner_.open_lane(slots); }
  void plain_to_device(mem::device_ref dst, std::size_t offset, const void* src, std::size_t bytes) override {
    inner_.plain_to_device(dst, offset, src, bytes);
    static_cast<unsigned char*>(dst.handle)[offset + bytes - 1] ^= 0xff;
  }
  void plain_to_host(void* dst, mem::device_ref src, std::size_t offset, std::size_t bytes) override {
    inner_.plain_to_host(dst, src, offset, bytes);
  }
  mem::device_ref allocate(std::size_t bytes) override { return inner_.allocate(bytes); }
  void deallocate(mem::device_ref d) noexcept override { inner_.deallocate(d); }
  const void* host_view(mem::device_ref d) const noexcept override { return inner_.host_view(d); }

 private:
  mem::host_step inner_;
};

options quick(std::vector<std::string> ways) {
  options o;
  o.workloads = {"cpu-memory"};
  o.ways = std::move(ways);
  o.block_bytes = 4096;
  o.blocks = 16;
  o.work_bytes = 1 << 16;
  o.threads = 1;
  o.seconds = 0.002;
  o.rounds = 2;
  return o;
}

// The host block step with the CUDA step's rule on queues (block_step.hpp):
// one open at a time. A second open while one is open throws here, where
// the CUDA step waits for the first forever.
class one_queue_step final : public mem::block_step {
 public:
  std::string_view name() const noexcept override { return inner_.name(); }
  std::string device_key() const override { return inner_.device_key(); }
  mem::host_resource& staging_memory() override { return inner_.staging_memory(); }
  mem::host_access access(const void* host, std::size_t bytes) override { return inner_.access(host, bytes); }
  std::string batch_unavailable() const override { return inner_.batch_unavailable(); }
  std::unique_ptr<mem::block_queue> open_queue(void* after_queue) override {
    if (open_.exchange(true)) throw mem::device_step_error("a second queue opened while one is open");
    return std::make_unique<queue>(inner_.open_queue(after_queue), open_);
  }
  mem::device_ref allocate(std::size_t bytes) override { return inner_.allocate(bytes); }
  void deallocate(mem::device_ref d) noexcept override { inner_.deallocate(d); }
  const void* host_view(mem::device_ref d) const noexcept override { return inner_.host_view(d); }

 private:
  class queue final : public mem::block_queue {
   public:
    queue(std::unique_ptr<mem::block_queue> q, std::atomic<bool>& open) : q_(std::move(q)), open_(open) {}
    ~queue() override { open_ = false; }
    void copy(void* dst, const void* src, std::size_t bytes) override { q_->copy(dst, src, bytes); }
    void copy_batch(void* const* d, const void* const* s, std::size_t bytes, std::size_t count) override {
      q_->copy_batch(d, s, bytes, count);
    }
    void copy_blocks(void* dst, const void* src, std::size_t block_bytes, const std::int64_t* si,
                     const std::int64_t* di, std::size_t count) override {
      q_->copy_blocks(dst, src, block_bytes, si, di, count);
    }
    std::size_t mark() override { return q_->mark(); }
    void wait(std::size_t m) override { q_->wait(m); }
    void finish() override { q_->finish(); }

   private:
    std::unique_ptr<mem::block_queue> q_;
    std::atomic<bool>& open_;
  };
  mem::host_block_step inner_;
  std::atomic<bool> open_{false};
};

TEST(BesideStudy, EveryPinnedWayRunsOnAStepThatOpensOneQueueAtATime) {
  sides s = host_sides();
  s.blocks = std::make_unique<one_queue_step>();
  beside_study study(quick({"copy", "loop", "batch", "kernel", "pack"}), std::move(s));
  test::recording_context ctx;
  study.run(ctx);
  const auto results = ctx.section("results");
  ASSERT_EQ(results.size(), 5u);
  for (const auto& r : results) {
    EXPECT_EQ(r["status"], "ok") << r.dump();
    EXPECT_EQ(r.value("verified", false), true) << r.dump();
  }
}

TEST(BesideMeasure, AChoiceIsCheckedAgainstTheBestWayByJointTime) {
  auto way = [](std::string name, double joint) {
    way_summary w{std::move(name), {}};
    w.s.joint_s = {joint, joint, joint};
    return w;
  };
  const std::vector<way_summary> ways{way("kernel", 2.0), way("batch", 1.6), way("loop", 1.8)};
  const auto slower = check_choice("gpu-compute", way("auto", 2.0), "kernel", ways);
  ASSERT_TRUE(slower);
  EXPECT_EQ(slower->best_way, "batch");
  EXPECT_EQ(slower->chose, "kernel");
  EXPECT_NEAR(slower->vs_best, 0.25, 1e-12);  // 2.0 against 1.6: 25% longer
  const auto best = check_choice("gpu-compute", way("auto-beside", 1.6), "batch", ways);
  ASSERT_TRUE(best);
  EXPECT_NEAR(best->vs_best, 0.0, 1e-12);
  EXPECT_FALSE(check_choice("gpu-compute", way("auto", 1.0), "batch", {}));
}

TEST(BesideStudy, TheBlockCopiersChoicesAreCheckedAgainstTheWaysAndKeptOutOfTheFinding) {
  beside_study study(quick({"copy", "loop", "batch", "auto", "auto-beside"}), host_sides());
  test::recording_context ctx;
  study.run(ctx);
  const auto results = ctx.section("results");
  ASSERT_EQ(results.size(), 5u);
  for (const auto& r : results) EXPECT_EQ(r["status"], "ok") << r.dump();
  EXPECT_FALSE(results[1].contains("chose"));
  EXPECT_TRUE(results[3].contains("chose"));
  const auto choices = ctx.section("choices");
  ASSERT_EQ(choices.size(), 2u);
  EXPECT_EQ(choices[0]["copier"], "auto");
  EXPECT_EQ(choices[1]["copier"], "auto-beside");
  for (const auto& c : choices) {
    // One of the ways the copier chooses among: never a copier, never the contiguous copy.
    EXPECT_TRUE(c["best_way"] == "loop" || c["best_way"] == "batch") << c.dump();
    EXPECT_NEAR(c["vs_best"].get<double>(), c["joint_s"].get<double>() / c["best_joint_s"].get<double>() - 1, 1e-9);
  }
  for (const auto& f : ctx.section("findings")) {
    EXPECT_NE(f["first_beside"], "auto");
    EXPECT_NE(f["first_beside"], "auto-beside");
  }
}

TEST(BesideStudy, AWayTheStepRefusesIsSkippedWithItsReasonAndTheOthersRun) {
  sides s = host_sides();
  s.blocks = std::make_unique<mem::host_block_step>(
      mem::host_block_step::options{.batch_unavailable = "no cudaMemcpyBatchAsync in this driver"});
  beside_study study(quick({"batch", "loop"}), std::move(s));
  test::recording_context ctx;
  study.run(ctx);
  const auto results = ctx.section("results");
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0]["way"], "batch");
  EXPECT_EQ(results[0]["status"], "skipped");
  EXPECT_NE(results[0]["reason"].get<std::string>().find("no cudaMemcpyBatchAsync"), std::string::npos);
  EXPECT_EQ(results[1]["way"], "loop");
  EXPECT_EQ(results[1]["status"], "ok");
  EXPECT_TRUE(results[1]["verified"]);
}

TEST(BesideStudy, ACopyWhoseDataDidNotArriveFails) {
  sides s = host_sides();
  s.contiguous = std::make_unique<lossy_step>();
  beside_study study(quick({"plain", "copy"}), std::move(s));
  test::recording_context ctx;
  study.run(ctx);
  const auto results = ctx.section("results");
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0]["status"], "failed");
  EXPECT_FALSE(results[0]["verified"]);
  EXPECT_NE(results[0]["reason"].get<std::string>().find("byte 65535"), std::string::npos) << results[0]["reason"];
  const auto plain = std::find_if(ctx.records.begin(), ctx.records.end(),
                                  [](const record& r) { return r.section == "results"; });
  ASSERT_NE(plain, ctx.records.end());
  EXPECT_EQ(plain->status, point_status::failed);  // the exit code sees it
  EXPECT_EQ(results[1]["status"], "ok");
  EXPECT_TRUE(ctx.section("findings").empty());  // a failed way is in no comparison
}

TEST(BesideStudy, APointTheWatchdogLeftFailsItsWayAndEndsTheWorkload) {
  beside_study study(quick({"copy", "loop"}), host_sides());
  test::recording_context ctx;
  ctx.leave = {2};  // after the sizing pass, round 1's second point: the loop way (it may still be running both sides)
  study.run(ctx);
  const auto results = ctx.section("results");
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0]["way"], "copy");
  EXPECT_EQ(results[0]["status"], "ok");  // its round before stands
  EXPECT_EQ(results[0]["rounds"], 1);
  EXPECT_NE(results[0]["note"].get<std::string>().find("not measured further"), std::string::npos);
  EXPECT_EQ(results[1]["way"], "loop");
  EXPECT_EQ(results[1]["status"], "failed");
  EXPECT_NE(results[1]["reason"].get<std::string>().find("watchdog"), std::string::npos);
  EXPECT_EQ(ctx.watched_points, 3u);  // nothing ran beside the workload after it
}

TEST(BesideStudy, ASizingPassTheWatchdogLeftFailsEveryWayOfTheWorkload) {
  options o = quick({"copy", "loop"});
  o.workloads = {"cpu-memory", "cpu-compute"};
  beside_study study(o, host_sides());
  test::recording_context ctx;
  ctx.leave = {0};  // the first workload's sizing pass
  study.run(ctx);
  const auto results = ctx.section("results");
  ASSERT_EQ(results.size(), 4u);
  for (int i : {0, 1}) {
    EXPECT_EQ(results[i]["workload"], "cpu-memory");
    EXPECT_EQ(results[i]["status"], "failed");
    EXPECT_NE(results[i]["reason"].get<std::string>().find("sizing the job"), std::string::npos);
  }
  for (int i : {2, 3}) EXPECT_EQ(results[i]["status"], "ok");  // the next workload's sides are new
}

TEST(BesideStudy, BadOptionsAreUsageErrors) {
  for (auto bad : {+[](options& o) { o.ways = {"dma"}; }, +[](options& o) { o.direction = "up"; },
                   +[](options& o) { o.blocks = 0; }, +[](options& o) { o.seconds = 0; },
                   +[](options& o) { o.rounds = 0; }, +[](options& o) { o.threads = -1; }}) {
    options o = quick({});
    bad(o);
    EXPECT_THROW(beside_study(o, host_sides()), xfer::usage_error);
  }
}

}  // namespace
}  // namespace xfer::beside
