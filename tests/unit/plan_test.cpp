// The plan: the selection is checked once, in core, and what cannot run here
// is a skipped point with its reason before any backend sees it.
#include <atomic>
#include <cmath>
#include <gtest/gtest.h>
#include <set>
#include <stdexcept>
#include <xfer/core/errors.hpp>
#include <xfer/core/plan.hpp>
#include <xfer/core/reporter.hpp>
#include <xfer/core/runner.hpp>

#include "fake_backend.hpp"

using namespace xfer;

namespace {

// Two families as the registry would list them: "fake:a" and "fake:b" are one
// family, "other" is unavailable on this machine.
std::vector<backend_entry> entries() {
  std::vector<backend_entry> out;
  for (const char* name : {"fake:a", "fake:b"}) {
    auto b = std::make_unique<test::fake_backend>();
    b->backend_name = name;
    out.push_back({name, std::move(b), ""});
  }
  out.push_back({"other", nullptr, "no driver on this machine"});
  return out;
}

struct collect final : reporter {
  void report_context(const run_context&) override {}
  void report(const point_result& r) override { results.push_back(r); }
  void finalize(bool) override {}
  std::vector<point_result> results;
};

std::size_t skipped(const backend_plan& b) {
  std::size_t n = 0;
  for (const auto& p : b.points) n += !p.skip_reason.empty();
  return n;
}

}  // namespace

TEST(SelectBackends, NoneNamedIsEveryAvailableOneInRegistryOrder) {
  auto e = entries();
  const auto chosen = select_backends(e, {});
  ASSERT_EQ(chosen.size(), 2u);
  EXPECT_EQ(chosen[0]->name(), "fake:a");
  EXPECT_EQ(chosen[1]->name(), "fake:b");
}

TEST(SelectBackends, AFamilySelectsEachMemberOnceWhateverTheOrderNamed) {
  auto e = entries();
  const auto chosen = select_backends(e, {"fake:b", "fake", "fake:b"});
  ASSERT_EQ(chosen.size(), 2u);
  EXPECT_EQ(chosen[0]->name(), "fake:a");
  EXPECT_EQ(chosen[1]->name(), "fake:b");
}

TEST(SelectBackends, UnknownIsUsageErrorNamingTheKnownOnes) {
  auto e = entries();
  try {
    select_backends(e, {"nosuch"});
    FAIL() << "accepted an unknown backend";
  } catch (const usage_error& err) {
    EXPECT_NE(std::string(err.what()).find("known: fake:a, fake:b, other"), std::string::npos) << err.what();
  }
}

TEST(SelectBackends, UnavailableIsARuntimeFailureWithTheReason) {
  auto e = entries();
  try {
    select_backends(e, {"other"});
    FAIL() << "selected an unavailable backend";
  } catch (const usage_error&) {
    FAIL() << "a missing driver is not bad input";
  } catch (const std::runtime_error& err) {
    EXPECT_NE(std::string(err.what()).find("no driver on this machine"), std::string::npos) << err.what();
  }
}

TEST(MakePlan, AnUnavailableKindIsPlannedSkippedWithItsReasonAndNeverPrepared) {
  auto e = entries();
  selection s;
  s.backends = {"fake:a"};
  s.routes = {"copy-sync"};
  s.directions = {direction::h2d};
  s.sizes = {64};
  const plan p = make_plan(e, s);
  ASSERT_EQ(p.backends.size(), 1u);
  // 2 devices x {pageable, pinned}: pinned is unavailable ("no driver").
  ASSERT_EQ(p.size(), 4u);
  EXPECT_EQ(skipped(p.backends[0]), 2u);
  for (const auto& pt : p.backends[0].points)
    EXPECT_EQ(pt.skip_reason, pt.spec.host_memory == "pinned" ? "no driver" : "");

  auto& fake = static_cast<test::fake_backend&>(*p.backends[0].impl);
  int prepared = 0;
  fake.make = [&](const point_spec& spec) {
    ++prepared;
    EXPECT_EQ(spec.host_memory, "pageable");
    return std::make_unique<test::fake_transfer>();
  };
  measure_options o;
  o.max_time_s = 0.001;
  o.watchdog_s = 0;
  collect out;
  std::atomic<bool> stop{false};
  const auto outcome = run_sweep(fake, p.backends[0].points, o, out, stop);
  EXPECT_EQ(prepared, 2);
  EXPECT_EQ(outcome.skipped, 2u);
  ASSERT_EQ(out.results.size(), 4u);
  EXPECT_EQ(out.results[1].status, point_status::skipped);
  EXPECT_EQ(out.results[1].reason, "no driver");
  EXPECT_EQ(out.results[1].device_name, "dev0");  // a skipped point still says where
  // A device point records where its thread ran: the fake device has no PCI
  // address, so nowhere in particular, and it says so.
  ASSERT_TRUE(out.results[0].placed);
  EXPECT_FALSE(out.results[0].placed->applied);
  EXPECT_NE(out.results[0].placed->note.find("no PCI address"), std::string::npos);
  EXPECT_FALSE(out.results[1].placed);  // never run
}

TEST(MakePlan, AKindOneDeviceLacksIsSkippedOnThatDeviceOnly) {
  auto e = entries();
  static_cast<test::fake_backend&>(*e[0].impl).device_list[1].unavailable_kinds["pageable"] = "dev1 cannot map it";
  selection s;
  s.backends = {"fake:a"};
  s.routes = {"kernel-host"};
  s.host_memory = {"pageable"};
  s.directions = {direction::d2h};
  s.sizes = {64};
  const plan p = make_plan(e, s);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p.backends[0].points[0].skip_reason, "");
  EXPECT_EQ(p.backends[0].points[1].spec.device, 1);
  EXPECT_EQ(p.backends[0].points[1].skip_reason, "dev1 cannot map it");
}

TEST(MakePlan, ASizeAboveTheDevicesLargestAllocationIsSkippedWithTheNumbers) {
  auto e = entries();
  static_cast<test::fake_backend&>(*e[0].impl).device_list[0].max_alloc_bytes = 1000;
  selection s;
  s.backends = {"fake:a"};
  s.devices = {0};
  s.routes = {"copy-sync"};
  s.directions = {direction::d2d};
  s.sizes = {1000, 1001};
  const plan p = make_plan(e, s);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p.backends[0].points[0].skip_reason, "");
  const auto& why = p.backends[0].points[1].skip_reason;
  EXPECT_NE(why.find("1001 B"), std::string::npos) << why;
  EXPECT_NE(why.find("1000 B"), std::string::npos) << why;
}

TEST(MakePlan, BadSelectionsAreOneUsageError) {
  auto e = entries();
  selection s;
  s.sizes = {64};
  s.routes = {"nosuch"};
  EXPECT_THROW(make_plan(e, s), usage_error);
  s.routes = {};
  s.host_memory = {"nosuch"};
  EXPECT_THROW(make_plan(e, s), usage_error);
  s.host_memory = {};
  s.routes = {"kernel-host"};
  s.directions = {direction::d2d};  // the kernel route moves none
  EXPECT_THROW(make_plan(e, s), usage_error);
  s.routes = {};
  s.directions = {};
  s.sizes = {};
  EXPECT_THROW(make_plan(e, s), usage_error);
}

TEST(MakePlan, UnavailableBackendsAreListedWithTheirReason) {
  auto e = entries();
  selection s;
  s.sizes = {64};
  s.routes = {"kernel-host"};
  const plan p = make_plan(e, s);
  EXPECT_EQ(p.backends.size(), 2u);
  ASSERT_EQ(p.unavailable.size(), 1u);
  EXPECT_EQ(p.unavailable[0].first, "other");
  EXPECT_EQ(p.unavailable[0].second, "no driver on this machine");
}

namespace {

// The host reference, a CPU-only stand-in ("fake:cpu") and, optionally, an
// accelerator ("fake:gpu"), as a default run would find them.
std::vector<backend_entry> with_stand_in(bool accelerator) {
  std::vector<backend_entry> out;
  auto add = [&](const char* name, const char* type) {
    auto b = std::make_unique<test::fake_backend>();
    b->backend_name = name;
    for (auto& d : b->device_list) d.type = type;
    out.push_back({name, std::move(b), ""});
  };
  add("host", "cpu");
  add("fake:cpu", "cpu");
  if (accelerator) add("fake:gpu", "gpu");
  return out;
}

std::vector<std::string> planned(const plan& p) {
  std::vector<std::string> names;
  for (const auto& b : p.backends) names.push_back(b.impl->name());
  return names;
}

}  // namespace

TEST(MakePlan, TheDefaultRunLeavesACpuStandInOutBesideAnAcceleratorAndSaysWhy) {
  auto e = with_stand_in(true);
  selection s;
  s.sizes = {64};
  const plan p = make_plan(e, s);
  EXPECT_EQ(planned(p), (std::vector<std::string>{"fake:gpu"}));
  ASSERT_EQ(p.left_out.size(), 2u);
  EXPECT_EQ(p.left_out[0].first, "host");  // the CPU reference too: nothing it shows headlines beside a GPU
  EXPECT_EQ(p.left_out[1].first, "fake:cpu");
  EXPECT_NE(p.left_out[1].second.find("--backend fake:cpu"), std::string::npos) << p.left_out[1].second;
}

TEST(MakePlan, WithoutAnAcceleratorOrWhenNamedTheCpuStandInRuns) {
  auto e = with_stand_in(false);
  selection s;
  s.sizes = {64};
  const plan alone = make_plan(e, s);
  EXPECT_EQ(planned(alone), (std::vector<std::string>{"host", "fake:cpu"}));
  EXPECT_TRUE(alone.left_out.empty());

  auto e2 = with_stand_in(true);
  s.backends = {"fake"};
  const plan named = make_plan(e2, s);
  EXPECT_EQ(planned(named), (std::vector<std::string>{"fake:cpu", "fake:gpu"}));
  EXPECT_TRUE(named.left_out.empty());
}

namespace {

// A backend with an overview kind of its own ("pinned") and one the overview
// leaves out ("huge"), and a route (kernel-host) that cannot address pageable memory.
struct paired_backend final : backend {
  std::string name() const override { return "paired"; }
  std::string description() const override { return "test double"; }
  std::vector<device_info> devices() const override {
    return {{.index = 0, .name = "dev0", .type = "gpu", .memory_bytes = 0, .max_alloc_bytes = 0, .details = {},
             .unavailable_kinds = {}}};
  }
  std::vector<route_info> routes() const override {
    using enum direction;
    return {{route_kind::copy_async, "", {h2d, d2h, bidir, d2d}, true},
            {route_kind::kernel_host, "", {h2d, d2h}, true},
            {route_kind::kernel_device, "", {d2d}, false}};
  }
  std::vector<kind_support> host_memory_kinds() const override {
    std::vector<kind_support> k{{"pageable", true, "", ""}, {"huge", true, "", ""}, {"pinned", true, "", ""}};
    mark_overview(k, {"pinned"});
    return k;
  }
  std::string pairing_gap(route_kind r, const std::string& kind) const override {
    return r == route_kind::kernel_host && kind != "pinned" ? "a kernel cannot reach " + kind + " memory" : "";
  }
  std::unique_ptr<transfer> prepare(const point_spec&) override { return std::make_unique<test::fake_transfer>(); }
};

std::vector<backend_entry> paired() {
  std::vector<backend_entry> e;
  e.push_back({"paired", std::make_unique<paired_backend>(), ""});
  return e;
}

std::set<std::string> shapes(const plan& p) {
  std::set<std::string> out;
  for (const auto& pp : p.backends[0].points)
    out.insert(std::string(to_string(pp.spec.route)) + " " + to_string(pp.spec.dir) + " " + pp.spec.host_memory +
               (pp.skip_reason.empty() ? "" : " skipped"));
  return out;
}

}  // namespace

TEST(MakePlan, TheOverviewTakesEachBackendsOverviewKindsInBothDirectionsAndOnlyPairsThatExist) {
  auto e = paired();
  selection s;
  s.sizes = {64};
  s.full = false;
  EXPECT_EQ(shapes(make_plan(e, s)),
            (std::set<std::string>{"copy-async h2d pageable", "copy-async h2d pinned", "copy-async d2h pageable",
                                   "copy-async d2h pinned", "kernel-host h2d pinned", "kernel-host d2h pinned"}));
}

TEST(MakePlan, TheFullMatrixHasEveryKindAndDirectionButStillNoPairingThatCannotExist) {
  auto e = paired();
  selection s;
  s.sizes = {64};
  const auto got = shapes(make_plan(e, s));
  EXPECT_TRUE(got.count("copy-async bidir huge"));
  EXPECT_TRUE(got.count("kernel-device d2d none"));
  EXPECT_TRUE(got.count("copy-async d2d none"));
  for (const auto& g : got) EXPECT_EQ(g.find("kernel-host h2d pageable"), std::string::npos) << g;
  EXPECT_EQ(got.size(), 3u * 3u + 2u + 2u);  // copy-async h2d/d2h/bidir x 3 kinds, its d2d, kernel-host, kernel-device
}

TEST(MakePlan, AnOverviewRouteThatMovesNeitherDirectionKeepsItsOwn) {
  auto e = paired();
  selection s;
  s.sizes = {64};
  s.full = false;
  s.routes = {"kernel-device"};
  EXPECT_EQ(shapes(make_plan(e, s)), (std::set<std::string>{"kernel-device d2d none"}));
}

TEST(MakePlan, APairingNamedOnBothAxesIsPlannedSkippedWithTheBackendsReason) {
  auto e = paired();
  selection s;
  s.sizes = {64};
  s.routes = {"kernel-host"};
  s.host_memory = {"pageable"};
  s.directions = {direction::h2d};
  const plan p = make_plan(e, s);
  ASSERT_EQ(p.backends.at(0).points.size(), 1u);
  EXPECT_EQ(p.backends[0].points[0].skip_reason, "a kernel cannot reach pageable memory");
  EXPECT_EQ(p.runnable(), 0u);
  // One axis named: the pairings that cannot exist are left out.
  s.host_memory.clear();
  EXPECT_EQ(shapes(make_plan(e, s)), (std::set<std::string>{"kernel-host h2d pinned"}));
  // Nothing left at all is bad input.
  s.host_memory = {"huge", "pageable"};
  s.routes = {"copy-async", "kernel-host"};
  s.backends = {};
  EXPECT_EQ(make_plan(e, s).runnable(), 2u);  // copy-async h2d x 2 kinds; kernel-host's two skipped
}

// The input checks a library caller needs as much as the CLI does: each a
// usage_error naming the option and the value, before anything runs.
TEST(PlanChecks, SizesMustFitInThisMachinesMemory) {
  EXPECT_NO_THROW(check_sizes_fit({4096, 1 << 20}, 1 << 20));
  EXPECT_NO_THROW(check_sizes_fit({std::uint64_t{1} << 50}, 0)) << "memory unknown: nothing to check";
  try {
    check_sizes_fit({4096, 2 << 20}, 1 << 20);
    ADD_FAILURE() << "no usage_error";
  } catch (const usage_error& e) {
    EXPECT_STREQ(e.what(), "size 2M (2097152 B) is larger than this machine's memory (1048576 B)");
  }
}

TEST(PlanChecks, KindOptionsAreCheckedByTheKindsThemselves) {
  const auto k = parse_kind_options("2M", 100);
  EXPECT_EQ(k.alignment, std::size_t{2} << 20);
  EXPECT_EQ(k.unaligned_offset, 100u);
  try {
    parse_kind_options("3000", 16);
    ADD_FAILURE() << "no usage_error";
  } catch (const usage_error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("--alignment 3000: ", 0), 0u) << e.what();
    EXPECT_NE(std::string(e.what()).find("power of two"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_kind_options("4K", 4096), usage_error) << "an offset of a whole page is no offset";
  EXPECT_THROW(parse_kind_options("x", 16), usage_error);
}

TEST(PlanChecks, OneOptionSetsTheSamplingTimeAndTheOverviewRunsOnABudget) {
  EXPECT_EQ(run_budget_for(std::nullopt, false, false, true), overview_budget_s);
  EXPECT_EQ(run_budget_for(std::nullopt, true, false, true), 0) << "--max-time keeps per-point sampling";
  EXPECT_EQ(run_budget_for(std::nullopt, false, false, false), 0) << "not the overview: --max-time per point";
  EXPECT_EQ(run_budget_for(30.0, false, false, false), 30.0);
  EXPECT_THROW(run_budget_for(30.0, true, false, false), usage_error);
  EXPECT_THROW(run_budget_for(30.0, false, true, false), usage_error);
  EXPECT_THROW(run_budget_for(0.0, false, false, true), usage_error);
  EXPECT_THROW(run_budget_for(86401.0, false, false, true), usage_error);
  EXPECT_THROW(run_budget_for(std::nan(""), false, false, true), usage_error);
}

TEST(PlanChecks, ABudgetMustGiveEveryPointItsShare) {
  auto e = entries();
  selection s;
  s.backends = {"fake:a"};
  s.sizes = {4096};
  const plan p = make_plan(e, s);
  ASSERT_GT(p.runnable(), 0u);
  measure_options m;
  m.run_budget_s = 0;
  EXPECT_NO_THROW(check_budget_fits(p, m)) << "no budget: nothing to check";
  m.run_budget_s = run_budget::smallest_for(p.runnable(), m.warmup_s);
  EXPECT_NO_THROW(check_budget_fits(p, m));
  m.run_budget_s /= 2;
  try {
    check_budget_fits(p, m);
    ADD_FAILURE() << "no usage_error";
  } catch (const usage_error& err) {
    EXPECT_NE(std::string(err.what()).find("too small for the " + std::to_string(p.runnable()) + " points"),
              std::string::npos)
        << err.what();
  }
}

// app vadd's --device: the host's vadd took any index and ran device 0.
TEST(FindDevice, ADeviceTheBackendLacksIsUsageErrorNamingIt) {
  test::fake_backend b;
  b.backend_name = "host";
  b.device_list.resize(1);
  EXPECT_EQ(find_device(b, 0).index, 0);
  try {
    find_device(b, 1);
    ADD_FAILURE() << "no usage_error";
  } catch (const usage_error& err) {
    EXPECT_STREQ(err.what(), "--device 1: backend host has no device 1 (it has 1)");
  }
  EXPECT_THROW(find_device(b, -1), usage_error);
}

// --host-devices shapes the host backend alone: beside -b naming none, it did nothing.
TEST(CheckHostDevices, MoreThanOneNeedsTheHostBackendSelected) {
  EXPECT_NO_THROW(check_host_devices(1, {"cuda-rt"})) << "the default: nothing asked";
  EXPECT_NO_THROW(check_host_devices(2, {})) << "every backend, the host among them";
  EXPECT_NO_THROW(check_host_devices(2, {"cuda-rt", "host"}));
  try {
    check_host_devices(2, {"opencl", "cuda-rt"});
    ADD_FAILURE() << "no usage_error";
  } catch (const usage_error& err) {
    EXPECT_STREQ(err.what(), "--host-devices 2 shapes the host backend, which -b opencl,cuda-rt does not select");
  }
}
