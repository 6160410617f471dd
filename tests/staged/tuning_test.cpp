#include <gtest/gtest.h>

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <string>
#include <cstdlib>
#include <thread>
#include <vector>
#include <stdexcept>
#include <xfer/mem/staged/host_step.hpp>
#include <xfer/mem/staged/staged_copier.hpp>
#include <xfer/mem/staged/tuning.hpp>
#include <xfer/mem/settings.hpp>

#include "../support/scoped_inputs.hpp"

namespace xfer::test {
namespace {

// The staged fields the front door fixes from the environment.
mem::staged_tuning tuning_from_environment() {
  return mem::apply_staged_overrides({}, mem::inputs_from_environment().staged);
}

// Libxfer's inputs with no cache file (the state a test starts from).
struct no_cache_file : scoped_inputs {
  no_cache_file() : scoped_inputs([](mem::library_inputs& in) { in.staged_cache.clear(); }) {}
};

// The settings the log holds for the step's tuning, by name.
std::map<std::string, mem::setting> staged_settings(mem::device_step& step) {
  std::map<std::string, mem::setting> out;
  for (const auto& s : mem::recorded_settings())
    if (s.component == "staged" && s.scope == mem::tuning_cache_key(step)) out[s.name] = s;
  return out;
}

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
  EXPECT_NE(message(t).find("chunk_bytes"), std::string::npos);
  t = {};
  t.ring_depth = 0;
  EXPECT_NE(message(t).find("ring_depth"), std::string::npos);
  t = {};
  t.threads = 0;
  EXPECT_NE(message(t).find("threads"), std::string::npos);
}

TEST(StagedTuning, AChunkIsCutIntoOnePiecePerThreadOnCacheLines) {
  mem::staged_tuning t;
  t.chunk_bytes = std::size_t{8} << 20;
  t.threads = 8;
  EXPECT_EQ(t.piece_bytes(), std::size_t{1} << 20);
  t.chunk_bytes = 4096;
  t.threads = 3;
  EXPECT_EQ(t.piece_bytes(), 1408u) << "1366 rounded up to 64";
  t.chunk_bytes = 100;
  t.threads = 8;
  EXPECT_EQ(t.piece_bytes(), 64u) << "never less than a line";
}

// The default thread count follows the CPUs the calling thread may use:
// three quarters of them, never under 4 nor over 12.
TEST(StagedTuning, DefaultThreadsFollowTheUsableCpus) {
  auto on_cpus = [](unsigned n) {
    unsigned got = 0;
    std::thread([&] {
      cpu_set_t all, some;
      ASSERT_EQ(::sched_getaffinity(0, sizeof all, &all), 0);
      CPU_ZERO(&some);
      for (int cpu = 0, taken = 0; cpu < CPU_SETSIZE && taken < static_cast<int>(n); ++cpu)
        if (CPU_ISSET(cpu, &all)) CPU_SET(cpu, &some), ++taken;
      ASSERT_EQ(::sched_setaffinity(0, sizeof some, &some), 0);
      got = mem::default_staged_threads();
      EXPECT_EQ(mem::staged_tuning{}.threads, got) << "a default-made tuning uses it";
    }).join();
    return got;
  };
  EXPECT_EQ(on_cpus(1), 4u) << "never fewer than 4";
  const unsigned cpus = std::thread::hardware_concurrency();
  const unsigned all = on_cpus(cpus);
  EXPECT_GE(all, 4u);
  EXPECT_LE(all, 12u);
  if (cpus >= 16) {
    EXPECT_EQ(all, 12u);
  }
  if (cpus == 8) {
    EXPECT_EQ(all, 6u);
  }
}

// The cut covers the copy exactly, no chunk exceeds a staging buffer, and
// a long copy ramps up and down.
TEST(StagedTuning, ChunksRampUpAndDownAndCoverTheCopy) {
  constexpr std::size_t M = std::size_t{1} << 20, K = 1024;
  for (std::size_t chunk : {std::size_t{4096}, 512 * K, 8 * M})
    for (std::size_t bytes : {std::size_t{1}, std::size_t{4095}, chunk, chunk + 1, 3 * chunk - 7, 3 * chunk,
                              3 * chunk + 12345, 64 * M + 3, 256 * M}) {
      const auto s = mem::staged_chunk_starts(bytes, chunk);
      ASSERT_GE(s.size(), 2u);
      EXPECT_EQ(s.front(), 0u);
      EXPECT_EQ(s.back(), bytes) << "chunk " << chunk << ", bytes " << bytes;
      for (std::size_t i = 0; i + 1 < s.size(); ++i) {
        EXPECT_GT(s[i + 1], s[i]) << "an empty chunk at " << i;
        EXPECT_LE(s[i + 1] - s[i], chunk) << "a chunk over the staging buffer at " << i;
      }
    }
  const auto s = mem::staged_chunk_starts(64 * M, 8 * M);
  const std::vector<std::size_t> head{0, 1 * M, 3 * M, 7 * M};
  EXPECT_EQ(std::vector<std::size_t>(s.begin(), s.begin() + 4), head) << "starts with 1, 2, 4 MiB";
  EXPECT_EQ(s[4] - s[3], 2 * M) << "then what is left over whole chunks (50 MiB = 6 x 8 + 2)";
  EXPECT_EQ(s[5] - s[4], 8 * M);
  const std::size_t n = s.size();
  EXPECT_EQ(s[n - 1] - s[n - 2], 1 * M) << "ends with 1 MiB";
  EXPECT_EQ(s[n - 2] - s[n - 3], 2 * M);
  EXPECT_EQ(s[n - 3] - s[n - 4], 4 * M);
  EXPECT_EQ(mem::staged_chunk_starts(16 * M, 8 * M).size(), 17u) << "too short for the ramps: 1 MiB each";
  EXPECT_EQ(mem::staged_chunk_starts(10000, 4096), (std::vector<std::size_t>{0, 4096, 8192, 10000}))
      << "no ramp under 64 KiB";
  EXPECT_THROW(mem::staged_chunk_starts(10, 0), std::invalid_argument);
}

TEST(StagedTuning, HandoffPerDirection) {
  mem::staged_tuning t;
  t.handoff_to_device_bytes = 10;
  t.handoff_to_host_bytes = 20;
  EXPECT_EQ(t.handoff(true), 10u);
  EXPECT_EQ(t.handoff(false), 20u);
}

TEST(StagedTuning, EnvironmentOverridesEachField) {
  scoped_env a("XFER_STAGED_CHUNK_BYTES", "65536"), b("XFER_STAGED_RING_DEPTH", "3"), c("XFER_STAGED_THREADS", "2"),
      d("XFER_STAGED_HANDOFF_BYTES", "100");
  const auto t = tuning_from_environment();
  EXPECT_EQ(t.chunk_bytes, 65536u);
  EXPECT_EQ(t.ring_depth, 3u);
  EXPECT_EQ(t.threads, 2u);
  EXPECT_EQ(t.handoff_to_device_bytes, 100u) << "one variable sets both directions";
  EXPECT_EQ(t.handoff_to_host_bytes, 100u);
  EXPECT_FALSE(t.stream_stores) << "the default";
  scoped_env e("XFER_STAGED_STREAM_STORES", "1");
  EXPECT_TRUE(tuning_from_environment().stream_stores);
}

TEST(StagedTuning, StreamStoresTakeOnlyZeroOrOne) {
  scoped_env e("XFER_STAGED_STREAM_STORES", "yes");
  try {
    (void)tuning_from_environment();
    FAIL() << "no error";
  } catch (const std::invalid_argument& x) {
    EXPECT_NE(std::string(x.what()).find("XFER_STAGED_STREAM_STORES"), std::string::npos) << x.what();
  }
}

TEST(StagedTuning, BadEnvironmentValueNamesTheVariable) {
  for (const char* bad : {"0", "-4", "12k", "", "99999999999999999999999"}) {
    scoped_env e("XFER_STAGED_THREADS", bad);
    if (!*bad) {
      EXPECT_NO_THROW(tuning_from_environment()) << "empty means unset";
      continue;
    }
    try {
      tuning_from_environment();
      ADD_FAILURE() << bad << ": no error";
    } catch (const std::invalid_argument& x) {
      EXPECT_NE(std::string(x.what()).find("XFER_STAGED_THREADS"), std::string::npos) << x.what();
    }
  }
}

TEST(StagedTuning, CalibrationRunsOncePerDeviceAndIsCached) {
  no_cache_file no_file;
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
  no_cache_file no_file;
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

// A temporary cache file, removed at the end.
struct temp_cache {
  std::string path = (std::filesystem::temp_directory_path() /
                      ("xfer-tuning-test-" + std::to_string(::getpid()) + "/staged-tuning"))
                         .string();
  scoped_inputs installed{[this](mem::library_inputs& in) { in.staged_cache = path; }};
  temp_cache() { mem::forget_recorded_settings(); }
  ~temp_cache() { std::filesystem::remove_all(std::filesystem::path(path).parent_path()); }
  void write(const std::string& text) const {
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    std::ofstream(path) << text;
  }
  std::string text() const {
    std::ifstream in(path);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
};

// A calibration's pick unlike the defaults in every calibrated field.
mem::staged_tuning unlike_defaults() {
  mem::staged_tuning t;
  t.chunk_bytes = 65536;
  t.ring_depth = 6;
  t.threads = 3;
  t.handoff_to_device_bytes = 4096;
  t.handoff_to_host_bytes = 8192;
  return t;
}

constexpr const char* cache_header = "xfer staged-tuning cache, schema 3\n";
// This machine as the host step's entries record it.
std::string this_machine() { return mem::cpu_model() + "; no driver"; }

TEST(StagedTuning, CacheFileServesTheNextProgram) {
  temp_cache cache;
  mem::host_step step;
  int calls = 0;
  auto calibrate = [&](mem::device_step&) {
    ++calls;
    return unlike_defaults();
  };
  mem::forget_cached_tunings();
  const auto first = mem::tuning_for(step, calibrate);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(cache.text(), std::string(cache_header) + mem::tuning_cache_key(step) + "\t" + this_machine() +
                              "\t65536 6 3 4096 8192\n");
  EXPECT_EQ(staged_settings(step)["chunk_bytes"].source, mem::setting_source::calibration);
  mem::forget_cached_tunings();  // as a new process would start
  EXPECT_EQ(mem::tuning_for(step, calibrate), first);
  EXPECT_EQ(calls, 1) << "read from the file, not calibrated again";
  const auto read = staged_settings(step);
  EXPECT_EQ(read.at("chunk_bytes").source, mem::setting_source::cache);
  EXPECT_EQ(read.at("chunk_bytes").origin, cache.path);
  EXPECT_EQ(read.at("chunk_bytes").value, "65536");
  EXPECT_EQ(read.at("stream_stores").source, mem::setting_source::default_value) << "never cached";
  EXPECT_TRUE(mem::recorded_notices().empty());
  mem::forget_cached_tunings();
}

// A file of another schema, an entry made on another machine, a damaged
// entry: each unused with one notice saying why, and calibrated again.
TEST(StagedTuning, UnusableCachesAreIgnoredWithANotice) {
  mem::host_step step;
  const std::string key = mem::tuning_cache_key(step);
  const struct {
    std::string text, notice;
  } cases[] = {
      {key + "\t65536 4 3 4096 4096\n", "not this version's"},  // an older version's file: no header
      {std::string(cache_header) + key + "\tanother CPU; no driver\t65536 4 3 4096 4096\n", "another machine"},
      {std::string(cache_header) + key + "\t" + this_machine() + "\t65536 0 3 4096 4096\n", "ring_depth"},
      {std::string(cache_header) + key + "\t" + this_machine() + "\t65536 4 3 4096\n", "does not parse"},
      {std::string(cache_header) + key + "\t" + this_machine() + "\tnot numbers\n", "does not parse"},
  };
  for (const auto& c : cases) {
    temp_cache cache;
    cache.write(c.text);
    int calls = 0;
    mem::forget_cached_tunings();
    const auto t = mem::tuning_for(step, [&](mem::device_step&) {
      ++calls;
      return unlike_defaults();
    });
    EXPECT_EQ(calls, 1) << c.text;
    EXPECT_EQ(t, unlike_defaults());
    const auto notices = mem::recorded_notices();
    ASSERT_EQ(notices.size(), 1u) << c.text;
    EXPECT_NE(notices[0].find(c.notice), std::string::npos) << notices[0];
    EXPECT_NE(notices[0].find(cache.path), std::string::npos) << notices[0];
    EXPECT_EQ(notices[0].find('\n'), std::string::npos) << notices[0];
    EXPECT_EQ(cache.text().rfind(cache_header, 0), 0u) << "rewritten in this schema: " << cache.text();
  }
  mem::forget_cached_tunings();
  mem::forget_recorded_settings();
}

TEST(StagedTuning, OtherKeysOfTheFileAreKept) {
  temp_cache cache;
  mem::host_step step;
  cache.write(std::string(cache_header) + "other-host/host/host\tsome CPU; no driver\t1 1 1 1 1\n");
  mem::forget_cached_tunings();
  (void)mem::tuning_for(step, [](mem::device_step&) { return unlike_defaults(); });
  EXPECT_NE(cache.text().find("other-host/host/host\tsome CPU; no driver\t1 1 1 1 1\n"), std::string::npos)
      << cache.text();
  mem::forget_cached_tunings();
}

TEST(StagedTuning, CalibrationPicksAmongTheCandidates) {
  mem::host_step step;
  mem::staged_calibration_options o;
  o.probe_bytes = std::size_t{1} << 20;
  o.chunk_sizes = {std::size_t{64} << 10, std::size_t{256} << 10};
  o.thread_counts = {1, 2};
  o.ring_depth = 3;
  o.handoff_sizes = {4096, std::size_t{64} << 10, std::size_t{512} << 10};
  const auto t = mem::calibrate_staged(step, o);
  EXPECT_NO_THROW(t.validate());
  EXPECT_TRUE(t.chunk_bytes == o.chunk_sizes[0] || t.chunk_bytes == o.chunk_sizes[1]) << t.chunk_bytes;
  EXPECT_TRUE(t.threads == 1 || t.threads == 2) << t.threads;
  EXPECT_EQ(t.ring_depth, 3u);
  const std::vector<std::size_t> handoffs{4096, std::size_t{64} << 10, std::size_t{512} << 10, std::size_t{1} << 20};
  EXPECT_NE(std::find(handoffs.begin(), handoffs.end(), t.handoff_to_device_bytes), handoffs.end())
      << t.handoff_to_device_bytes;
  EXPECT_NE(std::find(handoffs.begin(), handoffs.end(), t.handoff_to_host_bytes), handoffs.end())
      << t.handoff_to_host_bytes;
}

// The calibration keeps the defaults unless another candidate was the margin
// faster: a near-tie at the probe size (4 and 8 MiB chunks at 64 MiB) went
// to the smaller chunk, which then held for copies where it lost.
TEST(StagedTuning, ACandidateReplacesTheDefaultsOnlyWhenItWinsByTheMargin) {
  const double inf = std::numeric_limits<double>::infinity();
  // Index 0 the defaults, as the calibration orders them.
  EXPECT_EQ(mem::staged_candidate_choice({1.0, 0.95, 0.97}, 0, 0.10), 0u);  // 5% faster: a tie
  EXPECT_EQ(mem::staged_candidate_choice({1.0, 0.95, 0.85}, 0, 0.10), 2u);  // 15% faster: it wins
  EXPECT_EQ(mem::staged_candidate_choice({1.0, 0.80, 0.85}, 0, 0.10), 1u);  // the fastest, not the first past the margin
  EXPECT_EQ(mem::staged_candidate_choice({0.9, 1.0, 1.2}, 0, 0.10), 0u);    // the defaults fastest
  EXPECT_EQ(mem::staged_candidate_choice({1.0, 1.0}, 0, 0.0), 0u);          // no margin: a tie keeps the defaults
  EXPECT_EQ(mem::staged_candidate_choice({1.0, 0.99}, 0, 0.0), 1u);         // no margin: the fastest
  // No defaults among the candidates, or not timed: the fastest.
  EXPECT_EQ(mem::staged_candidate_choice({1.0, 0.95}, 2, 0.10), 1u);
  EXPECT_EQ(mem::staged_candidate_choice({inf, 0.95, 0.99}, 0, 0.10), 1u);
  // The budget ran out after the defaults: they are kept.
  EXPECT_EQ(mem::staged_candidate_choice({1.0, inf, inf}, 0, 0.10), 0u);
  EXPECT_THROW((void)mem::staged_candidate_choice({inf, inf}, 0, 0.10), std::invalid_argument);
  EXPECT_THROW((void)mem::staged_candidate_choice({}, 0, 0.10), std::invalid_argument);
}

TEST(StagedTuning, CalibrationOutOfTimeKeepsTheDefaults) {
  // No budget: only the first candidate runs, and the first is the defaults.
  mem::host_step step;
  mem::staged_calibration_options o;
  o.probe_bytes = std::size_t{1} << 20;
  o.chunk_sizes = {std::size_t{64} << 10, mem::staged_tuning{}.chunk_bytes};
  o.thread_counts = {1, mem::staged_tuning{}.threads};
  o.handoff_sizes = {4096};
  o.budget_s = 0;
  const auto t = mem::calibrate_staged(step, o);
  EXPECT_EQ(t.chunk_bytes, mem::staged_tuning{}.chunk_bytes);
  EXPECT_EQ(t.threads, mem::staged_tuning{}.threads);
}

// ---- The one rule for a step's tuning (mem::tuning_for, issue 35) ----------
// Calibrated, then each XFER_STAGED_* variable on its own, then each argument
// on its own; a bad value is one error naming it. On the host step, which the
// sweep's staged route and the Python Copier use here.

// No cache file and no tuning remembered from an earlier test; the
// calibration counted and its pick unlike the defaults in every field.
struct rule_fixture : ::testing::Test {
  no_cache_file no_file;
  mem::host_step step;
  int calls = 0;
  mem::staged_tuning calibrated = unlike_defaults();
  mem::staged_calibration calibrate = [this](mem::device_step&) {
    ++calls;
    return calibrated;
  };
  rule_fixture() {
    mem::forget_cached_tunings();
    mem::forget_recorded_settings();
  }
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

// The inputs with these fields fixed, as the front door passes its variables.
scoped_inputs fixing(std::vector<mem::staged_override> fields) {
  return scoped_inputs([&](mem::library_inputs& in) { in.staged = fields; });
}

TEST_F(rule_fixture, NothingSetGivesTheCalibratedTuning) {
  EXPECT_EQ(mem::tuning_for(step, calibrate), calibrated);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(mem::staged_copier(step).tuning(), calibrated) << "a bare copier takes the same tuning";
}

TEST_F(rule_fixture, OneFixedFieldOverridesOnlyItsField) {
  const auto depth = fixing({{mem::staged_field::ring_depth, "XFER_STAGED_RING_DEPTH", "9"}});
  auto want = calibrated;
  want.ring_depth = 9;
  EXPECT_EQ(mem::tuning_for(step, calibrate), want);
  EXPECT_EQ(calls, 1) << "the other fields were left to the calibration";
  const auto recorded = staged_settings(step);
  EXPECT_EQ(recorded.at("ring_depth").value, "9");
  EXPECT_EQ(recorded.at("ring_depth").source, mem::setting_source::environment);
  EXPECT_EQ(recorded.at("ring_depth").origin, "XFER_STAGED_RING_DEPTH");
  EXPECT_EQ(recorded.at("threads").source, mem::setting_source::calibration);
  EXPECT_EQ(recorded.at("threads").value, "3");
}

TEST_F(rule_fixture, TheHandoffSetsBothDirections) {
  const auto handoff = fixing({{mem::staged_field::handoff_bytes, "XFER_STAGED_HANDOFF_BYTES", "100"}});
  const auto t = mem::tuning_for(step, calibrate);
  EXPECT_EQ(t.handoff_to_device_bytes, 100u);
  EXPECT_EQ(t.handoff_to_host_bytes, 100u);
  EXPECT_EQ(t.chunk_bytes, calibrated.chunk_bytes);
  EXPECT_EQ(staged_settings(step).at("handoff_to_host_bytes").origin, "XFER_STAGED_HANDOFF_BYTES");
}

TEST_F(rule_fixture, OneArgumentOverridesOnlyItsFieldAndBeatsTheEnvironment) {
  const auto threads = fixing({{mem::staged_field::threads, "XFER_STAGED_THREADS", "5"}});
  auto want = calibrated;
  want.threads = 2;
  want.chunk_bytes = 4096;
  EXPECT_EQ(mem::tuning_for(step, calibrate,
                            {{mem::staged_field::threads, "threads", "2"},
                             {mem::staged_field::chunk_bytes, "chunk_bytes", "4096"}}),
            want);
  EXPECT_EQ(calls, 1);
  const auto recorded = staged_settings(step);
  EXPECT_EQ(recorded.at("threads").source, mem::setting_source::argument);
  EXPECT_EQ(recorded.at("threads").origin, "threads");
}

TEST_F(rule_fixture, EveryCalibratedFieldFixedMeansNoCalibration) {
  const auto fixed = fixing({{mem::staged_field::chunk_bytes, "XFER_STAGED_CHUNK_BYTES", "4096"},
                             {mem::staged_field::ring_depth, "XFER_STAGED_RING_DEPTH", "4"},
                             {mem::staged_field::threads, "XFER_STAGED_THREADS", "2"}});
  const auto t = mem::tuning_for(step, calibrate, {{mem::staged_field::handoff_bytes, "handoff_bytes", "512"}});
  EXPECT_EQ(calls, 0) << "nothing was left for it to choose";
  EXPECT_EQ(t.chunk_bytes, 4096u);
  EXPECT_EQ(t.ring_depth, 4u);
  EXPECT_EQ(t.threads, 2u);
  EXPECT_EQ(t.handoff_to_host_bytes, 512u);
}

// The front door: each variable is read there, and a bad one is one error naming it.
TEST(StagedFrontDoor, ABadVariableIsOneErrorNamingIt) {
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
    std::string what = "no error";
    try {
      (void)mem::inputs_from_environment();
    } catch (const std::invalid_argument& x) {
      what = x.what();
    }
    EXPECT_EQ(what.rfind(std::string(c.variable) + "=" + c.value + ": expected", 0), 0u) << what;
    EXPECT_NE(what.find(c.bound), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << "one line: " << what;
  }
}

TEST(StagedFrontDoor, AnEmptyVariableIsUnset) {
  scoped_env e("XFER_STAGED_CHUNK_BYTES", "");
  EXPECT_TRUE(mem::inputs_from_environment().staged.empty());
}

TEST(StagedFrontDoor, TheCacheVariableNamesTheFileOrNone) {
  {
    scoped_env e("XFER_STAGED_TUNING_CACHE", "/tmp/somewhere/tuning");
    EXPECT_EQ(mem::inputs_from_environment().staged_cache, "/tmp/somewhere/tuning");
    EXPECT_EQ(mem::inputs_from_environment().blocks_cache, "/tmp/somewhere/block-ways") << "beside it";
  }
  scoped_env off("XFER_STAGED_TUNING_CACHE", "off"), home("XDG_CACHE_HOME", "/tmp/xdg");
  EXPECT_EQ(mem::inputs_from_environment().staged_cache, "");
  EXPECT_EQ(mem::inputs_from_environment().blocks_cache, "") << "none beside none";
  scoped_env unset("XFER_STAGED_TUNING_CACHE", nullptr);
  EXPECT_EQ(mem::inputs_from_environment().staged_cache, "/tmp/xdg/xfer/staged-tuning");
}

// ---- A replay (xferbench sweep --settings): the file's values, no cache, no calibration.

TEST_F(rule_fixture, AReplayTakesTheFilesValuesAndNeverCalibrates) {
  // What a run recorded, on this step; then replayed from its file.
  (void)mem::tuning_for(step, calibrate);
  const auto run = mem::recorded_settings();
  mem::forget_cached_tunings();
  mem::forget_recorded_settings();
  calls = 0;
  scoped_inputs replay([&](mem::library_inputs& in) { in = mem::inputs_for_replay(run, "run.json"); });
  EXPECT_EQ(mem::tuning_for(step, calibrate), calibrated);
  EXPECT_EQ(calls, 0);
  const auto replayed = staged_settings(step);
  EXPECT_EQ(replayed.at("chunk_bytes").source, mem::setting_source::replay);
  EXPECT_EQ(replayed.at("chunk_bytes").origin, "run.json");
  for (const auto& s : run)
    if (s.component == "staged") EXPECT_EQ(replayed.at(s.name).value, s.value) << s.name;
}

TEST_F(rule_fixture, AReplayOfAnotherHostMatchesTheDeviceAndWithoutOneTakesTheDefaults) {
  const std::string key = mem::tuning_cache_key(step);
  const std::string elsewhere = "another-host" + key.substr(key.find('/'));
  {
    scoped_inputs replay([&](mem::library_inputs& in) {
      in = mem::inputs_for_replay({{"staged", elsewhere, "threads", "7", mem::setting_source::calibration, ""}}, "f");
    });
    EXPECT_EQ(mem::tuning_for(step, calibrate).threads, 7u) << "the same step and device on another host";
  }
  mem::forget_recorded_settings();
  scoped_inputs replay([&](mem::library_inputs& in) {
    in = mem::inputs_for_replay({{"staged", "h/cuda-runtime/0000:01:00.0 GPU", "threads", "7",
                                  mem::setting_source::calibration, ""}},
                                "f");
  });
  EXPECT_EQ(mem::tuning_for(step, calibrate), mem::staged_tuning{});
  EXPECT_EQ(calls, 0);
  const auto notices = mem::recorded_notices();
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_NE(notices[0].find("has no staged settings for " + key), std::string::npos) << notices[0];
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
