#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <thread>
#include <vector>
#include <xfer/mem/staged/host_step.hpp>
#include <xfer/mem/staged/tuning.hpp>

namespace xfer::test {
namespace {

// Sets an environment variable for one test.
struct scoped_env {
  const char* name;
  scoped_env(const char* n, const char* v) : name(n) { ::setenv(n, v, 1); }
  ~scoped_env() { ::unsetenv(name); }
};

TEST(StagedTuning, RejectsUnusableValuesNamingTheField) {
  mem::staged_tuning t;
  EXPECT_NO_THROW(t.validate());
  auto message = [](mem::staged_tuning x) {
    try {
      x.validate();
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  t.chunk_bytes = 0;
  EXPECT_NE(message(t).find("chunk_bytes"), std::string::npos);
  t = {};
  t.chunk_bytes = (std::size_t{1} << 30) + 1;
  EXPECT_NE(message(t).find("over 1 GiB"), std::string::npos);
  t = {};
  t.ring_depth = 0;
  EXPECT_NE(message(t).find("ring_depth"), std::string::npos);
  t = {};
  t.threads = 0;
  EXPECT_NE(message(t).find("threads"), std::string::npos);
}

TEST(StagedTuning, SlotsAreSplitBetweenThreads) {
  mem::staged_tuning t;
  t.ring_depth = 8;
  t.threads = 3;
  EXPECT_EQ(t.effective_threads(), 3u);
  EXPECT_EQ(t.slots_per_thread(), 2u);
  t.threads = 12;
  EXPECT_EQ(t.effective_threads(), 8u);
  EXPECT_EQ(t.slots_per_thread(), 1u);
}

TEST(StagedTuning, EnvironmentOverridesEachField) {
  scoped_env a("XFER_STAGED_CHUNK_BYTES", "65536"), b("XFER_STAGED_RING_DEPTH", "3"), c("XFER_STAGED_THREADS", "2"),
      d("XFER_STAGED_HANDOFF_BYTES", "100");
  const auto t = mem::tuning_from_environment();
  EXPECT_EQ(t.chunk_bytes, 65536u);
  EXPECT_EQ(t.ring_depth, 3u);
  EXPECT_EQ(t.threads, 2u);
  EXPECT_EQ(t.handoff_bytes, 100u);
}

TEST(StagedTuning, BadEnvironmentValueNamesTheVariable) {
  for (const char* bad : {"0", "-4", "12k", "", "99999999999999999999999"}) {
    scoped_env e("XFER_STAGED_THREADS", bad);
    if (!*bad) {
      EXPECT_NO_THROW(mem::tuning_from_environment()) << "empty means unset";
      continue;
    }
    try {
      mem::tuning_from_environment();
      ADD_FAILURE() << bad << ": no error";
    } catch (const std::invalid_argument& x) {
      EXPECT_NE(std::string(x.what()).find("XFER_STAGED_THREADS"), std::string::npos) << x.what();
    }
  }
}

TEST(StagedTuning, CalibrationRunsOncePerDeviceAndIsCached) {
  mem::forget_cached_tunings();
  mem::host_step step;
  std::atomic<int> calls{0};
  auto calibrate = [&](mem::device_step&) {
    ++calls;
    mem::staged_tuning t;
    t.chunk_bytes = 12345;
    return t;
  };
  std::vector<std::thread> ts;
  std::vector<std::size_t> seen(4);
  for (int i = 0; i < 4; ++i) ts.emplace_back([&, i] { seen[i] = mem::tuning_for(step, calibrate).chunk_bytes; });
  for (auto& t : ts) t.join();
  EXPECT_EQ(calls.load(), 1);
  for (auto s : seen) EXPECT_EQ(s, 12345u);
  EXPECT_EQ(mem::tuning_for(step).chunk_bytes, 12345u) << "cached: no calibration needed";
  EXPECT_NE(mem::tuning_cache_key(step).find("/host/host"), std::string::npos) << mem::tuning_cache_key(step);
  mem::forget_cached_tunings();
  EXPECT_EQ(mem::tuning_for(step), mem::staged_tuning{}) << "no calibration: the defaults";
}

TEST(StagedTuning, FailedCalibrationIsRetried) {
  mem::forget_cached_tunings();
  mem::host_step step;
  EXPECT_THROW(mem::tuning_for(step, [](mem::device_step&) -> mem::staged_tuning { throw std::runtime_error("x"); }),
               std::runtime_error);
  mem::staged_tuning bad;
  bad.threads = 0;
  EXPECT_THROW(mem::tuning_for(step, [&](mem::device_step&) { return bad; }), std::invalid_argument);
  EXPECT_EQ(mem::tuning_for(step), mem::staged_tuning{});
  mem::forget_cached_tunings();
}

}  // namespace
}  // namespace xfer::test
