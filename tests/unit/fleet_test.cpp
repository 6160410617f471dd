// Fleet mode's judgement (core/fleet.hpp) on a real fleet's results: four
// ranks of the host backend under mpirun (tests/unit/data/fleet-host-4ranks.json,
// samples trimmed), with one rank's numbers scaled down.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <cmath>
#include <limits>
#include <xfer/core/errors.hpp>
#include <xfer/core/fleet.hpp>

namespace xfer::fleet {
namespace {

std::vector<rank_report> fixture() { return read_fleet_file(XFER_TEST_DATA "/fleet-host-4ranks.json"); }

// Makes every point of `rank` slower by `factor` (its times longer).
void slow_down(std::vector<rank_report>& ranks, int rank, double factor) {
  for (auto& r : ranks)
    if (r.who.rank == rank)
      for (auto& p : r.points) p.stats.median *= factor;
}

// The fixture's figures are the loopback host's, which vary by more than a
// GPU's: a tolerance above their spread keeps the untouched fleet healthy.
const thresholds lenient{3, 0.35, 0};

TEST(Fleet, TheRealFleetIsHealthy) {
  const auto ranks = fixture();
  ASSERT_EQ(ranks.size(), 4u);
  for (const auto& r : ranks) EXPECT_EQ(r.points.size(), 10u);
  const auto found = find_outliers(ranks, lenient);
  for (const auto& f : found) ADD_FAILURE() << f.why;
}

TEST(Fleet, OneRankScaledDownIsTheOutlierInEveryTest) {
  auto ranks = fixture();
  slow_down(ranks, 2, 3.0);
  const auto found = find_outliers(ranks, lenient);
  ASSERT_FALSE(found.empty());
  std::set<std::pair<std::string, std::string>> tests;
  for (const auto& f : found) {
    EXPECT_EQ(f.rank, 2) << f.why;
    tests.insert({f.phase, f.test});
  }
  // Most tests of both phases, latency included. Not all: on the 2-core
  // machine that made the fixture some tests are bimodal across the healthy
  // ranks (25 and 33 GB/s), which widens their MAD; a GPU fleet is tighter.
  EXPECT_GE(tests.size(), 6u);
  EXPECT_TRUE(tests.count({"together", "latency-4B"}));
  EXPECT_TRUE(tests.count({"together", "d2h-pinned"}));
}

TEST(Fleet, TheBaselineCatchesAWholeFleetThatGotSlower) {
  const auto baseline = fixture();
  auto ranks = fixture();
  for (int r = 0; r < 4; ++r) slow_down(ranks, r, 2.0);
  // Against itself the slow fleet looks uniform...
  EXPECT_TRUE(find_outliers(ranks, lenient).empty());
  // ...against the known-good one every point is below.
  const auto found = find_outliers(ranks, lenient, &baseline);
  EXPECT_GE(found.size(), 36u);  // of 40 points: those that were fast in the baseline halve to near its median
  for (const auto& f : found) EXPECT_NE(f.why.find("baseline"), std::string::npos) << f.why;
}

// The fixture as `xferbench fleet --repeat n` would give it, in its order:
// per phase each test n times, the repeats interleaved; repeat k slower than
// repeat 0 by k x `jitter` (a real fleet's repeats are never equal).
std::vector<rank_report> repeated(int n, double jitter = 0.01) {
  auto ranks = fixture();
  for (auto& r : ranks) {
    std::vector<point_result> points;
    for (const char* phase : {"alone", "together"})
      for (int k = 0; k < n; ++k)
        for (auto p : r.points)
          if (p.fleet->phase == phase) {
            p.fleet->repeat = k;
            p.stats.median *= 1 + jitter * k;
            points.push_back(p);
          }
    r.points = points;
  }
  return ranks;
}

// Makes repeat `repeat` of every point of `rank` slower by `factor`.
void slow_down_repeat(std::vector<rank_report>& ranks, int rank, int repeat, double factor) {
  for (auto& r : ranks)
    if (r.who.rank == rank)
      for (auto& p : r.points)
        if (p.fleet->repeat == repeat) p.stats.median *= factor;
}

TEST(Fleet, ARankWithEveryRepeatNormalIsNotFlagged) {
  const auto ranks = repeated(3);
  ASSERT_EQ(ranks.at(0).points.size(), 30u);
  for (const auto& f : find_outliers(ranks, lenient)) ADD_FAILURE() << f.why;
}

// The H100 case (docs/results/nvidia-h100-x4): one short measurement 10-20%
// low on a healthy card. Judged alone it is an outlier; one repeat of three
// it is not, and the table shows the median the rank was judged by.
TEST(Fleet, OneLowRepeatOfThreeIsNotAnOutlier) {
  auto ranks = repeated(3);
  slow_down_repeat(ranks, 2, 1, 3.0);
  // The low repeat on its own would be flagged: the test can fail.
  std::vector<rank_report> only_that_one = ranks;
  for (auto& r : only_that_one)
    std::erase_if(r.points, [](const point_result& p) { return p.fleet->repeat != 1; });
  EXPECT_FALSE(find_outliers(only_that_one, lenient).empty());

  for (const auto& f : find_outliers(ranks, lenient)) ADD_FAILURE() << f.why;
  // Repeats equal but the low one: the table is the untouched fleet's.
  auto low = repeated(3, 0);
  slow_down_repeat(low, 2, 1, 3.0);
  const auto healthy = repeated(3, 0);
  EXPECT_EQ(fleet_text(merge({low.begin(), low.end()}, lenient, nullptr, "died")),
            fleet_text(merge({healthy.begin(), healthy.end()}, lenient, nullptr, "died")));
}

TEST(Fleet, ARankLowInEveryRepeatIsFlagged) {
  auto ranks = repeated(3);
  for (int k = 0; k < 3; ++k) slow_down_repeat(ranks, 2, k, 3.0);
  const auto found = find_outliers(ranks, lenient);
  ASSERT_FALSE(found.empty());
  std::set<std::pair<std::string, std::string>> tests;
  for (const auto& f : found) {
    EXPECT_EQ(f.rank, 2) << f.why;
    EXPECT_NE(f.why.find("(median of 3; best "), std::string::npos) << f.why;
    EXPECT_NE(f.why.find("4 ranks"), std::string::npos) << f.why;  // the fleet's median is over ranks
    EXPECT_TRUE(tests.insert({f.phase, f.test}).second) << "judged once per (phase, test): " << f.why;
  }
  EXPECT_TRUE(tests.count({"together", "d2h-pinned"}));
}

// Four healthy H200s, h2d from pageable memory, five repeats each: GPU 2's
// median fell 12% under the fleet's while its best repeat was within 1%
// (docs/results/nvidia-h200-x4/, fleet-again.json). Interference only slows
// a transfer, so a card with one good repeat is not called slow.
TEST(Fleet, ARankLowInTwoRepeatsOfThreeButNormalInOneIsNotFlagged) {
  auto ranks = repeated(3);
  slow_down_repeat(ranks, 2, 0, 3.0);
  slow_down_repeat(ranks, 2, 2, 3.0);
  EXPECT_TRUE(find_outliers(ranks, lenient).empty());
  // Slow in every repeat it is named: the test can fail.
  slow_down_repeat(ranks, 2, 1, 3.0);
  EXPECT_FALSE(find_outliers(ranks, lenient).empty());
}

// Four healthy H200s, `--repeat 5` (docs/results/nvidia-h200-x4/run-b6fd721/
// fleet-again.json, samples trimmed). GPU 2's pageable h2d alone: 7.30, 7.30,
// 8.97, 8.86, 7.97 GB/s; its median is 12% under the fleet's 9.06, its best
// within 1%. The default thresholds named it until a73ff18.
TEST(Fleet, FourHealthyH200sAreHealthyThoughOneMedianIsLow) {
  auto ranks = read_fleet_file(XFER_TEST_DATA "/fleet-h200x4-repeat5.json");
  ASSERT_EQ(ranks.size(), 4u);
  for (const auto& f : find_outliers(ranks, thresholds{})) ADD_FAILURE() << f.why;
  // Without its two good repeats the same card is named: the test can fail.
  std::erase_if(ranks.at(2).points, [](const point_result& p) {
    return p.spec.host_memory == "pageable" && p.fleet->phase == "alone" && (p.fleet->repeat == 2 || p.fleet->repeat == 3);
  });
  const auto found = find_outliers(ranks, thresholds{});
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].rank, 2);
  EXPECT_EQ(found[0].test, "h2d-pageable");
  EXPECT_NE(found[0].why.find("(median of 3; best 7.97)"), std::string::npos) << found[0].why;
}

TEST(Fleet, AFailedRepeatIsAFindingAndTheOthersAreStillJudged) {
  auto ranks = repeated(3);
  auto& p = ranks.at(1).points.at(5);  // repeat 1's first point: interleaved, after repeat 0's five
  ASSERT_EQ(p.fleet->repeat, 1);
  p.status = point_status::failed;
  p.reason = "verification failed";
  const auto found = find_outliers(ranks, lenient);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].rank, 1);
  EXPECT_EQ(found[0].why, "health point failed: verification failed");
  EXPECT_NE(fleet_text(merge({ranks.begin(), ranks.end()}, lenient, nullptr, "died")).find("failed"),
            std::string::npos);
}

TEST(Fleet, AgainstTheBaselineARankIsSlowOnlyInEveryRepeat) {
  const auto baseline = repeated(3);
  auto ranks = repeated(3);
  slow_down_repeat(ranks, 3, 0, 2.0);  // one slow repeat: not slower than the baseline
  EXPECT_TRUE(find_outliers(ranks, lenient, &baseline).empty());
  slow_down_repeat(ranks, 3, 1, 2.0);  // slow median, one good repeat: not either
  EXPECT_TRUE(find_outliers(ranks, lenient, &baseline).empty());
  slow_down_repeat(ranks, 3, 2, 2.0);
  const auto found = find_outliers(ranks, lenient, &baseline);
  ASSERT_FALSE(found.empty());
  for (const auto& f : found) EXPECT_EQ(f.rank, 3) << f.why;
}

TEST(Fleet, TheHealthSetIsRepeatedWholeInterleaved) {
  const std::vector<std::pair<int, std::size_t>> want{{0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1}, {1, 2}};
  EXPECT_EQ(health_order(3, 2), want);
  EXPECT_EQ(health_order(5, 1).size(), 5u);
}

TEST(Fleet, TheRepeatTagRoundTripsAndOldFilesReadAsRepeatZero) {
  for (const auto& r : fixture())
    for (const auto& p : r.points) EXPECT_EQ(p.fleet->repeat, 0);  // written before --repeat
  const auto ranks = repeated(2);
  const rank_report back = rank_report_from_json(to_json_text(ranks.at(0)));
  ASSERT_EQ(back.points.size(), 20u);
  EXPECT_EQ(back.points.at(4).fleet->repeat, 0);
  EXPECT_EQ(back.points.at(5).fleet->repeat, 1);
}

TEST(Fleet, ALinkWithFewerLanesIsUnhealthyAnIdleLinksLowerGenerationIsNot) {
  auto ranks = fixture();
  pci_link idle, narrow;
  idle.address = "0000:01:00.0";
  idle.current_gen = 1, idle.max_gen = 5, idle.current_width = idle.max_width = 16;
  narrow.address = "0000:02:00.0";
  narrow.current_gen = narrow.max_gen = 5, narrow.current_width = 8, narrow.max_width = 16;
  ranks[0].link = idle;
  ranks[1].link = narrow;
  const auto found = find_outliers(ranks, lenient);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].rank, 1);
  EXPECT_NE(found[0].why.find("x8 of x16"), std::string::npos) << found[0].why;
}

// What a rank sends rank 0 survives the trip with its link (a GPU rank has
// one; the H100 run at f020e10 lost every rank here, counted missing).
TEST(Fleet, ARanksReportWithItsLinkRoundTrips) {
  auto r = fixture().at(0);
  pci_link l;
  l.address = "0000:00:06.0";
  l.current_gen = l.max_gen = 5, l.current_width = l.max_width = 16;
  l.ceiling_h2d_gbps = 58.45, l.numa_node = 1;
  r.link = l;
  const rank_report back = rank_report_from_json(to_json_text(r));
  ASSERT_TRUE(back.link.has_value());
  EXPECT_EQ(back.link->address, l.address);
  EXPECT_EQ(back.link->max_width, 16);
  EXPECT_DOUBLE_EQ(back.link->ceiling_h2d_gbps, 58.45);
  EXPECT_EQ(back.link->numa_node, 1);
  EXPECT_EQ(back.points.size(), r.points.size());
}

TEST(Fleet, MissingRanksAndDisagreementsHaveTheirOwnExitCodes) {
  auto ranks = fixture();
  std::vector<std::optional<rank_report>> reports(ranks.begin(), ranks.end());
  reports[1].reset();
  auto m = merge(reports, lenient, nullptr, "died");
  EXPECT_EQ(m.exit_code, exit_rank_missing);
  EXPECT_EQ(m.missing, std::vector<int>{1});
  EXPECT_EQ(m.ranks.size(), 3u);  // the others are kept
  reports[1] = ranks[1];
  reports[3]->options += " size=1";
  m = merge(reports, lenient, nullptr, "died");
  EXPECT_EQ(m.exit_code, exit_disagree);
  ASSERT_FALSE(m.problems.empty());
  EXPECT_NE(m.problems.front().find("rank 3"), std::string::npos);
}

// Healthy needs evidence: a rank whose every health point was skipped
// (`fleet --size 40G`) measured nothing, and the fleet is not healthy.
TEST(Fleet, ARankThatMeasuredNothingIsUnhealthy) {
  auto ranks = fixture();
  for (auto& r : ranks)
    for (auto& p : r.points) {
      p.status = point_status::skipped;
      p.reason = "40 GiB does not fit";
    }
  const merged m = merge({ranks.begin(), ranks.end()}, lenient, nullptr, "died");
  EXPECT_EQ(m.exit_code, exit_unhealthy);
  ASSERT_EQ(m.findings.size(), ranks.size());
  EXPECT_EQ(m.findings[0].why, "rank 0 measured no bandwidth: every bandwidth point skipped (40 GiB does not fit)");
  // The latency measured, every bandwidth point skipped: still no evidence.
  ranks = fixture();
  for (auto& p : ranks[2].points)
    if (p.spec.bytes > 4) {
      p.status = point_status::skipped;
      p.reason = "too large";
    }
  const auto found = find_outliers(ranks, lenient);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].why, "rank 2 measured no bandwidth: every bandwidth point skipped (too large)");
  ranks[1].points.clear();
  EXPECT_EQ(find_outliers(ranks, lenient)[0].why, "rank 1 measured no bandwidth: it ran no health point");
}

// A NaN or 0 s median is no measurement: its rank is unhealthy, though no
// fleet median is there to compare with (two ranks), and the other ranks are
// judged against a fleet median without it.
TEST(Fleet, AFigureThatIsNoMeasurementIsUnhealthy) {
  for (const double bad : {std::nan(""), 0.0, -std::numeric_limits<double>::infinity()}) {
    auto ranks = fixture();
    ranks.resize(2);
    ranks[1].points[0].stats.median = bad;
    const merged m = merge({ranks.begin(), ranks.end()}, lenient, nullptr, "died");
    EXPECT_EQ(m.exit_code, exit_unhealthy) << bad;
    ASSERT_EQ(m.findings.size(), 1u) << bad;
    EXPECT_EQ(m.findings[0].rank, 1);
    EXPECT_NE(m.findings[0].why.find("h2d-pinned is not a measurement"), std::string::npos) << m.findings[0].why;
    ranks = fixture();
    ranks[3].points[0].stats.median = bad;
    const auto found = find_outliers(ranks, lenient);
    ASSERT_EQ(found.size(), 1u) << found.back().why;
    EXPECT_EQ(found[0].rank, 3);
  }
}

// Interrupted (SIGTERM): the run is partial, said so with the signal's exit
// code, not judged unhealthy; the file says interrupted.
TEST(Fleet, AnInterruptedRankMakesTheRunInterruptedNotUnhealthy) {
  auto ranks = fixture();
  ranks[2].status = "error";
  ranks[2].reason = "interrupted by signal 15";
  ranks[2].interrupted_by = 15;
  const merged m = merge({ranks.begin(), ranks.end()}, lenient, nullptr, "died");
  EXPECT_EQ(m.exit_code, 128 + 15);
  EXPECT_EQ(m.interrupted_by, 15);
  EXPECT_TRUE(m.findings.empty()) << m.findings.front().why;
  ASSERT_EQ(m.problems.size(), 1u);
  const auto doc = nlohmann::json::parse(fleet_json(run_context{}, m));
  EXPECT_EQ(doc.at("interrupted"), true);
  EXPECT_EQ(doc.at("fleet").at("interrupted"), true);
  EXPECT_EQ(doc.at("fleet").at("ranks").at(2).at("verdict"), "interrupted");
  EXPECT_EQ(doc.at("fleet").at("ranks").at(2).at("interrupted_by"), 15);
  EXPECT_EQ(rank_report_from_json(to_json_text(ranks[2])).interrupted_by, 15);
}

// The rank files of --out-dir, one rank each, as each rank writes its own.
std::vector<std::string> rank_files(const std::vector<rank_report>& ranks, const std::filesystem::path& dir) {
  std::vector<std::string> paths;
  for (const auto& r : ranks) {
    paths.push_back((dir / ("rank-" + std::to_string(r.who.rank) + ".json")).string());
    std::ofstream(paths.back()) << fleet_json(run_context{}, merge({r}, lenient, nullptr, "-"));
  }
  return paths;
}

TEST(Fleet, RankFilesMergedAreJudgedAsOverMpiAndEachRankCarriesItsVerdict) {
  const auto dir = std::filesystem::temp_directory_path() / ("xfer-fleet-merge-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto ranks = fixture();
  slow_down(ranks, 2, 3.0);
  auto paths = rank_files(ranks, dir);
  std::vector<std::optional<rank_report>> reports(ranks.begin(), ranks.end());
  const merged over_mpi = merge(reports, lenient, nullptr, "-");
  const merged_files f = merge_rank_files(paths, lenient, nullptr, "no file");
  EXPECT_EQ(f.m.exit_code, exit_unhealthy);
  ASSERT_EQ(f.m.findings.size(), over_mpi.findings.size());
  for (std::size_t i = 0; i < f.m.findings.size(); ++i) EXPECT_EQ(f.m.findings[i].why, over_mpi.findings[i].why);
  const auto doc = nlohmann::json::parse(f.json);
  for (const auto& r : doc.at("fleet").at("ranks")) {
    const bool slow = r.at("rank") == 2;
    EXPECT_EQ(r.at("verdict"), slow ? "unhealthy" : "healthy") << r.at("rank");
    EXPECT_EQ(r.at("why").size(), slow ? f.m.findings.size() : 0u);
  }
  EXPECT_EQ(doc.at("config").at("merged_from").size(), 4u);
  // A rank in two files is a problem; a file missing is a missing rank.
  paths.push_back(paths[0]);
  std::filesystem::remove(paths[3]);
  paths.erase(paths.begin() + 3);
  const merged_files g = merge_rank_files(paths, lenient, nullptr, "no file");
  EXPECT_EQ(g.m.exit_code, exit_rank_missing);
  EXPECT_EQ(g.m.missing, std::vector<int>{3});
  ASSERT_FALSE(g.m.problems.empty());
  EXPECT_NE(g.m.problems.front().find("rank 0 reported twice"), std::string::npos) << g.m.problems.front();
  std::filesystem::remove_all(dir);
}

TEST(Fleet, ARankFileOutsideItsJobIsRefusedNotMergedAsALargerFleet) {
  const auto dir = std::filesystem::temp_directory_path() / ("xfer-fleet-outside-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto ranks = fixture();
  ranks.resize(2);
  for (auto& r : ranks) r.who.size = 2;
  ranks[1].who.rank = 7;  // rank 7 of 2
  for (auto& p : ranks[1].points) p.fleet->rank = 7;
  const auto paths = rank_files(ranks, dir);
  try {
    (void)merge_rank_files(paths, lenient, nullptr, "no file");
    ADD_FAILURE() << "merged a rank outside its job";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("rank 7 of 2 is outside the job"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
}

TEST(Fleet, RankVariablesOfEachLauncher) {
  std::map<std::string, std::string> env{{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "8"}, {"SLURM_LOCALID", "1"},
                                         {"SLURM_NTASKS_PER_NODE", "4"}};
  const auto get = [&](const char* n) -> const char* {
    const auto it = env.find(n);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  auto id = identity_from_env(get, "n1");
  ASSERT_TRUE(id);
  EXPECT_EQ(id->rank, 5);
  EXPECT_EQ(id->size, 8);
  EXPECT_EQ(id->local_rank, 1);
  EXPECT_EQ(id->node, "n1");
  // A rank outside its job would run as rank 0 and write rank 0's file: refused.
  env = {{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "2"}};
  EXPECT_THROW(identity_from_env(get, "n1"), usage_error);
  env = {{"RANK", "9"}, {"WORLD_SIZE", "4"}};
  try {
    identity_from_env(get, "n1");
    ADD_FAILURE() << "no error";
  } catch (const usage_error& e) {
    EXPECT_NE(std::string(e.what()).find("RANK=9 is outside the job (WORLD_SIZE=4)"), std::string::npos) << e.what();
  }
  env.clear();
  EXPECT_FALSE(identity_from_env(get, "n1"));
}

}  // namespace
}  // namespace xfer::fleet
