#include <algorithm>
#include <gtest/gtest.h>
#include <sstream>
#include <xfer/backends/registry.hpp>
#include <xfer/core/errors.hpp>
#include <xfer/mem/kinds.hpp>

#include "alloc_study.hpp"
#include "recording_context.hpp"
#include "strategies.hpp"

using namespace xfer;

TEST(AllocStudy, TheSeedsTwoHundredSizes) {
  const auto sizes = alloc_study::alignment_sizes();
  ASSERT_EQ(sizes.size(), 200u);
  EXPECT_EQ(sizes.front(), 1u);
  EXPECT_EQ(sizes.back(), 7680u * 4320 * 4);
  for (std::size_t i = 1; i < sizes.size(); ++i) EXPECT_GE(sizes[i], sizes[i - 1]);
}

TEST(AllocStudy, WorkloadIsDeterministicPerSeed) {
  alloc_study::options o;
  o.iterations = 1000;
  const auto a = alloc_study::make_workload(o), b = alloc_study::make_workload(o);
  ASSERT_EQ(a.size(), 1000u);
  std::size_t allocs = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].bytes, b[i].bytes);
    EXPECT_EQ(a[i].victim, b[i].victim);
    if (a[i].bytes) {
      ++allocs;
      EXPECT_GE(a[i].bytes, 64u);
      EXPECT_LE(a[i].bytes, o.max_block);
    }
  }
  EXPECT_GT(allocs, 450u);
  EXPECT_LT(allocs, 650u);
  o.seed = 2;
  EXPECT_NE(alloc_study::make_workload(o)[0].bytes + alloc_study::make_workload(o)[1].bytes,
            a[0].bytes + a[1].bytes);
}

TEST(AllocStudy, StrategiesResolveOrSayWhy) {
  const auto backends = make_backends({});
  EXPECT_EQ(alloc_study::make_strategy("over-aligned", backends).resource().natural_alignment(), 4096u);
  const auto pooled = alloc_study::make_strategy("pool:aligned", backends);
  ASSERT_NE(pooled.pool, nullptr);
  EXPECT_EQ(pooled.resource().kind(), "pool:aligned");
  EXPECT_THROW(alloc_study::make_strategy("granite", backends), usage_error);
  EXPECT_THROW(alloc_study::make_strategy("pool:granite", backends), usage_error);
}

// One spelling per kind: the allocator study's kinds are the sweep's, and its
// old name for pageable memory resolves to the sweep's name.
TEST(AllocStudy, KindsAreSpelledAsTheSweepSpellsThem) {
  const auto backends = make_backends({});
  for (const auto& name : mem::host_kind_names())
    EXPECT_EQ(alloc_study::make_strategy(name, backends).name, name);
  const auto old = alloc_study::make_strategy("malloc", backends);
  EXPECT_EQ(old.name, "pageable");
  EXPECT_EQ(old.resource().kind(), mem::make_host_kind("pageable")->kind());
  EXPECT_EQ(alloc_study::make_strategy("pool:malloc", backends).name, "pool:pageable");
  const auto defaults = alloc_study::default_strategy_names();
  EXPECT_EQ(std::count(defaults.begin(), defaults.end(), "malloc"), 0);
  EXPECT_EQ(std::count(defaults.begin(), defaults.end(), "pageable"), 1);
}

TEST(AllocStudy, DeviceKindsWithoutADeviceAreSkippedWithTheReason) {
  const auto backends = make_backends({});
  bool any_pinned = false;
  for (const auto& b : backends)
    if (b.impl) try {
        b.impl->host_memory("pinned");
        any_pinned = true;
      } catch (const skip_point&) {
      }
  if (any_pinned) GTEST_SKIP() << "a backend here offers pinned memory";
  try {
    alloc_study::make_strategy("pinned", backends);
    FAIL();
  } catch (const skip_point& e) {
    EXPECT_NE(std::string(e.what()).find("no backend offers 'pinned'"), std::string::npos) << e.what();
  }
}

namespace {

// 3 runs a size, 300 workload steps of blocks up to 64K.
alloc_study::options small_options(std::vector<std::string> strategies, std::vector<std::uint64_t> sizes,
                                   std::size_t repeats) {
  alloc_study::options o;
  o.strategies = std::move(strategies);
  o.sizes = std::move(sizes);
  o.runs = 3;
  o.repeats = repeats;
  o.iterations = 300;
  o.max_block = 64 << 10;
  return o;
}

}  // namespace

TEST(AllocStudy, SmallRunFillsEverySectionAndChecksAlignment) {
  const auto o = small_options({"pageable", "aligned", "pool:aligned", "pinned"}, {4096}, 2);
  const auto backends = make_backends({});
  alloc_study::allocator_study study(o, backends);
  test::recording_context ctx;
  study.run(ctx);
  nlohmann::json doc;
  for (const char* section : {"strategies", "alignment", "cost", "fragmentation"}) doc[section] = ctx.section(section);
  ASSERT_EQ(doc["alignment"].size(), doc["strategies"].size() - (doc["strategies"][3]["status"] == "skipped"));
  for (const auto& a : doc["alignment"]) {
    EXPECT_EQ(a["checked"], 200);
    EXPECT_EQ(a["misaligned"], 0);
  }
  for (const auto& c : doc["cost"]) EXPECT_EQ(c["alloc_free_s"]["count"], 3);
  // Each strategy that ran x 1 size x 2 repeats; pinned runs only where a GPU API offers it.
  const bool pinned_ran = doc["strategies"][3]["status"] != "skipped";
  EXPECT_EQ(doc["cost"].size(), (pinned_ran ? 4u : 3u) * 2);
  bool saw_pool = false;
  for (const auto& f : doc["fragmentation"]) {
    EXPECT_EQ(f["steps"], 300);
    if (f["strategy"] == "pool:aligned") {
      saw_pool = true;
      EXPECT_LT(f["pool"]["rounding_waste_ratio_peak"].get<double>(), 1.0 / 16);
      EXPECT_GT(f["pool"]["hits"].get<int>(), 0);
    }
  }
  EXPECT_TRUE(saw_pool);
  EXPECT_NE(ctx.text.find("run-to-run spread"), std::string::npos);
  EXPECT_GT(ctx.progress_calls, 0u);
  for (const auto& r : ctx.records) EXPECT_NE(r.status, point_status::failed) << r.fields.dump();
}

// A point the watchdog leaves behind is failed with its reason and the study
// goes on: a thread stuck in the library's own memory holds nothing the
// later points need.
TEST(AllocStudy, APointLeftBehindIsFailedAndTheOthersRun) {
  const auto o = small_options({"pageable", "aligned"}, {4096, 8192}, 1);
  const auto backends = make_backends({});
  alloc_study::allocator_study study(o, backends);
  test::recording_context ctx;
  ctx.leave = {1, 4};  // pageable's 8K cost, and pageable's fragmentation
  study.run(ctx);
  const auto cost = ctx.section("cost");
  ASSERT_EQ(cost.size(), 4u);
  EXPECT_EQ(cost[1]["strategy"], "pageable");
  EXPECT_EQ(cost[1]["bytes"], 8192);
  EXPECT_EQ(cost[1]["status"], "failed");
  EXPECT_EQ(cost[1]["reason"], ctx.left_reason);
  for (std::size_t i : {0u, 2u, 3u}) EXPECT_EQ(cost[i]["alloc_free_s"]["count"], 3) << "measured: " << cost[i];
  const auto frag = ctx.section("fragmentation");
  ASSERT_EQ(frag.size(), 2u);
  EXPECT_EQ(frag[0]["status"], "failed");
  EXPECT_EQ(frag[0]["reason"], ctx.left_reason);
  EXPECT_EQ(frag[1]["strategy"], "aligned");
  EXPECT_EQ(frag[1]["steps"], 300) << "measured: " << frag[1];
  std::size_t failed = 0;
  for (const auto& r : ctx.records) failed += r.status == point_status::failed;
  EXPECT_EQ(failed, 2u) << "the exit code sees both";
  EXPECT_NE(ctx.text.find("pageable           8K failed: " + ctx.left_reason), std::string::npos) << ctx.text;
}

// The study's own input checks (what the CLI's --runs ... --max-block map to).
TEST(AllocStudy, OptionsOutOfRangeAreAUsageErrorNamingTheOption) {
  const std::uint64_t memory = std::uint64_t{1} << 30;
  EXPECT_NO_THROW(alloc_study::options{}.check(memory));
  const auto fails = [&](auto change, const std::string& mentions) {
    alloc_study::options o;
    change(o);
    try {
      o.check(memory);
      ADD_FAILURE() << "no usage_error for " << mentions;
    } catch (const xfer::usage_error& e) {
      EXPECT_NE(std::string(e.what()).find(mentions), std::string::npos) << e.what();
    }
  };
  fails([](auto& o) { o.runs = 0; }, "--runs 0");
  fails([](auto& o) { o.repeats = 101; }, "--repeat 101");
  fails([](auto& o) { o.iterations = 0; }, "--iterations 0");
  fails([](auto& o) { o.max_live = 0; }, "--max-live 0");
  fails([](auto& o) { o.max_block = 63; }, "--max-block");
  fails([](auto& o) { o.sizes = {memory}; }, "more than half of this machine's memory");
  // max_block x max_live wraps past 2^64: still caught.
  fails([](auto& o) { o.max_block = std::uint64_t{1} << 63; o.max_live = 2; }, "--max-block 8388608T x --max-live 2");
}

TEST(AllocStudy, OldStrategySpellingsAreRespelledWithANoteAndRepeatsDropped) {
  std::vector<std::string> notes;
  const auto names = alloc_study::respell_strategies({"malloc", "pool:regular", "pageable", "aligned"}, notes);
  EXPECT_EQ(names, (std::vector<std::string>{"pageable", "pool:pageable", "aligned"}));
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_EQ(notes[0], "strategy 'malloc' is spelled 'pageable' now");
  EXPECT_EQ(notes[1], "strategy 'pool:regular' is spelled 'pool:pageable' now");
}
