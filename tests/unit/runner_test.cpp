#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <xfer/core/reporter.hpp>
#include <xfer/core/runner.hpp>

#include "fake_backend.hpp"

using namespace xfer;

namespace {

const device_info dev{.index = 0, .name = "dev0", .type = "gpu", .memory_bytes = 0, .max_alloc_bytes = 0, .details = {}, .unavailable_kinds = {}};
const point_spec spec{"fake", 0, route_kind::copy_sync, direction::h2d, "pageable", 1000};

measure_options fast() {
  measure_options o;
  o.warmup_s = 0;
  o.max_time_s = 0.05;
  return o;
}

}  // namespace

TEST(Measure, SteadyTimesConvergeAtMinSamples) {
  test::fake_transfer t;
  std::atomic<bool> stop{false};
  const auto r = measure(t, spec, dev, fast(), stop);
  EXPECT_EQ(r.status, point_status::ok);
  EXPECT_TRUE(r.converged);
  EXPECT_EQ(r.stopped_by, "converged");
  EXPECT_TRUE(r.verified);
  EXPECT_EQ(r.samples_s.size(), 8u);
  EXPECT_DOUBLE_EQ(r.stats.median, 1e-3);
  EXPECT_DOUBLE_EQ(r.wall_stats.median, 1.5e-3);
  EXPECT_DOUBLE_EQ(r.gbps(), 1000 / 1e-3 / 1e9);
  EXPECT_DOUBLE_EQ(r.latency_us(), 1000.0);
  EXPECT_EQ(r.timer, clock_kind::event);
  EXPECT_DOUBLE_EQ(r.first.alloc_s, 0.5);
  EXPECT_GT(r.first.first_transfer_s, 0);
}

TEST(Measure, BatchesLongEnoughForTheTimer) {
  test::fake_transfer t;
  t.seconds_per_rep = [](std::size_t) { return 1e-7; };  // 100 ns: 100 ticks of 1 us need 1000 reps
  std::atomic<bool> stop{false};
  const auto r = measure(t, spec, dev, fast(), stop);
  EXPECT_EQ(r.reps_per_sample, 1000u);
}

TEST(Measure, NoisyTimesStopAtTheBudgetUnconverged) {
  test::fake_transfer t;
  t.seconds_per_rep = [](std::size_t call) { return call % 2 ? 1e-3 : 3e-3; };
  std::atomic<bool> stop{false};
  auto o = fast();
  o.max_samples = 40;
  const auto r = measure(t, spec, dev, o, stop);
  EXPECT_EQ(r.status, point_status::ok);
  EXPECT_FALSE(r.converged);
  EXPECT_GT(r.ci_rel, o.target_ci);
  EXPECT_LE(r.samples_s.size(), 40u);
  // Whichever came first, the result says why it stopped short.
  EXPECT_TRUE(r.stopped_by == "budget" || r.stopped_by == "max samples") << r.stopped_by;
  EXPECT_EQ(r.stopped_by == "max samples", r.samples_s.size() == 40u);
}

TEST(Measure, TheNoteSaysHowThePointRanOnceItHas) {
  // Read after the samples, not only when the transfer was attached: a
  // staged route's team grows while the copies of several devices run.
  test::fake_transfer t;
  t.describe = [&t] { return "runs " + std::to_string(t.calls); };
  std::atomic<bool> stop{false};
  const auto r = measure(t, spec, dev, fast(), stop);
  EXPECT_GT(t.calls, 1u);
  EXPECT_EQ(r.note, "runs " + std::to_string(t.calls));
  t.fail_verify = true;
  const auto failed = measure(t, spec, dev, fast(), stop);
  EXPECT_EQ(failed.status, point_status::failed);
  EXPECT_EQ(failed.note, "runs " + std::to_string(t.calls)) << "a failed point's too";
}

TEST(Measure, VerificationFailureFailsThePoint) {
  test::fake_transfer t;
  t.fail_verify = true;
  std::atomic<bool> stop{false};
  const auto r = measure(t, spec, dev, fast(), stop);
  EXPECT_EQ(r.status, point_status::failed);
  EXPECT_NE(r.reason.find("verification failed: byte 3 differs"), std::string::npos) << r.reason;
}

TEST(Measure, NoVerifySkipsTheCheck) {
  test::fake_transfer t;
  t.fail_verify = true;
  std::atomic<bool> stop{false};
  auto o = fast();
  o.verify = false;
  const auto r = measure(t, spec, dev, o, stop);
  EXPECT_EQ(r.status, point_status::ok);
  EXPECT_FALSE(r.verified);
}

TEST(RunSweep, SkipsAndFailuresAreRecordedAndTheRunGoesOn) {
  test::fake_backend b;
  b.make = [](const point_spec& p) -> std::unique_ptr<transfer> {
    if (p.host_memory == "pinned") throw skip_point("no driver");
    auto t = std::make_unique<test::fake_transfer>();
    if (p.bytes == 2) t->throw_on_run = true;
    return t;
  };
  std::vector<point_spec> points{{"fake", 0, route_kind::copy_sync, direction::h2d, "pinned", 1},
                                 {"fake", 0, route_kind::copy_sync, direction::h2d, "pageable", 2},
                                 {"fake", 1, route_kind::copy_sync, direction::h2d, "pageable", 4}};
  collecting_reporter out;
  std::atomic<bool> stop{false};
  const auto o = run_sweep(b, points, fast(), out, stop);
  EXPECT_EQ(o.skipped, 1u);
  EXPECT_EQ(o.failed, 1u);
  EXPECT_EQ(o.ok, 1u);
  ASSERT_EQ(out.points.size(), 3u);
  EXPECT_EQ(out.points[0].reason, "no driver");
  EXPECT_EQ(out.points[1].reason, "device fell off the bus");
  EXPECT_EQ(out.points[2].device_name, "dev1");
}

TEST(RunSweep, StopFlagEndsTheRunBetweenPoints) {
  test::fake_backend b;
  std::atomic<bool> stop{false};
  b.make = [&](const point_spec& p) -> std::unique_ptr<transfer> {
    if (p.bytes == 2) stop = true;  // as if Ctrl-C arrived while point 2 ran
    return std::make_unique<test::fake_transfer>();
  };
  std::vector<point_spec> points;
  for (std::uint64_t n : {1, 2, 4, 8}) points.push_back({"fake", 0, route_kind::copy_sync, direction::h2d, "pageable", n});
  collecting_reporter out;
  const auto o = run_sweep(b, points, fast(), out, stop);
  EXPECT_TRUE(o.interrupted);
  // Point 1 completed; point 2 was cut short and is left out, not reported as failed.
  ASSERT_EQ(out.points.size(), 1u);
  EXPECT_EQ(out.points[0].spec.bytes, 1u);
}

// ---- the watchdog ----------------------------------------------------------------

// A transfer that never returns: the point fails with the time waited, the
// backend's later points are skipped (a thread is still inside it), and the
// sweep finishes.
namespace {

// A backend whose 2-byte point never returns until released; the test waits
// for that thread to finish before the backend it uses goes away.
struct hanging_backend {
  test::fake_backend b;
  std::atomic<bool> released{false}, hung_one_gone{false};
  std::vector<point_spec> points;
  hanging_backend() {
    b.make = [this](const point_spec& p) -> std::unique_ptr<transfer> {
      auto t = std::make_unique<test::fake_transfer>();
      if (p.bytes == 2) {
        t->released = &released;
        t->on_destroy = [this] { hung_one_gone = true; };
      }
      return t;
    };
    for (std::uint64_t n : {1, 2, 4}) points.push_back({"fake", 0, route_kind::copy_sync, direction::h2d, "pageable", n});
  }
  ~hanging_backend() {
    released = true;
    while (!hung_one_gone) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
};

}  // namespace

TEST(RunSweep, AHangingPointFailsWithItsTimeAndTheBackendIsLeftBehind) {
  hanging_backend h;
  auto& b = h.b;
  auto& points = h.points;
  collecting_reporter out;
  std::atomic<bool> stop{false};
  measure_options o = fast();
  o.watchdog_s = 0.3;
  const auto t0 = std::chrono::steady_clock::now();
  const auto outcome = run_sweep(b, points, o, out, stop);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  EXPECT_TRUE(outcome.abandoned);
  EXPECT_FALSE(outcome.interrupted);
  EXPECT_EQ(outcome.ok, 1u);
  EXPECT_EQ(outcome.failed, 1u);
  EXPECT_EQ(outcome.skipped, 1u);
  ASSERT_EQ(out.points.size(), 3u);
  EXPECT_EQ(out.points[1].status, point_status::failed);
  EXPECT_NE(out.points[1].reason.find("no result after 0.3 s"), std::string::npos) << out.points[1].reason;
  EXPECT_EQ(out.points[2].status, point_status::skipped);
  EXPECT_NE(out.points[2].reason.find("still stuck in an earlier point (copy-sync h2d pageable 2 B)"), std::string::npos)
      << out.points[2].reason;
}

// A stop request while a point hangs returns promptly with what was completed:
// under the derived bound (30 s and more), and with the watchdog off, which
// lifts the bound but not the thread (sweep --watchdog 0 printed
// "stopping..." and never exited).
TEST(RunSweep, AStopDuringAStuckPointReturnsWithWhatWasDone) {
  for (const double watchdog_s : {-1.0, 0.0}) {
    hanging_backend h;
    std::atomic<bool> stop{false};
    collecting_reporter out;
    measure_options o = fast();
    o.watchdog_s = watchdog_s;
    std::thread signal([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      stop = true;
    });
    const auto t0 = std::chrono::steady_clock::now();
    const auto outcome = run_sweep(h.b, h.points, o, out, stop);
    signal.join();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10)) << watchdog_s;
    EXPECT_TRUE(outcome.interrupted);
    EXPECT_TRUE(outcome.abandoned);
    ASSERT_EQ(out.points.size(), 1u);
    EXPECT_EQ(out.points[0].spec.bytes, 1u);
  }
}

TEST(Watchdog, TheDerivedBoundIsGenerousAndGrowsWithSizeAndBudget) {
  // A 2 GiB PoCL point with --max-time 0.01 took 43 s on a 2-core machine.
  EXPECT_GT(watchdog_bound(std::uint64_t{2} << 30, 0.01), 2 * 43.0);
  EXPECT_GE(watchdog_bound(1, 0.01), 30.0);
  EXPECT_GT(watchdog_bound(1 << 20, 0.5), watchdog_bound(1 << 20, 0.05));
  EXPECT_GT(watchdog_bound(1 << 30, 0.05), watchdog_bound(1 << 20, 0.05));
}

// ---- every sample is checked ----------------------------------------------------

// Corruption that starts after the first check (the pipeline goes bad under
// load) fails the point: each timed sample's last transfer is checked.
TEST(Measure, ACorruptTimedSampleFailsThePoint) {
  test::fake_transfer t;
  t.fail_check_from = 3;
  std::atomic<bool> stop{false};
  const auto r = measure(t, spec, dev, fast(), stop);
  EXPECT_EQ(r.status, point_status::failed);
  EXPECT_NE(r.reason.find("verification failed: sample's last transfer"), std::string::npos) << r.reason;
}

// A transfer that goes bad after the first quarter of the sampling (samples
// 3 on of 8) while checks are thinned to the first: the last sample is
// checked whatever checking cost before, so the point fails.
TEST(Measure, CorruptionAfterTheThinnedChecksFailsThePoint) {
  test::fake_transfer t;
  t.check_s = 4e-3;  // far above the share: only the first sample is armed
  t.corrupt_after_runs = 2;
  std::atomic<bool> stop{false};
  const auto r = measure(t, spec, dev, fast(), stop);
  EXPECT_EQ(t.arms, 1u);
  EXPECT_EQ(r.status, point_status::failed);
  EXPECT_NE(r.reason.find("verification failed: sample's last transfer"), std::string::npos) << r.reason;
}

// A check that costs more than the sample it checks (a large buffer read on
// one CPU core after a fast copy) would spend the point's budget on checking:
// the first sample is checked, then only as many as keep checking within its
// share of the time spent sampling.
TEST(Measure, ChecksCostlierThanSamplesAreThinnedToTheSamplingTime) {
  test::fake_transfer t;
  t.check_s = 4e-3;  // each sample reports 1.5 ms of wall time
  std::atomic<bool> stop{false};
  const auto r = measure(t, spec, dev, fast(), stop);
  ASSERT_EQ(r.status, point_status::ok);
  EXPECT_GE(r.samples_checked, 2u);
  EXPECT_LT(r.samples_checked, r.samples_s.size());
  // Every armed sample checked, and the last one on top (check_last).
  EXPECT_EQ(t.arms + 1, r.samples_checked);
  EXPECT_EQ(t.checks, r.samples_checked);
  double sampled = 0;
  for (double w : r.wall_samples_s) sampled += w * r.reps_per_sample;
  EXPECT_LE((t.arms - 1) * t.check_s, fast().check_share * sampled);
  EXPECT_GT(r.spent.checking_s, 0);
  EXPECT_GE(r.spent.sampling_s, 0);
}

TEST(Measure, EveryTimedSampleIsArmedAndChecked) {
  test::fake_transfer t;
  std::atomic<bool> stop{false};
  const auto r = measure(t, spec, dev, fast(), stop);
  ASSERT_EQ(r.status, point_status::ok);
  EXPECT_EQ(r.samples_checked, r.samples_s.size());
  EXPECT_EQ(t.arms, r.samples_s.size());
  EXPECT_EQ(t.checks, r.samples_s.size());
  test::fake_transfer unchecked;
  measure_options o = fast();
  o.verify = false;
  const auto u = measure(unchecked, spec, dev, o, stop);
  EXPECT_EQ(u.samples_checked, 0u);
  EXPECT_EQ(unchecked.arms + unchecked.checks, 0u);
}

// Time quiet points leave unused goes to a later noisy one: its budget is its
// own plus what was left, and it uses it; with lending off it has its own.
TEST(RunSweep, TimeQuietPointsLeaveIsLentToANoisyOne) {
  test::fake_backend b;
  b.make = [](const point_spec& p) -> std::unique_ptr<transfer> {
    auto t = std::make_unique<test::fake_transfer>();
    if (p.bytes == 4) t->seconds_per_rep = [](std::size_t call) { return call % 2 ? 1e-3 : 3e-3; };
    return t;
  };
  std::vector<point_spec> points;
  for (std::uint64_t n : {1, 2, 3, 4}) points.push_back({"fake", 0, route_kind::copy_sync, direction::h2d, "pageable", n});
  auto o = fast();
  o.watchdog_s = 0;
  o.max_samples = 1u << 30;  // the fake's samples take no real time: only the budget may stop it
  std::atomic<bool> stop{false};
  collecting_reporter lent;
  run_sweep(b, points, o, lent, stop);
  ASSERT_EQ(lent.points.size(), 4u);
  EXPECT_DOUBLE_EQ(lent.points[0].budget_s, o.max_time_s);
  const auto& noisy = lent.points[3];
  EXPECT_TRUE(lent.points[0].converged && lent.points[1].converged && lent.points[2].converged);
  EXPECT_FALSE(noisy.converged);
  EXPECT_GT(noisy.budget_s, 2 * o.max_time_s);  // three quiet points left nearly all of theirs
  EXPECT_LE(noisy.budget_s, 4 * o.max_time_s);
  EXPECT_GE(noisy.spent.sampling_s + noisy.spent.checking_s, noisy.budget_s);

  o.lend_cap_x = 0;
  collecting_reporter own;
  run_sweep(b, points, o, own, stop);
  ASSERT_EQ(own.points.size(), 4u);
  EXPECT_DOUBLE_EQ(own.points[3].budget_s, o.max_time_s);
}

// sweep --budget: the whole run's time is shared out point by point, and what
// quiet points leave goes to the points after them.
TEST(RunSweep, AWholeRunBudgetGivesEachPointItsShareAndPassesOnWhatQuietOnesLeave) {
  test::fake_backend b;
  b.make = [](const point_spec& p) -> std::unique_ptr<transfer> {
    auto t = std::make_unique<test::fake_transfer>();
    if (p.bytes == 4) t->seconds_per_rep = [](std::size_t call) { return call % 2 ? 1e-3 : 3e-3; };
    return t;
  };
  std::vector<planned_point> points;
  for (std::uint64_t n : {1, 2, 3, 4})
    points.push_back({{"fake", 0, route_kind::copy_sync, direction::h2d, "pageable", n}, ""});
  points.push_back({{"fake", 0, route_kind::copy_sync, direction::h2d, "pageable", 5}, "cannot run here"});
  auto o = fast();
  o.watchdog_s = 0;
  o.max_samples = 1u << 30;
  const double total = 0.4;
  run_budget budget(total, 4);  // the skipped point is not counted
  std::atomic<bool> stop{false};
  collecting_reporter got;
  run_sweep(b, points, o, got, stop, {}, &budget);
  ASSERT_EQ(got.points.size(), 5u);
  // The first point's share is the whole over the points (nothing has cost anything yet).
  EXPECT_NEAR(got.points[0].budget_s, run_budget::first_pass_share * total / 4, 0.02);
  EXPECT_TRUE(got.points[0].converged && got.points[1].converged && got.points[2].converged);
  // The noisy last point gets what the three quiet ones left: most of the run.
  EXPECT_GT(got.points[3].budget_s, total / 2);
  EXPECT_FALSE(got.points[3].converged);
  EXPECT_EQ(got.points[4].status, point_status::skipped);
}

TEST(RunBudget, NeverBelowTheFloorAndTheSmallestBudgetCountsEveryPoint) {
  run_budget spent(0.0, 10);
  EXPECT_DOUBLE_EQ(spent.next_point_s(), run_budget::min_point_s);
  EXPECT_DOUBLE_EQ(run_budget::smallest_for(1000, 0.005), 40.0);  // 10 ms sampling, 5 warm-up, 25 overhead
  EXPECT_DOUBLE_EQ(run_budget::smallest_for(1, 0.005), 1.0);  // whole seconds, rounded up
}

// The run's last step: a point that missed its target is held back, prepared
// again and measured again with what the budget has left, its samples joined
// to the first measurement's, and reported once.
TEST(Revisit, APointShortOfItsTargetIsMeasuredAgainAndReportedOnce) {
  test::fake_backend b;
  int prepared = 0;
  b.make = [&](const point_spec& p) -> std::unique_ptr<transfer> {
    auto t = std::make_unique<test::fake_transfer>();
    // Noisy on its first preparation, steady on the next: a point whose buffers decided its speed.
    if (p.bytes == 2 && prepared++ == 0) t->seconds_per_rep = [](std::size_t call) { return call % 2 ? 1e-3 : 3e-3; };
    return t;
  };
  std::vector<planned_point> points;
  for (std::uint64_t n : {1, 2, 3}) points.push_back({{"fake", 0, route_kind::copy_sync, direction::h2d, "pageable", n}, ""});
  auto o = fast();
  o.watchdog_s = 0;
  o.max_samples = 1u << 30;
  run_budget budget(0.6, points.size());
  std::atomic<bool> stop{false};
  collecting_reporter got;
  std::vector<unsettled_point> unsettled;
  const auto outcome = run_sweep(b, points, o, got, stop, {}, &budget, &unsettled);
  EXPECT_EQ(outcome.ok, 3u);
  ASSERT_EQ(got.points.size(), 2u);  // the noisy one is held back
  ASSERT_EQ(unsettled.size(), 1u);
  EXPECT_EQ(unsettled[0].first.spec.bytes, 2u);
  EXPECT_FALSE(unsettled[0].first.converged);

  // Near its target (2% against 1%, after 10 ms): another 30 ms would do, and a second's budget is left.
  point_result& first = unsettled[0].first;
  first.samples_s.assign(10, 1e-3);
  first.wall_samples_s.assign(10, 1.5e-3);
  first.ci_rel = 0.02;
  first.spent = {.prepare_s = 0, .warmup_s = 0, .sampling_s = 0.01, .checking_s = 0, .release_s = 0};
  run_budget more(1.0, 1);
  EXPECT_FALSE(revisit(unsettled, o, more, got, stop).abandoned);
  ASSERT_EQ(got.points.size(), 3u);
  const auto& again = got.points[2];
  EXPECT_EQ(again.spec.bytes, 2u);
  EXPECT_EQ(prepared, 2);  // fresh buffers: prepared a second time
  EXPECT_GT(again.samples_s.size(), 10u);  // the first measurement's ten, and the second's
  EXPECT_EQ(again.samples_s.size(), again.wall_samples_s.size());
  EXPECT_TRUE(again.converged);
  EXPECT_EQ(again.stopped_by, "converged (measured again)");
  EXPECT_GT(again.spent.sampling_s, 0.01);
}

TEST(Revisit, WithNoBudgetLeftThePointIsReportedAsItWas) {
  test::fake_backend b;
  int prepared = 0;
  b.make = [&](const point_spec&) -> std::unique_ptr<transfer> {
    ++prepared;
    return std::make_unique<test::fake_transfer>();
  };
  point_result first;
  first.spec = {"fake", 0, route_kind::copy_sync, direction::h2d, "pageable", 8};
  first.samples_s = {1e-3, 3e-3, 1e-3, 3e-3};
  first.ci_rel = 0.5;
  first.spent.sampling_s = 0.1;
  first.stopped_by = "budget";
  std::vector<unsettled_point> unsettled{{&b, {}, first}};
  run_budget spent(0.0, 1);
  std::atomic<bool> stop{false};
  collecting_reporter got;
  auto o = fast();
  o.watchdog_s = 0;
  EXPECT_FALSE(revisit(unsettled, o, spent, got, stop).abandoned);
  ASSERT_EQ(got.points.size(), 1u);
  EXPECT_EQ(got.points[0].stopped_by, "budget");
  EXPECT_EQ(got.points[0].samples_s.size(), 4u);
  EXPECT_EQ(prepared, 0);
}

namespace {

// A point measured once (ok, verified, short of its target) held back for revisit().
std::vector<unsettled_point> one_unsettled(test::fake_backend& b, double limit_s = 0) {
  point_result first;
  first.spec = {"fake", 0, route_kind::copy_sync, direction::h2d, "pageable", 8};
  first.samples_s.assign(10, 1e-3);
  first.wall_samples_s.assign(10, 1.5e-3);
  first.stats = summarize(first.samples_s);
  first.ci_rel = 0.02;
  first.verified = true;
  first.budget_s = 0.01;
  first.spent.sampling_s = 0.01;
  first.stopped_by = "budget";
  return {{&b, {}, first, limit_s}};
}

}  // namespace

// Issue 49: the second measurement is held to the first's rules. Corrupted
// data in it fails the point (it was kept ok and verified, exit 0).
TEST(Revisit, ASecondMeasurementThatFailsVerificationFailsThePointAndKeepsTheFirstFigures) {
  test::fake_backend b;
  b.make = [](const point_spec&) -> std::unique_ptr<transfer> {
    auto t = std::make_unique<test::fake_transfer>();
    t->fail_verify = true;
    return t;
  };
  auto unsettled = one_unsettled(b);
  run_budget more(1.0, 1);
  std::atomic<bool> stop{false};
  collecting_reporter got;
  auto o = fast();
  o.watchdog_s = 0;
  const auto outcome = revisit(unsettled, o, more, got, stop);
  EXPECT_EQ(outcome.failed, 1u);
  EXPECT_FALSE(outcome.abandoned);
  ASSERT_EQ(got.points.size(), 1u);
  const auto& r = got.points[0];
  EXPECT_EQ(r.status, point_status::failed);
  EXPECT_NE(r.reason.find("measured again: "), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("byte 3 differs"), std::string::npos) << r.reason;
  EXPECT_FALSE(r.verified);
  EXPECT_EQ(r.samples_s.size(), 10u);  // the first measurement's figures, beside the reason
  EXPECT_EQ(r.stopped_by, "budget");
}

// A second measurement that hangs fails the point within the first pass's
// watchdog bound (it was reported nowhere, after the run sat a minute or two).
TEST(Revisit, ASecondMeasurementThatHangsFailsThePointWithinTheFirstPassBound) {
  hanging_backend h;
  auto unsettled = one_unsettled(h.b, 0.3);
  unsettled[0].first.spec.bytes = 2;  // the hanging backend's hanging size
  run_budget more(1.0, 1);
  std::atomic<bool> stop{false};
  collecting_reporter got;
  auto o = fast();  // --watchdog unset: the bound is the one the point came with
  o.watchdog_s = -1;
  const auto t0 = std::chrono::steady_clock::now();
  const auto outcome = revisit(unsettled, o, more, got, stop);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  EXPECT_TRUE(outcome.abandoned);
  EXPECT_EQ(outcome.failed, 1u);
  ASSERT_EQ(got.points.size(), 1u);
  EXPECT_EQ(got.points[0].status, point_status::failed);
  EXPECT_NE(got.points[0].reason.find("measured again: no result after"), std::string::npos) << got.points[0].reason;
}
