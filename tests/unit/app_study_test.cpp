#include <cmath>
#include <map>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <xfer/backends/registry.hpp>
#include <xfer/backends/vadd_registry.hpp>
#include <xfer/core/errors.hpp>

#include "app_study.hpp"
#include "host/host_backend.hpp"
#include "recording_context.hpp"

using namespace xfer;
using app_study::run_result;

namespace {

// A run whose every phase took a fixed number of milliseconds.
run_result fixed(const std::string& strategy, std::size_t n, std::array<double, vadd_phase_count> ms) {
  run_result r;
  r.backend = "fake";
  r.device = "dev";
  r.strategy = strategy;
  r.n = n;
  r.verified = true;
  for (std::size_t p = 0; p < vadd_phase_count; ++p)
    if (ms[p] >= 0) r.samples[p] = {ms[p] / 1e3, ms[p] / 1e3 * 3, ms[p] / 1e3};  // median = ms[p]
  return r;
}

// The seed's Example 1 and 2 (000: unaligned vs aligned), phase by phase, in ms.
const std::array<double, vadd_phase_count> example1{247.371, 0.030, 47.955, 35.706, 64.656, 24.829, 0.009, 92.118, 24.887, -1};
const std::array<double, vadd_phase_count> example2{256.254, 0.055, 47.884, 35.808, 9.103, 6.615, 0.014, 92.110, 2.479, -1};

}  // namespace

TEST(AppStudy, BottomLinesReproduceTheSeedsArithmetic) {
  const auto b1 = app_study::bottom(fixed("unaligned", 1, example1));
  EXPECT_NEAR(b1.program_s * 1e3, 35.706 - (247.371 + 0.030 + 64.656 + 24.829 + 0.009 + 92.118 + 24.887), 1e-9);
  EXPECT_NEAR(b1.program_s * 1e3, -418.194, 1e-3);  // the seed prints -418.228 (it also counts its enqueue call)
  EXPECT_NEAR(b1.algorithm_s * 1e3, 35.706 - (64.656 + 24.829 + 0.009 + 92.118 + 24.887), 1e-9);
}

TEST(AppStudy, NothingOffloadedHasNoBottomLine) {
  std::array<double, vadd_phase_count> cpu_only{-1, 0.1, 2, 3, -1, -1, -1, -1, -1, -1};
  const auto b = app_study::bottom(fixed("aligned", 1, cpu_only));
  EXPECT_TRUE(std::isnan(b.program_s));
  EXPECT_TRUE(std::isnan(b.algorithm_s));
}

TEST(AppStudy, TableShowsDeltasAgainstTheBaseline) {
  std::vector<run_result> rs{fixed("pageable-unaligned", 1024, example1), fixed("aligned", 1024, example2)};
  const std::string t = app_study::render_table(rs, 1024, "pageable-unaligned");
  EXPECT_NE(t.find("| Phase | pageable-unaligned | aligned | Δ aligned |"), std::string::npos) << t;
  EXPECT_NE(t.find("| Buffer mapping | 64.656 ms | 9.103 ms | -55.553 ms |"), std::string::npos) << t;
  EXPECT_NE(t.find("| Write inputs out | 24.829 ms | 6.615 ms | -18.214 ms |"), std::string::npos) << t;
  EXPECT_NE(t.find("| Read result back | 24.887 ms | 2.479 ms | -22.408 ms |"), std::string::npos) << t;
  EXPECT_NE(t.find("| Verify | - | - | - |"), std::string::npos) << t;
  // Bottom lines: 35.808 - 366.630 = -330.822; their delta -330.822 - (-418.194) = +87.372
  EXPECT_NE(t.find("| Δ accelerator → CPU (+: accelerator faster) | -418.194 ms | -330.822 ms | +87.372 ms |"),
            std::string::npos)
      << t;
  // The seed's example: the CPU's loop wins with either buffer, and the table says so in words.
  EXPECT_NE(t.find("aligned: the CPU's loop beats the accelerated program by 330.822 ms (median of 3 repeats)"),
            std::string::npos)
      << t;
}

// The verdict the console prints and the file carries (the report prints it as
// it is): who won, from the sign of CPU minus accelerator, at a size where the
// accelerator wins and one where it loses; and no winner where repeats disagree.
TEST(AppStudy, VerdictNamesTheSideThatWonAndTheFileSaysTheSame) {
  auto wins = example1;
  wins[static_cast<std::size_t>(vadd_phase::cpu_vadd)] = 1000;  // the CPU's loop now takes 1 s
  const auto won = fixed("aligned", 1 << 20, wins), lost = fixed("aligned", 1024, example1);
  const auto v_won = app_study::judge(won), v_lost = app_study::judge(lost);
  EXPECT_EQ(v_won.winner, "accelerator");
  EXPECT_GT(v_won.saves_s, 0);
  EXPECT_NE(v_won.text.find("the accelerated program beats the CPU's loop by"), std::string::npos) << v_won.text;
  EXPECT_EQ(v_lost.winner, "cpu");
  EXPECT_LT(v_lost.saves_s, 0);
  EXPECT_NE(v_lost.text.find("the CPU's loop beats the accelerated program by 418.194 ms"), std::string::npos)
      << v_lost.text;
  for (const auto* r : {&won, &lost}) {
    const auto j = nlohmann::json::parse(app_study::to_value(*r).dump());
    const auto v = app_study::judge(*r);
    EXPECT_EQ(j["verdict"]["winner"], v.winner);
    EXPECT_EQ(j["verdict"]["text"], v.text);
    EXPECT_DOUBLE_EQ(j["accelerator_saves_s"].get<double>(), v.saves_s) << "named for its sign";
  }
  // One repeat where the CPU's loop was slow: the repeats disagree, no winner.
  auto mixed = lost;
  mixed.samples[static_cast<std::size_t>(vadd_phase::cpu_vadd)][1] = 10;
  const auto v_mixed = app_study::judge(mixed);
  EXPECT_EQ(v_mixed.winner, "unclear");
  EXPECT_NE(v_mixed.text.find("faster in 1 and slower in 2 of 3 repeats"), std::string::npos) << v_mixed.text;
}

TEST(AppStudy, SkippedStrategiesAreListedWithTheirReason) {
  run_result skipped;
  skipped.strategy = "pinned";
  skipped.n = 8;
  skipped.status = point_status::skipped;
  skipped.reason = "no GPU";
  std::vector<run_result> rs{fixed("pageable-unaligned", 8, example1), skipped};
  const std::string t = app_study::render_table(rs, 8, "pageable-unaligned");
  EXPECT_NE(t.find("pinned: skipped: no GPU"), std::string::npos) << t;
  const auto j = nlohmann::json::parse(app_study::to_value(skipped).dump());
  EXPECT_EQ(j["status"], "skipped");
  EXPECT_EQ(j["reason"], "no GPU");
  EXPECT_TRUE(j["accelerator_saves_s"].is_null()) << "nothing offloaded: no bottom line";
  EXPECT_TRUE(j["verdict"]["winner"].is_null());
}

TEST(AppStudy, CrossoverIsTheFirstSizeWhereTheAcceleratorKeepsUp) {
  auto slow = example1, fast = example1;
  fast[static_cast<std::size_t>(vadd_phase::cpu_vadd)] = 1000;  // the CPU loop now loses
  std::vector<run_result> rs{fixed("aligned", 1024, slow), fixed("aligned", 1 << 20, fast),
                             fixed("aligned", 1 << 24, fast), fixed("pageable", 1024, slow)};
  const std::string t = app_study::render_crossover(rs);
  EXPECT_NE(t.find("aligned: the accelerator matches or beats the CPU from 1M elements"), std::string::npos) << t;
  EXPECT_NE(t.find("pageable: the CPU is faster at every size run"), std::string::npos) << t;
}

TEST(AppStudy, HostRunHasItsPhasesTimedAndVerified) {
  host::host_backend b(1, {});
  auto app = make_vadd_app(b, 0);  // the registry's: found for the host backend
  ASSERT_NE(app, nullptr);
  app_study::options o;
  o.sizes = {1000, 4097};
  o.repeats = 2;
  std::atomic<bool> stop{false};
  const auto rs = app_study::run(*app, "host", "cpu", o, stop);
  ASSERT_EQ(rs.size(), 2u * 4);
  for (const auto& r : rs) {
    EXPECT_TRUE(r.ok()) << r.reason;
    EXPECT_TRUE(r.verified);
    for (auto p : {vadd_phase::allocate, vadd_phase::populate, vadd_phase::cpu_vadd})
      EXPECT_EQ(r.samples[static_cast<std::size_t>(p)].size(), 2u) << vadd_phase_names[static_cast<std::size_t>(p)];
    EXPECT_TRUE(r.samples[static_cast<std::size_t>(vadd_phase::kernel)].empty());
  }
}

TEST(AppStudy, SharedCpuSideIsCorrect) {
  std::vector<std::uint32_t> a(100), b(100), c(100);
  vadd_populate(a.data(), b.data(), 100);
  for (auto x : a) EXPECT_NE(x, 0u);
  vadd_cpu(a.data(), b.data(), c.data(), 100);
  EXPECT_EQ(c[37], a[37] + b[37]);
  auto d = c;
  EXPECT_EQ(vadd_first_mismatch(c.data(), d.data(), 100), 100u);
  d[42] ^= 1;
  EXPECT_EQ(vadd_first_mismatch(c.data(), d.data(), 100), 42u);
}

namespace {

// A vadd_app whose strategies behave as told: "good" runs verified, "wrong"
// computes a wrong result, "absent" is skipped, "broken" throws.
class scripted_app final : public vadd_app {
 public:
  std::vector<kind_support> strategies() const override {
    return {{"good", true, "", ""}, {"wrong", true, "", ""}, {"absent", false, "not here", ""}, {"broken", true, "", ""}};
  }
  vadd_times run(const std::string& s, std::size_t) override {
    if (s == "absent") throw skip_point("not here");
    if (s == "broken") throw std::runtime_error("the driver fell over");
    vadd_times t;
    t[vadd_phase::cpu_vadd] = 1e-3;
    t[vadd_phase::kernel] = 1e-4;
    t.verified = s == "good";
    return t;
  }
};

app_study::vadd_study scripted_study(std::vector<std::string> strategies) {
  app_study::options o;
  o.sizes = {16};
  o.repeats = 1;
  o.baseline = "good";
  o.strategies = std::move(strategies);
  std::vector<app_study::target> t;
  t.push_back({"fake", "dev", std::make_unique<scripted_app>()});
  return app_study::vadd_study(std::move(o), std::move(t));
}

}  // namespace

// The failure is a status, not a word at the start of the reason: a wrong
// result and a thrown error are failed records, an absent strategy a skipped one.
TEST(AppStudy, EachRunIsARecordWithItsStatus) {
  auto study = scripted_study({});
  test::recording_context ctx;
  study.run(ctx);
  std::map<std::string, point_status> status;
  for (const auto& r : ctx.records)
    if (r.section == "results") status[nlohmann::json::parse(r.fields.dump())["strategy"]] = r.status;
  EXPECT_EQ(status["good"], point_status::ok);
  EXPECT_EQ(status["wrong"], point_status::failed);
  EXPECT_EQ(status["absent"], point_status::skipped);
  EXPECT_EQ(status["broken"], point_status::failed);
  const auto results = ctx.section("results");
  ASSERT_EQ(results.size(), 4u);
  EXPECT_EQ(results[1]["reason"], "the device's result differs from the CPU's");
  EXPECT_EQ(results[3]["reason"], "the driver fell over");
  EXPECT_NE(ctx.text.find("| Phase | good | wrong | Δ wrong | absent | Δ absent | broken | Δ broken |"), std::string::npos) << ctx.text;
  EXPECT_NE(ctx.text.find("wrong: failed: the device's result differs"), std::string::npos) << ctx.text;
}

TEST(AppStudy, UnknownStrategiesAndBaselinesAreUsageErrors) {
  EXPECT_THROW(scripted_study({"granite"}), usage_error);
  app_study::options o;
  o.baseline = "granite";
  std::vector<app_study::target> t;
  t.push_back({"fake", "dev", std::make_unique<scripted_app>()});
  EXPECT_THROW(app_study::vadd_study(o, std::move(t)), usage_error);
  EXPECT_THROW(app_study::vadd_study(app_study::options{}, {}), usage_error) << "no backend has a vadd";
}

// A baseline named beside --strategies that leaves it out was measured
// nowhere, and the tables lost their deltas without a word.
TEST(AppStudy, ABaselineGivenMustBeAmongTheStrategiesGiven) {
  try {
    scripted_study({"wrong", "broken"});
    ADD_FAILURE() << "a baseline outside the strategies was taken";
  } catch (const usage_error& e) {
    EXPECT_STREQ(e.what(), "--baseline good is not among --strategies wrong,broken: add it to them, or compare with one "
                           "of them");
  }
  EXPECT_NO_THROW(scripted_study({"wrong", "good"}));
  EXPECT_NO_THROW(scripted_study({})) << "every strategy: the baseline among them";
}

// Only backends with a vadd part get one from the registry; the host's is the CPU baseline.
TEST(VaddRegistry, FindsTheHostsPart) {
  auto entries = make_backends({});
  for (auto* b : select_backends(entries, {"host"})) {
    auto app = make_vadd_app(*b, 0);
    ASSERT_NE(app, nullptr);
    EXPECT_TRUE(app->run("pageable", 64).verified);
  }
}

// The study's own input checks (what the CLI's --repeat and --size map to).
TEST(AppStudy, RepeatsOutOfRangeAndSizesBeyondMemoryAreAUsageError) {
  app_study::options o;
  o.sizes = {1024};
  EXPECT_NO_THROW(o.check(std::uint64_t{1} << 30));
  EXPECT_NO_THROW(o.check(0)) << "available memory unknown: nothing to check";
  o.repeats = 0;
  EXPECT_THROW(o.check(std::uint64_t{1} << 30), usage_error);
  o.repeats = 1001;
  EXPECT_THROW(o.check(std::uint64_t{1} << 30), usage_error);
  o.repeats = 3;
  o.sizes = {std::size_t{1} << 20};  // four vectors of 4 MiB: 16 MiB
  EXPECT_NO_THROW(o.check(std::uint64_t{16} << 20));
  try {
    o.check((std::uint64_t{16} << 20) - 1);
    ADD_FAILURE() << "no usage_error";
  } catch (const usage_error& e) {
    EXPECT_NE(std::string(e.what()).find("1M elements need 4 buffers of 4 MiB"), std::string::npos) << e.what();
  }
}

// A run the watchdog leaves behind is failed with its reason; its thread is
// still inside the app's backend, so the app's later runs are skipped with
// where it is stuck, as a sweep skips a backend left behind.
TEST(AppStudy, ARunLeftBehindFailsAndTheAppsLaterRunsAreSkipped) {
  host::host_backend b(1, {});
  auto app = make_vadd_app(b, 0);
  ASSERT_NE(app, nullptr);
  app_study::options o;
  o.sizes = {1000, 4097};
  o.strategies = {"pageable", "aligned"};
  o.repeats = 1;
  std::atomic<bool> stop{false};
  test::recording_context ctx;
  ctx.leave = {1};  // aligned at 1000 elements
  const auto rs = app_study::run(*app, "host", "cpu", o, stop, {}, &ctx);
  ASSERT_EQ(rs.size(), 4u);
  EXPECT_TRUE(rs[0].ok()) << rs[0].reason;
  EXPECT_EQ(rs[1].status, point_status::failed);
  EXPECT_EQ(rs[1].reason, ctx.left_reason);
  EXPECT_FALSE(rs[1].verified);
  for (std::size_t i : {2u, 3u}) {
    EXPECT_EQ(rs[i].status, point_status::skipped);
    EXPECT_EQ(rs[i].reason, "not run: host is still stuck in an earlier point (aligned 1000 elements)");
  }
  EXPECT_EQ(ctx.watched_points, 2u) << "nothing more of the app is run";

  // Left behind by a stop request: the runs completed before it stand, nothing after.
  test::recording_context stopped;
  stopped.leave = {1};
  stopped.left_reason.clear();
  EXPECT_EQ(app_study::run(*app, "host", "cpu", o, stop, {}, &stopped).size(), 1u);
}
