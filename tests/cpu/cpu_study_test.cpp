// The study on this machine's real kinds (CI has no GPU: pinned kinds skip
// with reasons), plus fake backends for the plumbing a GPU machine exercises:
// a kind from a non-host backend, a write-combined kind, a refused allocation.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <sstream>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <unistd.h>
#include <xfer/backends/registry.hpp>
#include <xfer/config.hpp>
#include <xfer/core/errors.hpp>
#include <xfer/core/session.hpp>
#include <xfer/cpu/cpu_report.hpp>
#include <xfer/cpu/cpu_study.hpp>
#include <xfer/cpu/study.hpp>
#include <xfer/mem/error.hpp>

#include "../unit/recording_context.hpp"

namespace {

using namespace xfer::cpu;
using xfer::point_status;

// Ordinary malloc memory that claims whatever properties the test gives it.
class fake_resource final : public xfer::mem::host_resource {
 public:
  fake_resource(std::string kind, xfer::mem::properties p, bool refuse)
      : kind_(std::move(kind)), props_(p), refuse_(refuse) {}
  std::string_view kind() const noexcept override { return kind_; }
  xfer::mem::properties props() const noexcept override { return props_; }
  std::size_t max_alignment() const noexcept override { return 4096; }
  std::size_t natural_alignment() const noexcept override { return 4096; }
  std::string describe() const override { return "fake " + kind_; }

 private:
  void* do_allocate(std::size_t bytes, std::size_t alignment) override {
    if (refuse_) throw xfer::mem::allocation_error(kind_, bytes, "the fake driver refuses");
    return std::aligned_alloc(alignment, (bytes + alignment - 1) / alignment * alignment);
  }
  void do_deallocate(void* p, std::size_t, std::size_t) noexcept override { std::free(p); }
  std::string kind_;
  xfer::mem::properties props_;
  bool refuse_;
};

// Offers "pinned-wc" (write-combined, but really cached) and "refusing".
class fake_gpu_backend final : public xfer::backend {
 public:
  std::string name() const override { return "fakegpu"; }
  std::string description() const override { return "test double"; }
  std::vector<xfer::device_info> devices() const override { return {}; }
  std::vector<xfer::route_info> routes() const override { return {}; }
  std::vector<xfer::kind_support> host_memory_kinds() const override {
    return {{"pinned-wc", true, "", ""}, {"refusing", true, "", ""}};
  }
  std::unique_ptr<xfer::mem::host_resource> host_memory(const std::string& kind) const override {
    if (kind == "pinned-wc")
      return std::make_unique<fake_resource>(kind, xfer::mem::properties{.pinned = true, .write_combined = true},
                                             false);
    if (kind == "refusing") return std::make_unique<fake_resource>(kind, xfer::mem::properties{.pinned = true}, true);
    return backend::host_memory(kind);  // the core kinds, like every backend
  }
  std::unique_ptr<xfer::transfer> prepare(const xfer::point_spec&) override { throw xfer::skip_point("fake"); }
};

std::vector<xfer::backend_entry> real_backends() { return xfer::make_backends({.threads = 1, .kinds = {}}); }

std::vector<xfer::backend_entry> fake_backends() {
  std::vector<xfer::backend_entry> v;
  v.push_back({"offline", nullptr, "no driver loaded"});
  v.push_back({"fakegpu", std::make_unique<fake_gpu_backend>(), ""});
  return v;
}

study_config small_config() {
  study_config c;
  c.sizes = {4099, (64 << 10) + 5};  // odd sizes: the heads and tails of every copy get exercised
  c.runs = 3;
  c.threads = {1, 3};
  c.min_sample_s = 1e-5;
  c.wc_probe_bytes = 1 << 20;
  c.wc_probe_runs = 2;
  return c;
}

// One point per kind and size: a single-thread memcpy fill.
study_config fill_config(std::vector<std::uint64_t> sizes) {
  study_config c = small_config();
  c.ops = {op::fill};
  c.methods = {method::memcpy};
  c.threads = {1};
  c.sizes = std::move(sizes);
  return c;
}

TEST(CpuStudy, KindsResolveToAProviderOrASkipReason) {
  auto backends = real_backends();
  std::vector<std::string> names = default_kind_names();
  names.push_back("regular");
  names.push_back("pageable-unaligned");
  const auto slots = resolve_kinds(names, backends);
  ASSERT_EQ(slots.size(), names.size());
  std::map<std::string, const kind_info*> by_name;
  for (const auto& s : slots) {
    SCOPED_TRACE(s.info.name);
    EXPECT_EQ(s.info.available, s.resource != nullptr);
    if (s.info.available) {
      EXPECT_FALSE(s.info.provider.empty());
      EXPECT_TRUE(s.info.reason.empty());
    } else {
      EXPECT_TRUE(s.info.provider.empty());
      EXPECT_FALSE(s.info.reason.empty());
    }
    by_name[s.info.name] = &s.info;
  }
  EXPECT_EQ(slots[names.size() - 2].info.name, "pageable") << "'regular' is the seed's word for pageable";
  for (const char* core : {"pageable", "aligned", "huge", "pageable-unaligned"}) {
    ASSERT_TRUE(by_name.count(core));
    EXPECT_TRUE(by_name[core]->available) << core;
    EXPECT_EQ(by_name[core]->provider, "host") << core;
  }
  // Uncached memory is not for user programs on Linux: skipped, never faked.
  EXPECT_FALSE(by_name["uncached"]->available);
  EXPECT_NE(by_name["uncached"]->reason.find("uncached"), std::string::npos);
#if !XFER_HAVE_CUDA
  for (const char* gpu : {"pinned", "pinned-wc"}) {
    EXPECT_FALSE(by_name[gpu]->available) << gpu;
    // Backends absent for one reason are named together: "cuda-rt, cuda-drv: not compiled in (...)".
    EXPECT_NE(by_name[gpu]->reason.find("cuda-rt, cuda-drv: not compiled in"), std::string::npos)
        << by_name[gpu]->reason;
  }
#endif
}

TEST(CpuStudy, UnknownKindsAreSkippedWithEveryBackendsReason) {
  auto backends = fake_backends();
  const auto slots = resolve_kinds({"no-such-kind"}, backends);
  ASSERT_EQ(slots.size(), 1u);
  EXPECT_FALSE(slots[0].info.available);
  EXPECT_NE(slots[0].info.reason.find("offline: no driver loaded"), std::string::npos) << slots[0].info.reason;
  EXPECT_NE(slots[0].info.reason.find("fakegpu"), std::string::npos) << slots[0].info.reason;
}

TEST(CpuStudy, KnownNamesIncludeDefaultsCoreKindsAndBackendKinds) {
  auto backends = fake_backends();
  const auto known = known_kind_names(backends);
  for (const char* k :
       {"pageable", "aligned", "huge", "pinned", "pinned-wc", "uncached", "pageable-unaligned", "refusing"})
    EXPECT_NE(std::find(known.begin(), known.end(), k), known.end()) << k;
}

TEST(CpuStudy, PlanPutsTheBaselineFirstInEachGroupAndSkipsMeaninglessPairs) {
  auto backends = real_backends();
  auto slots = resolve_kinds({"aligned", "pageable"}, backends);
  study_config c;
  c.sizes = {4096};
  c.threads = {1, 2};
  const auto plan = plan_points(c, slots);
  // write: 2 methods, read: 3, fill: 2 -> 7 pairs x 2 thread counts x 2 kinds
  ASSERT_EQ(plan.size(), 7u * 2 * 2);
  for (std::size_t i = 0; i < plan.size(); i += 2) {
    EXPECT_EQ(slots[plan[i].kind_index].info.name, "pageable");
    EXPECT_EQ(slots[plan[i + 1].kind_index].info.name, "aligned");
    EXPECT_TRUE(applies(plan[i].operation, plan[i].how));
  }
}

// Every kind this machine has runs every op, method and thread count, and verifies its data.
TEST(CpuStudy, EveryAvailableKindRunsAndVerifiesUnavailableOnesSkip) {
  auto backends = real_backends();
  std::vector<std::string> names = default_kind_names();
  names.push_back("pageable-unaligned");
  auto slots = resolve_kinds(names, backends);
  const study_config c = small_config();
  std::size_t seen = 0;
  study_hooks hooks;
  hooks.on_point = [&](const cpu_point&) { ++seen; };
  const auto r = run_study(c, slots, hooks);
  EXPECT_FALSE(r.interrupted);
  EXPECT_EQ(seen, r.points.size());
  EXPECT_EQ(r.points.size(), plan_points(c, slots).size());
  std::map<std::string, bool> available;
  for (const auto& k : r.kinds) available[k.name] = k.available;
  for (const auto& p : r.points) {
    SCOPED_TRACE(testing::Message() << p.kind << " " << to_string(p.operation) << " " << to_string(p.how) << " x"
                                    << p.threads << " " << p.bytes << ": " << p.reason);
    if (!available[p.kind]) {
      EXPECT_EQ(p.status, point_status::skipped);
      EXPECT_FALSE(p.reason.empty());
      continue;
    }
    ASSERT_EQ(p.status, point_status::ok);
    EXPECT_TRUE(p.verified);
    EXPECT_EQ(p.samples_s.size(), c.runs);
    EXPECT_GE(p.reps_per_sample, 1u);
    EXPECT_GE(p.alloc_s, 0);
    EXPECT_GT(p.first_s, 0);
    EXPECT_EQ(p.touch_s >= 0, p.operation == op::read) << "only reads fill the fresh buffer first";
    EXPECT_GT(p.gbps(), 0);
    EXPECT_FALSE(p.impl.empty());
    if (p.kind == baseline_kind) {
      EXPECT_FALSE(p.vs_baseline.has_value());
    } else {
      EXPECT_TRUE(p.vs_baseline.has_value()) << "every kind is compared with the baseline measured before it";
    }
  }
#if !XFER_HAVE_CUDA
  // pinned-wc is selected but nothing here provides it: the check says so instead of guessing.
  ASSERT_EQ(r.write_combining.size(), 1u);
  EXPECT_FALSE(r.write_combining[0].checked);
  EXPECT_NE(r.write_combining[0].text.find("not checked"), std::string::npos) << r.write_combining[0].text;
#endif
}

TEST(CpuStudy, KindsFromAnotherBackendRecordItAndGetTheWriteCombiningCheck) {
  auto backends = fake_backends();
  auto slots = resolve_kinds({"pageable", "pinned-wc"}, backends);
  ASSERT_TRUE(slots[1].info.available) << slots[1].info.reason;
  EXPECT_EQ(slots[1].info.provider, "fakegpu");
  EXPECT_EQ(slots[0].info.provider, "fakegpu") << "the first available backend provides the core kinds too";
  study_config c = small_config();
  c.ops = {op::read};
  c.threads = {1};
  const auto r = run_study(c, slots);
  for (const auto& p : r.points) {
    EXPECT_EQ(p.status, point_status::ok) << p.reason;
    if (p.kind == "pinned-wc") {
      EXPECT_EQ(p.provider, "fakegpu");
    }
  }
  // The fake "write-combined" memory is cached: the check runs and states a
  // verdict either way (which one is a matter of speed, not asserted here).
  ASSERT_EQ(r.write_combining.size(), 1u);
  const auto& w = r.write_combining[0];
  EXPECT_TRUE(w.checked) << w.text;
  EXPECT_EQ(w.kind, "pinned-wc");
  EXPECT_GT(w.regular_read_gbps, 0);
  EXPECT_GT(w.wc_read_gbps, 0);
  EXPECT_EQ(w.text, w.verdict.text);
}

TEST(CpuStudy, ARefusedAllocationSkipsThePointWithTheCause) {
  auto backends = fake_backends();
  auto slots = resolve_kinds({"pageable", "refusing"}, backends);
  const study_config c = fill_config({4096});
  const auto r = run_study(c, slots);
  ASSERT_EQ(r.points.size(), 2u);
  EXPECT_EQ(r.points[0].status, point_status::ok);
  EXPECT_EQ(r.points[1].status, point_status::skipped);
  EXPECT_NE(r.points[1].reason.find("the fake driver refuses"), std::string::npos) << r.points[1].reason;
}

TEST(CpuStudy, AStopRequestEndsTheRunWithWhatWasCompleted) {
  auto backends = real_backends();
  auto slots = resolve_kinds({"pageable", "aligned"}, backends);
  std::atomic<bool> stop{false};
  study_config c = small_config();
  std::size_t completed = 0;
  study_hooks hooks;
  hooks.stop = &stop;
  hooks.on_point = [&](const cpu_point&) {
    if (++completed == 3) stop = true;
  };
  const auto r = run_study(c, slots, hooks);
  EXPECT_TRUE(r.interrupted);
  EXPECT_EQ(r.points.size(), 3u);
  EXPECT_TRUE(r.write_combining.empty());
}

// A point the watchdog leaves behind is failed with its reason and the run
// goes on; where its kind came from a device's API (the thread may be stuck in
// the driver) that provider's later kinds of that sort are skipped, its
// write-combining check too, while plain memory it hands out still runs.
TEST(CpuStudy, APointLeftBehindFailsAndOnlyItsDriversLaterPointsAreSkipped) {
  auto backends = fake_backends();
  auto slots = resolve_kinds({"pageable", "pinned-wc"}, backends);
  const study_config c = fill_config({4096, 8192});
  xfer::test::recording_context ctx;
  ctx.leave = {1};  // pinned-wc at 4K
  study_hooks hooks;
  hooks.watch = &ctx;
  const auto r = run_study(c, slots, hooks);
  EXPECT_FALSE(r.interrupted);
  ASSERT_EQ(r.points.size(), 4u);
  EXPECT_EQ(r.points[0].status, point_status::ok) << r.points[0].reason;
  EXPECT_EQ(r.points[1].status, point_status::failed);
  EXPECT_EQ(r.points[1].reason, ctx.left_reason);
  EXPECT_TRUE(r.points[1].samples_s.empty());
  EXPECT_EQ(r.points[2].status, point_status::ok) << "pageable is plain memory, though fakegpu hands it out";
  const std::string stuck = "not run: fakegpu is still stuck in an earlier point (pinned-wc fill memcpy threads 1 4K)";
  EXPECT_EQ(r.points[3].status, point_status::skipped);
  EXPECT_EQ(r.points[3].reason, stuck);
  ASSERT_EQ(r.write_combining.size(), 1u);
  EXPECT_FALSE(r.write_combining[0].checked);
  EXPECT_EQ(r.write_combining[0].text, "write combining not checked for pinned-wc: " + stuck);
  EXPECT_EQ(ctx.watched_points, 3u);

  // Left behind in plain memory (the baseline at 4K): every later point and the check run.
  xfer::test::recording_context plain;
  plain.leave = {0};
  hooks.watch = &plain;
  const auto p = run_study(c, slots, hooks);
  EXPECT_EQ(p.points[0].status, point_status::failed);
  for (std::size_t i = 1; i < p.points.size(); ++i) EXPECT_EQ(p.points[i].status, point_status::ok) << p.points[i].reason;
  ASSERT_EQ(p.write_combining.size(), 1u);
  EXPECT_TRUE(p.write_combining[0].checked) << p.write_combining[0].text;

  // Left behind by a stop request: the points before it stand, nothing after, no check.
  xfer::test::recording_context stopped;
  stopped.leave = {1};
  stopped.left_reason.clear();
  hooks.watch = &stopped;
  const auto s = run_study(c, slots, hooks);
  EXPECT_TRUE(s.interrupted);
  EXPECT_EQ(s.points.size(), 1u);
  EXPECT_TRUE(s.write_combining.empty());
}

// Through the session, as `xferbench cpu --json` writes it.
TEST(CpuStudy, ResultFileFollowsTheContract) {
  auto backends = real_backends();
  study_config c = small_config();
  c.sizes = {8192};
  c.threads = {1};
  cpu_study study(c, {"pageable", "aligned", "uncached"}, backends);
  const auto file = std::filesystem::temp_directory_path() / ("xfer_cpu_study_" + std::to_string(::getpid()) + ".json");
  xfer::run_context ctx;
  ctx.tool_version = "test";
  ctx.config = xfer::value::object{{"argv", std::vector<std::string>{"xferbench", "cpu"}}};
  xfer::session s(ctx, {.json = file.string(), .csv = "", .progress = false});
  const auto outcome = s.run(study);
  EXPECT_EQ(s.finish(outcome), xfer::exit_ok);
  std::ifstream in(file);
  const auto j = nlohmann::json::parse(in);
  std::filesystem::remove(file);
  EXPECT_EQ(j["schema"], "xferbench/cpu/v2");
  EXPECT_TRUE(j.contains("system"));
  EXPECT_EQ(j["tool_version"], XFER_VERSION) << "what cpu/v1 files always had";
  EXPECT_EQ(j["config"]["argv"][1], "cpu");
  EXPECT_EQ(j["config"]["kinds"], nlohmann::json({"pageable", "aligned", "uncached"}));
  EXPECT_EQ(j["config"]["runs"], c.runs);
  EXPECT_EQ(j["conventions"]["baseline"], "pageable");
  EXPECT_FALSE(j["interrupted"].get<bool>());
  ASSERT_EQ(j["kinds"].size(), 3u);
  EXPECT_EQ(j["kinds"][2]["status"], "skipped");
  EXPECT_FALSE(j["kinds"][2]["reason"].get<std::string>().empty());
  ASSERT_EQ(j["results"].size(), plan_points(c, resolve_kinds({"pageable", "aligned", "uncached"}, backends)).size());
  for (const auto& p : j["results"]) {
    for (const char* k : {"backend", "host_memory", "op", "method", "threads", "bytes", "status", "reason", "timer"})
      EXPECT_TRUE(p.contains(k)) << k;
    if (p["status"] == "ok") {
      EXPECT_EQ(p["samples_s"].size(), c.runs);
      EXPECT_DOUBLE_EQ(p["gbps"].get<double>(), 8192 / p["median_s"].get<double>() / 1e9);
      EXPECT_EQ(p["gbps_2x"].is_null(), p["op"] == "fill");
      EXPECT_TRUE(p["verified"].get<bool>());
      EXPECT_EQ(p["break_even"].is_null(), p["host_memory"] == "pageable");
    } else {
      EXPECT_EQ(p["host_memory"], "uncached");
      EXPECT_FALSE(p["reason"].get<std::string>().empty());
    }
  }
}

TEST(CpuStudy, TableShowsSkippedKindsOnceAndEveryMeasuredRow) {
  auto backends = real_backends();
  auto slots = resolve_kinds({"pageable", "uncached"}, backends);
  study_config c = small_config();
  c.sizes = {4096};
  c.threads = {1};
  c.ops = {op::write};
  c.methods = {method::memcpy};
  std::ostringstream out;
  cpu_table table(out);
  std::vector<kind_info> infos;
  for (const auto& s : slots) infos.push_back(s.info);
  table.header(infos);
  study_hooks hooks;
  hooks.on_point = [&](const cpu_point& p) { table.row(p); };
  const auto r = run_study(c, slots, hooks);
  table.footer(r);
  const std::string text = out.str();
  EXPECT_NE(text.find("2N/t"), std::string::npos) << "the bandwidth convention is stated";
  EXPECT_NE(text.find("uncached   skipped: Linux"), std::string::npos) << text;
  EXPECT_EQ(text.find("uncached", text.find("break-even\n")), std::string::npos)
      << "no per-point rows for a skipped kind\n"
      << text;
  EXPECT_NE(text.find("baseline"), std::string::npos) << text;
  EXPECT_NE(text.find("1 ok, 1 skipped, 0 failed"), std::string::npos) << text;
  EXPECT_NE(text.find("write combining: not checked"), std::string::npos) << text;
}

TEST(CpuStudy, FormatMs) {
  EXPECT_EQ(format_ms(-1), "-");
  EXPECT_EQ(format_ms(0.1234), "123.4");
  EXPECT_EQ(format_ms(0.0051234), "5.123");
  EXPECT_EQ(format_ms(0.00001234), "0.0123");
  EXPECT_EQ(format_ms(0.0000001234), "0.000123");
  EXPECT_EQ(format_ms(0.000999), "0.999");
  EXPECT_EQ(format_ms(0), "0");
}

}  // namespace
