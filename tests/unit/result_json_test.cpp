#include <cmath>
#include <gtest/gtest.h>
#include <xfer/core/result.hpp>

#include "result_json.hpp"

using namespace xfer;

TEST(ResultJson, PointRoundTrips) {
  point_result r;
  r.spec = {"cuda-rt", 1, route_kind::copy_async, direction::bidir, "pinned", 1 << 20};
  r.device_name = "GPU";
  r.device_type = "gpu";
  r.device_pci = "0000:17:00.0";
  r.timer = clock_kind::event;
  r.bytes_per_rep = 2 << 20;
  r.reps_per_sample = 3;
  r.samples_s = {1e-4, 2e-4};
  r.wall_samples_s = {1.5e-4, 2.5e-4};
  r.part_samples_s = {{"h2d", {1e-4, 1e-4}}, {"d2h", {2e-4, 2e-4}}};
  r.stats = summarize(r.samples_s);
  r.wall_stats = summarize(r.wall_samples_s);
  r.ci_rel = std::numeric_limits<double>::infinity();
  r.converged = false;
  r.verified = true;
  r.first = {0.1, 0.2, 0.3};

  const nlohmann::json j = r;
  EXPECT_TRUE(j["ci_rel"].is_null());  // JSON has no infinity
  EXPECT_DOUBLE_EQ(j["parts"]["h2d"]["gbps"].get<double>(), (1 << 20) / 1e-4 / 1e9);
  const auto back = nlohmann::json::parse(j.dump()).get<point_result>();
  EXPECT_EQ(back.spec.backend, "cuda-rt");
  EXPECT_EQ(back.spec.device, 1);
  EXPECT_EQ(back.spec.dir, direction::bidir);
  EXPECT_EQ(back.spec.bytes, 1u << 20);
  EXPECT_EQ(back.device_pci, "0000:17:00.0");
  EXPECT_EQ(back.samples_s, r.samples_s);
  EXPECT_EQ(back.wall_samples_s, r.wall_samples_s);
  EXPECT_EQ(back.part_samples_s, r.part_samples_s);
  EXPECT_DOUBLE_EQ(back.stats.median, r.stats.median);
  EXPECT_TRUE(std::isinf(back.ci_rel));
  EXPECT_DOUBLE_EQ(back.first.first_transfer_s, 0.3);
  EXPECT_DOUBLE_EQ(back.gbps(), r.gbps());
}

TEST(ResultJson, SkippedPointCarriesOnlyIdentityAndReason) {
  point_result r;
  r.spec = {"host", 0, route_kind::memcpy, direction::d2d, "none", 8};
  r.status = point_status::skipped;
  r.reason = "why";
  const nlohmann::json j = r;
  EXPECT_EQ(j["status"], "skipped");
  EXPECT_EQ(j["reason"], "why");
  EXPECT_FALSE(j.contains("samples_s"));
  const auto back = j.get<point_result>();
  EXPECT_EQ(back.status, point_status::skipped);
  EXPECT_EQ(back.reason, "why");
}

TEST(ResultJson, SystemRoundTrips) {
  system_info s;
  s.hostname = "h";
  s.cpu_model = "c";
  s.logical_cpus = 16;
  s.physical_cores = 8;
  s.memory_bytes = 1 << 30;
  s.numa_nodes = 2;
  pci_link l;
  l.address = "0000:01:00.0";
  l.vendor_name = "NVIDIA";
  l.max_gts = 32;
  l.max_width = 16;
  l.max_gen = 5;
  l.theoretical_gbps = 63.0;
  s.accelerators = {l};
  s.backend_versions["cuda-rt"] = {{"driver", "13.0"}};
  const auto back = nlohmann::json::parse(nlohmann::json(s).dump()).get<system_info>();
  EXPECT_EQ(back.logical_cpus, 16u);
  EXPECT_EQ(back.physical_cores, 8u);
  auto older = nlohmann::json(s);
  older.erase("physical_cores");
  EXPECT_EQ(older.get<system_info>().physical_cores, 0u) << "a file from before it was recorded";
  ASSERT_EQ(back.accelerators.size(), 1u);
  EXPECT_EQ(back.accelerators[0].max_gen, 5);
  EXPECT_DOUBLE_EQ(back.accelerators[0].theoretical_gbps, 63.0);
  EXPECT_EQ(back.backend_versions.at("cuda-rt").at("driver"), "13.0");
}

TEST(LinkLimit, FlagsOnlyDevicePointsThatCrossTheLink) {
  point_result r;
  r.spec = {"cuda-rt", 0, route_kind::copy_async, direction::h2d, "managed", 1000};
  r.device_type = "gpu";
  r.bytes_per_rep = 1000;
  r.stats.median = 1000 / 100e9;  // 100 GB/s over a 63 GB/s link
  flag_link_limit(r, 63.0);
  EXPECT_TRUE(r.above_link_limit);
  const auto verdict = nlohmann::json(r)["verdict"];
  EXPECT_TRUE(verdict["above_link_limit"].get<bool>());
  EXPECT_FALSE(verdict["trusted"].get<bool>());
  EXPECT_EQ(verdict["why_not"], nlohmann::json::array({"above-link-limit"}));
  r.above_link_limit = false;
  r.spec.dir = direction::bidir;  // both directions at once: up to 126
  r.bytes_per_rep = 2000;
  r.stats.median = 2000 / 100e9;
  flag_link_limit(r, 63.0);
  EXPECT_FALSE(r.above_link_limit);
  r.spec.host_memory = "none";  // device-internal
  r.stats.median = 2000 / 1000e9;
  flag_link_limit(r, 63.0);
  EXPECT_FALSE(r.above_link_limit);
  r.spec.host_memory = "pinned";
  r.device_type = "cpu";  // a CPU "device" has no link
  flag_link_limit(r, 63.0);
  EXPECT_FALSE(r.above_link_limit);
}

// A kernel "reading host memory" at device-memory speed never crossed the
// link: skipped with the numbers, the samples kept; under the link it stays ok.
TEST(LinkLimit, AKernelHostPointAboveTheLinkIsSkippedWithTheNumbers) {
  point_result r;
  r.spec = {"opencl:nvidia", 0, route_kind::kernel_host, direction::h2d, "alloc-host-ptr", 1 << 20};
  r.device_type = "gpu";
  r.bytes_per_rep = 1 << 20;
  r.samples_s = {(1 << 20) / 2000e9};
  r.stats.median = (1 << 20) / 2000e9;  // 2000 GB/s
  flag_link_limit(r, 63.0);
  EXPECT_TRUE(r.above_link_limit);
  EXPECT_EQ(r.status, point_status::skipped);
  EXPECT_NE(r.reason.find("2000.0 GB/s, above the link's 63.0 GB/s"), std::string::npos) << r.reason;
  EXPECT_EQ(r.samples_s.size(), 1u);
  point_result under = r;
  under.status = point_status::ok;
  under.above_link_limit = false;
  under.reason.clear();
  under.stats.median = (1 << 20) / 50e9;
  flag_link_limit(under, 63.0);
  EXPECT_EQ(under.status, point_status::ok);
  EXPECT_FALSE(under.above_link_limit);
}

// A finding quotes a point as one figure only where its samples agree; two
// modes (a pageable copy at 12 and at 16 GB/s) are quoted as the range.
TEST(Verdict, SettledOnlyWhereTheSamplesAgreeElseTheRangeTheySupport) {
  point_result r;
  r.spec = {"cuda-rt", 0, route_kind::copy_async, direction::h2d, "pageable", 1'000'000};
  r.device_type = "gpu";
  r.timer = clock_kind::event;
  r.bytes_per_rep = 1'000'000;
  r.converged = true;
  r.samples_s = r.wall_samples_s = std::vector<double>(20, 1e6 / 12e9);
  r.stats = r.wall_stats = summarize(r.samples_s);
  EXPECT_TRUE(r.settled());
  auto v = nlohmann::json(r)["verdict"];
  EXPECT_TRUE(v["settled"].get<bool>());
  EXPECT_NEAR(v["gbps_range"][0].get<double>(), 12, 1e-9);
  EXPECT_NEAR(v["gbps_range"][1].get<double>(), 12, 1e-9);
  for (std::size_t k = 0; k < 10; ++k) r.samples_s[k] = 1e6 / 16e9;  // half the samples in a faster mode
  r.stats = summarize(r.samples_s);
  EXPECT_FALSE(r.settled());
  v = nlohmann::json(r)["verdict"];
  EXPECT_FALSE(v["settled"].get<bool>());
  EXPECT_NEAR(v["gbps_range"][0].get<double>(), 12, 1e-9);
  EXPECT_NEAR(v["gbps_range"][1].get<double>(), 16, 1e-9);
  EXPECT_NEAR(v["wall_gbps_range"][1].get<double>(), 12, 1e-9) << "the wall clock's own samples";
  r.samples_s.assign(20, 1e6 / 12e9);
  r.stats = summarize(r.samples_s);
  r.converged = false;
  EXPECT_FALSE(r.settled()) << "unconverged: its median is not known to the target";
}

// A fleet point names its health test (the one list, fleet::health_test_names),
// so no reader rebuilds it from the point's size and kind.
TEST(FleetTag, ThePointCarriesItsTestThroughTheFile) {
  point_result r;
  r.spec = {"host", 0, route_kind::memcpy, direction::h2d, "pinned", 4};
  r.status = point_status::skipped;
  r.fleet = point_result::fleet_tag{"node-a", 1, 0, "alone", 2, "latency-4B"};
  const nlohmann::json j = r;
  EXPECT_EQ(j["fleet"]["test"], "latency-4B");
  point_result back;
  from_json(j, back);
  ASSERT_TRUE(back.fleet);
  EXPECT_EQ(back.fleet->test, "latency-4B");
  EXPECT_EQ(back.fleet->repeat, 2);
}
