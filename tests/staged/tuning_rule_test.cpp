// The one rule for a step's tuning (mem::tuning_for, xfer/mem/staged/tuning.hpp):
// calibrated, then each XFER_STAGED_* variable on its own, then each argument
// on its own; a bad value is one error naming it. On the host step, which
// the sweep's staged route and the Python Copier use here.
#include <gtest/gtest.h>

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>
#include <xfer/mem/staged/host_step.hpp>
#include <xfer/mem/staged/staged_copier.hpp>
#include <xfer/mem/staged/tuning.hpp>

namespace xfer::test {
namespace {

struct scoped_env {
  const char* name;
  scoped_env(const char* n, const char* v) : name(n) { ::setenv(n, v, 1); }
  ~scoped_env() { ::unsetenv(name); }
};

// No cache file and no tuning remembered from an earlier test; the
// calibration counted and its pick unlike the defaults in every field.
struct rule_fixture : ::testing::Test {
  scoped_env no_file{"XFER_STAGED_TUNING_CACHE", "off"};
  mem::host_step step;
  int calls = 0;
  mem::staged_tuning calibrated = [] {
    mem::staged_tuning t;
    t.chunk_bytes = 65536;
    t.ring_depth = 6;
    t.threads = 3;
    t.handoff_to_device_bytes = 4096;
    t.handoff_to_host_bytes = 8192;
    return t;
  }();
  mem::staged_calibration calibrate = [this](mem::device_step&) {
    ++calls;
    return calibrated;
  };
  rule_fixture() { mem::forget_cached_tunings(); }
  ~rule_fixture() override { mem::forget_cached_tunings(); }

  std::string error_of(const std::vector<mem::staged_override>& args = {}) {
    try {
      (void)mem::tuning_for(step, calibrate, args);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "no error";
  }
};

TEST_F(rule_fixture, NothingSetGivesTheCalibratedTuning) {
  EXPECT_EQ(mem::tuning_for(step, calibrate), calibrated);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(mem::staged_copier(step).tuning(), calibrated) << "a bare copier takes the same tuning";
}

TEST_F(rule_fixture, OneVariableOverridesOnlyItsField) {
  scoped_env depth("XFER_STAGED_RING_DEPTH", "9");
  auto want = calibrated;
  want.ring_depth = 9;
  EXPECT_EQ(mem::tuning_for(step, calibrate), want);
  EXPECT_EQ(calls, 1) << "the other fields were left to the calibration";
}

TEST_F(rule_fixture, TheHandoffVariableSetsBothDirections) {
  scoped_env handoff("XFER_STAGED_HANDOFF_BYTES", "100");
  const auto t = mem::tuning_for(step, calibrate);
  EXPECT_EQ(t.handoff_to_device_bytes, 100u);
  EXPECT_EQ(t.handoff_to_host_bytes, 100u);
  EXPECT_EQ(t.chunk_bytes, calibrated.chunk_bytes);
}

TEST_F(rule_fixture, OneArgumentOverridesOnlyItsFieldAndBeatsTheEnvironment) {
  scoped_env threads("XFER_STAGED_THREADS", "5");
  auto want = calibrated;
  want.threads = 2;
  want.chunk_bytes = 4096;
  EXPECT_EQ(mem::tuning_for(step, calibrate,
                            {{mem::staged_field::threads, "threads", "2"},
                             {mem::staged_field::chunk_bytes, "chunk_bytes", "4096"}}),
            want);
  EXPECT_EQ(calls, 1);
}

TEST_F(rule_fixture, EveryCalibratedFieldFixedMeansNoCalibration) {
  scoped_env a("XFER_STAGED_CHUNK_BYTES", "4096"), b("XFER_STAGED_RING_DEPTH", "4"), c("XFER_STAGED_THREADS", "2");
  const auto t = mem::tuning_for(step, calibrate, {{mem::staged_field::handoff_bytes, "handoff_bytes", "512"}});
  EXPECT_EQ(calls, 0) << "nothing was left for it to choose";
  EXPECT_EQ(t.chunk_bytes, 4096u);
  EXPECT_EQ(t.ring_depth, 4u);
  EXPECT_EQ(t.threads, 2u);
  EXPECT_EQ(t.handoff_to_host_bytes, 512u);
}

TEST_F(rule_fixture, ABadVariableIsOneErrorNamingItBeforeAnyCalibration) {
  const struct {
    const char* variable;
    const char* value;
    const char* bound;
  } cases[] = {
      {"XFER_STAGED_CHUNK_BYTES", "7", "from 64 to 1073741824"},
      {"XFER_STAGED_CHUNK_BYTES", "12k", "from 64"},
      {"XFER_STAGED_RING_DEPTH", "0", "from 1 to 1024"},
      {"XFER_STAGED_RING_DEPTH", "100000", "from 1 to 1024"},
      {"XFER_STAGED_THREADS", "-4", "from 1 to 256"},
      {"XFER_STAGED_THREADS", "99999999999999999999999", "from 1 to 256"},
      {"XFER_STAGED_HANDOFF_BYTES", "0", "from 1"},
      {"XFER_STAGED_STREAM_STORES", "yes", "0 or 1"},
  };
  for (const auto& c : cases) {
    scoped_env e(c.variable, c.value);
    const std::string what = error_of();
    EXPECT_EQ(what.rfind(std::string(c.variable) + "=" + c.value + ": expected", 0), 0u) << what;
    EXPECT_NE(what.find(c.bound), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << "one line: " << what;
  }
  EXPECT_EQ(calls, 0);
}

TEST_F(rule_fixture, ABadArgumentIsOneErrorNamingIt) {
  EXPECT_EQ(error_of({{mem::staged_field::chunk_bytes, "chunk_bytes", "1"}}),
            "chunk_bytes=1: expected an integer from 64 to 1073741824");
  EXPECT_EQ(error_of({{mem::staged_field::ring_depth, "ring_depth", "1180591620717411303424"}}),
            "ring_depth=1180591620717411303424: expected an integer from 1 to 1024");
  EXPECT_EQ(calls, 0);
}

TEST_F(rule_fixture, AnEmptyVariableIsUnset) {
  scoped_env e("XFER_STAGED_CHUNK_BYTES", "");
  EXPECT_EQ(mem::tuning_for(step, calibrate), calibrated);
}

// The root of the Python copier's hang (issue 36): a chunk of 1 to 7 bytes
// made the chunk schedule's ramp step 0. Such a chunk is refused by the
// tuning, and the schedule itself no longer loops on it.
TEST(StagedTuningBounds, TinyChunksAreRefusedAndNeverLoop) {
  mem::staged_tuning t;
  for (std::size_t chunk : {1u, 7u, 63u}) {
    t.chunk_bytes = chunk;
    EXPECT_THROW(t.validate(), std::invalid_argument) << chunk;
    const auto starts = mem::staged_chunk_starts(10, chunk);
    EXPECT_EQ(starts.back(), 10u);
    EXPECT_EQ(starts.size(), (10 + chunk - 1) / chunk + 1) << chunk;
  }
  t.chunk_bytes = mem::min_staged_chunk_bytes;
  EXPECT_NO_THROW(t.validate());
  t.ring_depth = mem::max_staged_ring_depth + 1;
  EXPECT_THROW(t.validate(), std::invalid_argument);
}

}  // namespace
}  // namespace xfer::test
