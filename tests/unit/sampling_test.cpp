// The one sampling engine (core/sampling.hpp): its stop rule, and the
// watchdog every mode runs under (core/watchdog.hpp). What the modes get from
// them is tested with each mode (concurrent_test.cpp, runner_test.cpp).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <limits>
#include <thread>
#include <xfer/core/sampling.hpp>
#include <xfer/core/watchdog.hpp>

namespace xfer {
namespace {

// ---- the stop rule ----------------------------------------------------------------

TEST(StopRule, ConvergedOnceThereAreEnoughSamplesWithinTheTarget) {
  const measure_options o;  // 1% target, 8 samples at least
  EXPECT_EQ(stop_rule(8, 0.005, 0.001, o), stop_reason::converged);
  EXPECT_EQ(stop_rule(7, 0.005, 0.001, o), stop_reason::none);  // too few to trust the interval
  EXPECT_EQ(stop_rule(8, 0.02, 0.001, o), stop_reason::none);   // within budget, not yet within target
}

TEST(StopRule, PastTheBudgetOnlyAPointOnCourseGoesOnAndNeverPastFourTimesIt) {
  const measure_options o;  // 50 ms budget
  // 2% after 60 ms would need 240 ms at 1 / sqrt(n): off course.
  EXPECT_EQ(stop_rule(20, 0.02, 0.06, o), stop_reason::budget);
  // 1.2% after 60 ms needs about 86 ms: on course, so it goes on.
  EXPECT_EQ(stop_rule(20, 0.012, 0.06, o), stop_reason::none);
  // An interval still infinite (too few samples for one) is never on course.
  EXPECT_EQ(stop_rule(8, std::numeric_limits<double>::infinity(), 0.06, o), stop_reason::budget);
  // A few huge samples: before min_samples the budget alone does not stop
  // them; four times the budget does.
  EXPECT_EQ(stop_rule(3, 0.5, 0.06, o), stop_reason::none);
  EXPECT_EQ(stop_rule(3, 0.5, 0.2, o), stop_reason::budget_x4);
}

TEST(StopRule, ASamplesFloorOutlastsTheBudgetButNotMaxSamples) {
  measure_options o;  // 50 ms budget
  o.samples_floor = 5;
  // One huge sample at ten times the budget: the floor goes on to five.
  EXPECT_EQ(stop_rule(1, std::numeric_limits<double>::infinity(), 0.5, o), stop_reason::none);
  EXPECT_EQ(stop_rule(4, 0.5, 0.5, o), stop_reason::none);
  EXPECT_EQ(stop_rule(5, 0.5, 0.5, o), stop_reason::budget_x4);
  // Above min_samples, the budget's own stop waits for the floor too.
  o.samples_floor = 12;
  EXPECT_EQ(stop_rule(10, 0.02, 0.06, o), stop_reason::none);
  EXPECT_EQ(stop_rule(12, 0.02, 0.06, o), stop_reason::budget);
  o.max_samples = 3;
  EXPECT_EQ(stop_rule(3, 0.5, 0.5, o), stop_reason::max_samples);
}

TEST(StopRule, MaxSamplesComesLastAndTheWordsAreTheResultFilesOnes) {
  measure_options o;
  o.max_samples = 10;
  EXPECT_EQ(stop_rule(10, 0.02, 0.001, o), stop_reason::max_samples);
  EXPECT_EQ(stop_rule(10, 0.005, 0.001, o), stop_reason::converged);
  EXPECT_EQ(stop_rule(10, 0.02, 0.06, o), stop_reason::budget);
  EXPECT_STREQ(to_string(stop_reason::converged), "converged");
  EXPECT_STREQ(to_string(stop_reason::budget), "budget");
  EXPECT_STREQ(to_string(stop_reason::budget_x4), "budget x4");
  EXPECT_STREQ(to_string(stop_reason::max_samples), "max samples");
  EXPECT_STREQ(to_string(stop_reason::none), "");
}

// ---- the watchdog itself ----------------------------------------------------------------

TEST(Watch, AJobThatOutlivesItsBoundIsLeftAndAStopIsHonouredWithinTheGrace) {
  auto release = std::make_shared<std::atomic<bool>>(false);
  const auto hang = [release] {
    while (!release->load()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  };
  const std::atomic<bool> calm{false};
  const watch_end bound = watch(hang, 0.2, calm);
  EXPECT_FALSE(bound.finished);
  EXPECT_FALSE(bound.stopped);
  EXPECT_GE(bound.took_s, 0.2);

  const std::atomic<bool> stopped{true};
  const auto t0 = std::chrono::steady_clock::now();
  const watch_end grace = watch(hang, 600, stopped);
  EXPECT_FALSE(grace.finished);
  EXPECT_TRUE(grace.stopped);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  *release = true;

  watch_end done;
  const auto r = run_watched<int>([] { return 7; }, 5, calm, done);
  EXPECT_TRUE(done.finished);
  ASSERT_TRUE(r);
  EXPECT_EQ(*r, 7);
}

// A study's point beats at each step: the bound counts from its latest beat,
// so a point longer than the bound that keeps moving finishes, and one that
// stops moving is left that long after its last beat.
TEST(Watch, AJobThatBeatsIsBoundedFromItsLatestBeat) {
  const std::atomic<bool> calm{false};
  auto beats = std::make_shared<heartbeat>();
  const auto moving = [beats] {
    for (int i = 0; i < 30; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      beats->beat();
    }
  };
  const watch_end done = watch(moving, 1.0, calm, beats.get());
  EXPECT_TRUE(done.finished);
  EXPECT_GE(done.took_s, 1.4) << "longer than the bound, in steps well inside it";
  EXPECT_LT(done.quiet_s, 1.0);

  auto release = std::make_shared<std::atomic<bool>>(false);
  auto stalls = std::make_shared<heartbeat>();
  const auto stalling = [stalls, release] {
    for (int i = 0; i < 6; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      stalls->beat();
    }
    while (!release->load()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  };
  const watch_end left = watch(stalling, 0.5, calm, stalls.get());
  EXPECT_FALSE(left.finished);
  EXPECT_FALSE(left.stopped);
  EXPECT_GE(left.quiet_s, 0.5);
  EXPECT_GE(left.took_s, 0.8) << "its beats moved the bound on";
  EXPECT_EQ(stalled_reason(left.quiet_s).rfind("no progress for ", 0), 0u);
  *release = true;
}

}  // namespace
}  // namespace xfer
