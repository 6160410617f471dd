// Core's timed-batch loop (timed_batches): the order of its steps, the split
// into sub-batches, the gate opening on every path, and the one behaviour when
// a gate cannot hold: rerun ungated, run ungated from then on, and record it
// in every later sample and in the point's result.
#include <atomic>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>
#include <xfer/core/result.hpp>
#include <xfer/core/runner.hpp>
#include <xfer/core/timing.hpp>

#include "fake_backend.hpp"
#include "result_json.hpp"

namespace xfer {
namespace {

// Writes every step into one log, so the tests can read their order.
struct script_gate final : gate {
  std::vector<std::string>* log;
  std::size_t cap = max_ops_behind_gate;
  std::vector<bool> give_way;  // per close(), whether the gate gives way that time
  std::size_t closes = 0;
  bool closed = false;
  explicit script_gate(std::vector<std::string>& l) : log(&l) {}
  void close() override {
    log->push_back("close");
    closed = true;
    ++closes;
  }
  void open() override {
    log->push_back("open");
    closed = false;
  }
  bool gave_way() const override { return closes > 0 && closes <= give_way.size() && give_way[closes - 1]; }
  std::string give_way_rule() const override { return "its test watchdog opens it at once"; }
  std::size_t capacity() const override { return cap; }
};

struct script_timer final : interval_timer {
  std::vector<std::string>* log;
  std::vector<double> times;  // seconds() of successive intervals (then 1.0)
  std::size_t intervals = 0, cancels = 0;
  explicit script_timer(std::vector<std::string>& l) : log(&l) {}
  void start() override { log->push_back("start"); }
  void stop() override { log->push_back("stop"); }
  double seconds() override {
    log->push_back("seconds");
    const double t = intervals < times.size() ? times[intervals] : 1.0;
    ++intervals;
    return t;
  }
  double resolution_s() const override { return 1e-6; }
  clock_kind kind() const override { return clock_kind::event; }
  void add_parts(std::map<std::string, double>& parts) const override { parts["lane"] += 0.5; }
  void cancel() noexcept override { ++cancels; }
};

TEST(TimedBatches, SplitsABatchIntoSubBatchesTheGateCanHoldAndSumsThem) {
  std::vector<std::string> log;
  script_gate g(log);
  script_timer timer(log);
  timed_batches loop(g, 2);  // two commands per repetition: 128 repetitions per sub-batch
  std::vector<std::pair<std::size_t, std::size_t>> calls;
  const sample s = loop.run(timer, 300, [&](std::size_t i, std::size_t n) {
    calls.emplace_back(i, n);
    log.push_back("enqueue");
  });
  ASSERT_EQ(calls.size(), 300u);
  EXPECT_EQ(calls[0], (std::pair<std::size_t, std::size_t>{0, 128}));
  EXPECT_EQ(calls[127], (std::pair<std::size_t, std::size_t>{127, 128}));
  EXPECT_EQ(calls[128], (std::pair<std::size_t, std::size_t>{0, 128}));
  EXPECT_EQ(calls[256], (std::pair<std::size_t, std::size_t>{0, 44}));
  EXPECT_EQ(calls[299], (std::pair<std::size_t, std::size_t>{43, 44}));
  EXPECT_EQ(g.closes, 3u);
  EXPECT_DOUBLE_EQ(s.seconds, 3.0);
  EXPECT_GE(s.wall_seconds, 0);
  EXPECT_DOUBLE_EQ(s.parts.at("lane"), 1.5);
  EXPECT_TRUE(s.gate_fallback.empty());

  // One sub-batch, step by step: the timer's marks inside the closed gate,
  // the wait for the work after it opens.
  std::vector<std::string> first(log.begin(), log.begin() + 3);
  EXPECT_EQ(first, (std::vector<std::string>{"close", "start", "enqueue"}));
  const std::vector<std::string> end_of_first(log.begin() + 2 + 128, log.begin() + 2 + 128 + 4);
  EXPECT_EQ(end_of_first, (std::vector<std::string>{"stop", "open", "seconds", "close"}));
  EXPECT_FALSE(g.closed);
}

TEST(TimedBatches, WithoutAGateABatchRunsWhole) {
  std::vector<std::string> log;
  no_gate g;
  script_timer timer(log);
  timed_batches loop(g, 4);
  std::size_t n_seen = 0, calls = 0;
  const sample s = loop.run(timer, 10000, [&](std::size_t, std::size_t n) {
    n_seen = n;
    ++calls;
  });
  EXPECT_EQ(calls, 10000u);
  EXPECT_EQ(n_seen, 10000u);
  EXPECT_EQ(timer.intervals, 1u);
  EXPECT_DOUBLE_EQ(s.seconds, 1.0);
  EXPECT_TRUE(s.gate_fallback.empty()) << "a route ungated by design has not fallen back";
}

TEST(TimedBatches, NoRepetitionsTimeNothing) {
  std::vector<std::string> log;
  script_gate g(log);
  script_timer timer(log);
  timed_batches loop(g);
  const sample s = loop.run(timer, 0, [&](std::size_t, std::size_t) { ADD_FAILURE() << "enqueued"; });
  EXPECT_TRUE(log.empty());
  EXPECT_EQ(s.seconds, 0);
}

TEST(TimedBatches, AGateThatGivesWayIsRerunUngatedAndRecorded) {
  std::vector<std::string> log;
  script_gate g(log);
  g.cap = 10;
  g.give_way = {false, true};  // the second sub-batch blocks behind the gate
  script_timer timer(log);
  // The discarded interval is the gate's bound, not the work: 50 s.
  timer.times = {1.0, 50.0, 2.0, 3.0};
  timed_batches loop(g);
  std::size_t calls = 0;
  const sample s = loop.run(timer, 25, [&](std::size_t, std::size_t) { ++calls; });
  EXPECT_EQ(g.closes, 2u) << "after giving way the gate is never closed again";
  EXPECT_EQ(calls, 10u + 10u + 10u + 5u) << "the sub-batch that gave way runs again, then the rest in one";
  EXPECT_DOUBLE_EQ(s.seconds, 1.0 + 2.0 + 3.0);
  EXPECT_DOUBLE_EQ(s.parts.at("lane"), 1.5) << "the discarded interval's parts are not counted";
  EXPECT_NE(s.gate_fallback.find("the gate gave way (its test watchdog opens it at once)"), std::string::npos)
      << s.gate_fallback;
  EXPECT_NE(s.gate_fallback.find("10 repetitions"), std::string::npos) << s.gate_fallback;
  EXPECT_EQ(loop.fallback(), s.gate_fallback);

  // Every later sample runs ungated and says so.
  const sample next = loop.run(timer, 100, [&](std::size_t, std::size_t) {});
  EXPECT_EQ(g.closes, 2u);
  EXPECT_EQ(next.gate_fallback, s.gate_fallback);
}

TEST(TimedBatches, AFallbackKnownInAdvanceSkipsTheGateAndIsRecorded) {
  std::vector<std::string> log;
  script_gate g(log);
  script_timer timer(log);
  timed_batches loop(g);
  loop.fall_back("host memory 'managed' blocked the host in an earlier point");
  const sample s = loop.run(timer, 1000, [&](std::size_t, std::size_t) {});
  EXPECT_EQ(g.closes, 0u);
  EXPECT_EQ(timer.intervals, 1u) << "ungated: no split";
  EXPECT_EQ(s.gate_fallback, "host memory 'managed' blocked the host in an earlier point");
}

TEST(TimedBatches, AnEnqueueThatThrowsOpensTheGateAndCancelsTheTimer) {
  std::vector<std::string> log;
  script_gate g(log);
  script_timer timer(log);
  timed_batches loop(g);
  EXPECT_THROW(loop.run(timer, 10,
                        [&](std::size_t i, std::size_t) {
                          if (i == 3) throw std::runtime_error("enqueue failed");
                        }),
               std::runtime_error);
  EXPECT_FALSE(g.closed);
  EXPECT_EQ(timer.cancels, 1u);
  // ...and the loop still works afterwards, gated.
  const sample s = loop.run(timer, 10, [&](std::size_t, std::size_t) {});
  EXPECT_FALSE(g.closed);
  EXPECT_EQ(g.closes, 2u);
  EXPECT_DOUBLE_EQ(s.seconds, 1.0);
  EXPECT_TRUE(s.gate_fallback.empty());
}

// The runner carries a sample's fallback into the point's result, and the
// result file carries it (only where there was one).
TEST(TimedBatches, TheRunnerRecordsAFallbackInThePointsResult) {
  test::fake_transfer healthy;
  const point_spec p{"fake", 0, route_kind::copy_sync, direction::h2d, "pageable", 1000};
  const device_info dev{.index = 0, .name = "dev0", .type = "gpu", .memory_bytes = 0, .max_alloc_bytes = 0,
                        .details = {}};
  measure_options o;
  o.warmup_s = 0;
  o.max_time_s = 0.001;
  o.max_samples = 4;
  const std::atomic<bool> stop{false};
  const point_result ok = measure(healthy, p, dev, o, stop);
  ASSERT_EQ(ok.status, point_status::ok) << ok.reason;
  EXPECT_TRUE(ok.gate_fallback.empty());
  EXPECT_FALSE(nlohmann::json(ok).contains("gate_fallback"));

  struct falling_back final : transfer {
    std::size_t calls = 0;
    sample run(std::size_t reps) override {
      sample s{1e-3 * static_cast<double>(reps), 2e-3 * static_cast<double>(reps), {}, {}};
      if (++calls >= 3) s.gate_fallback = "the gate gave way";
      return s;
    }
    void verify() override {}
    void poison_sample() override {}
    void check_sample() override {}
    first_use setup_costs() const override { return {}; }
    clock_kind timer_kind() const override { return clock_kind::event; }
    double timer_resolution_s() const override { return 1e-6; }
    std::uint64_t bytes_per_rep() const override { return 1000; }
  } fell;
  const point_result r = measure(fell, p, dev, o, stop);
  ASSERT_EQ(r.status, point_status::ok) << r.reason;
  EXPECT_EQ(r.gate_fallback, "the gate gave way");
  const nlohmann::json j = r;
  EXPECT_EQ(j.at("gate_fallback"), "the gate gave way");
  EXPECT_EQ(j.get<point_result>().gate_fallback, "the gate gave way");
}

}  // namespace
}  // namespace xfer
