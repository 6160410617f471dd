// Routes are an open vocabulary: a backend declares its own, and core plans,
// runs and reports them by name without ever having heard of them.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <stdexcept>
#include <unordered_set>
#include <xfer/core/plan.hpp>
#include <xfer/core/reporter.hpp>
#include <xfer/core/result.hpp>
#include <xfer/core/runner.hpp>

#include "fake_backend.hpp"
#include "result_json.hpp"

using namespace xfer;

namespace {

// Declared here only, as a backend declares its own in its folder.
const route_kind warp_drive = route_kind::declare("warp-drive", route_family::kernel_host);

// A backend whose one route is the test's own.
struct warp_backend final : backend {
  int prepared = 0;
  std::string name() const override { return "warp"; }
  std::string description() const override { return "test double with a route of its own"; }
  std::vector<device_info> devices() const override { return {{.index = 0, .name = "dev0", .type = "gpu", .memory_bytes = 0, .max_alloc_bytes = 0, .details = {}, .unavailable_kinds = {}}}; }
  std::vector<route_info> routes() const override {
    return {{warp_drive, "moves bytes by a route core never heard of", {direction::h2d}, true}};
  }
  std::vector<kind_support> host_memory_kinds() const override { return {{"pageable", true, "", ""}}; }
  std::unique_ptr<transfer> prepare(const point_spec& p) override {
    ++prepared;
    EXPECT_EQ(p.route, warp_drive);
    return std::make_unique<test::fake_transfer>();
  }
};

struct collect final : reporter {
  std::vector<point_result> results;
  void report_context(const run_context&) override {}
  void report(const point_result& r) override { results.push_back(r); }
  void finalize(bool) override {}
};

}  // namespace

TEST(RouteKind, ARouteOnlyATestBackendDeclaresIsParsedPlannedRunAndReportedByItsName) {
  ASSERT_EQ(parse_route_kind("warp-drive"), warp_drive);
  EXPECT_EQ(warp_drive.family(), route_family::kernel_host);

  std::vector<backend_entry> e;
  e.push_back({"warp", std::make_unique<warp_backend>(), ""});
  selection s;
  s.routes = {"warp-drive"};
  s.sizes = {4096};
  const plan p = make_plan(e, s);
  ASSERT_EQ(p.size(), 1u);
  const auto& point = p.backends[0].points[0];
  EXPECT_EQ(point.spec.route, warp_drive);
  EXPECT_EQ(point.skip_reason, "");

  auto& b = static_cast<warp_backend&>(*p.backends[0].impl);
  measure_options o;
  o.max_time_s = 0.001;
  o.watchdog_s = 0;
  collect out;
  std::atomic<bool> stop{false};
  run_sweep(b, p.backends[0].points, o, out, stop);
  EXPECT_EQ(b.prepared, 1);
  ASSERT_EQ(out.results.size(), 1u);
  const point_result& r = out.results[0];
  EXPECT_EQ(r.status, point_status::ok) << r.reason;

  // Reported as spelled: JSON (and read back to the same route), CSV, console.
  nlohmann::json j = r;
  EXPECT_EQ(j.at("route"), "warp-drive");
  EXPECT_EQ(j.get<point_result>().spec.route, warp_drive);
  EXPECT_NE(csv_reporter::row(r).find(",warp-drive,h2d,pageable,4096,ok,"), std::string::npos) << csv_reporter::row(r);
  std::ostringstream console;
  console_reporter c(console);
  c.report(r);
  c.finalize(false);
  EXPECT_NE(console.str().find("warp-drive"), std::string::npos) << console.str();
}

TEST(RouteKind, AnUnknownRouteOnTheCommandLineIsOneUsageErrorNamingTheKnownOnes) {
  std::vector<backend_entry> e;
  e.push_back({"warp", std::make_unique<warp_backend>(), ""});
  selection s;
  s.routes = {"teleport"};
  s.sizes = {4096};
  try {
    make_plan(e, s);
    FAIL() << "no usage_error";
  } catch (const usage_error& err) {
    EXPECT_STREQ(err.what(), "unknown route 'teleport' (known: warp-drive)");
  }
  EXPECT_FALSE(parse_route_kind("teleport"));
}

TEST(RouteKind, TheFamilyCarriesCoresRules) {
  // A kernel-host route faster than the link never crossed it: skipped, by
  // its family, whatever its name.
  point_result r;
  r.spec = {"warp", 0, warp_drive, direction::h2d, "pageable", 1 << 20};
  r.status = point_status::ok;
  r.bytes_per_rep = 1 << 20;
  r.samples_s = {1e-6};
  r.stats = summarize(r.samples_s);
  flag_link_limit(r, 25.0);
  EXPECT_EQ(r.status, point_status::skipped);
  EXPECT_EQ(r.reason.rfind("warp-drive measured", 0), 0u) << r.reason;
  r.spec.route = route_kind::copy_sync;
  r.status = point_status::ok;
  flag_link_limit(r, 25.0);
  EXPECT_EQ(r.status, point_status::ok);
  EXPECT_TRUE(r.above_link_limit);
}

TEST(RouteKind, DeclaringIsIdempotentAndOneNameHasOneFamily) {
  EXPECT_EQ(route_kind::declare("warp-drive", route_family::kernel_host), warp_drive);
  EXPECT_THROW(route_kind::declare("warp-drive", route_family::copy), std::logic_error);
  // Core's shared routes keep their spelling and family.
  EXPECT_STREQ(to_string(route_kind::copy_sync), "copy-sync");
  EXPECT_EQ(parse_route_kind("copy-async"), route_kind::copy_async);
  EXPECT_EQ(route_kind::peer.family(), route_family::peer);
  EXPECT_EQ(route_kind{}, route_kind::memcpy);
  // A name read from a file that nothing declared: a route of family other,
  // which a later declaration settles.
  const route_kind later = route_kind::named("from-another-build");
  EXPECT_EQ(later.family(), route_family::other);
  EXPECT_EQ(route_kind::declare("from-another-build", route_family::latency), later);
  EXPECT_EQ(later.family(), route_family::latency);
}

TEST(RouteKind, IsAKeyOfOrderedAndHashedContainers) {
  std::set<route_kind> ordered{warp_drive, route_kind::copy_sync, warp_drive};
  std::unordered_set<route_kind> hashed{warp_drive, route_kind::copy_sync, warp_drive};
  std::map<route_kind, int> counts;
  ++counts[warp_drive];
  ++counts[warp_drive];
  EXPECT_EQ(ordered.size(), 2u);
  EXPECT_EQ(hashed.size(), 2u);
  EXPECT_EQ(counts.at(warp_drive), 2);
  EXPECT_NE(warp_drive, route_kind::copy_sync);
}
