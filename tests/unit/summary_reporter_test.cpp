// The console summary: one row per curve, peaks that leave out points above
// their link's ceiling, and what a row says about convergence.
#include <gtest/gtest.h>
#include <sstream>
#include <xfer/core/size.hpp>
#include <xfer/core/summary_reporter.hpp>

using namespace xfer;

namespace {

point_result ok(std::uint64_t bytes, double gbps, bool converged = true) {
  point_result r;
  r.spec = {"cuda-rt", 0, route_kind::copy_async, direction::h2d, "pinned", bytes};
  r.device_name = "H100";
  r.device_type = "gpu";
  r.bytes_per_rep = bytes;
  r.stats.median = static_cast<double>(bytes) / (gbps * 1e9);
  r.converged = converged;
  r.link_ceiling_gbps = 58.0;
  return r;
}

}  // namespace

TEST(SummaryReporter, ACurvesPeakHalfPeakAndSmallestTransfer) {
  const auto w = summary_reporter::summarize_curve({ok(1 << 20, 40), ok(4096, 2, false), ok(64 << 20, 55),
                                                    ok(16 << 20, 54)});
  EXPECT_NEAR(w.peak_gbps, 55, 1e-9);
  EXPECT_EQ(w.peak_bytes, 64u << 20);
  EXPECT_EQ(w.half_peak_bytes, 1u << 20);  // 40 >= 27.5; 2 is not
  EXPECT_EQ(w.smallest_bytes, 4096u);
  EXPECT_NEAR(w.smallest_us, 4096 / 2e9 * 1e6, 1e-9);
  EXPECT_NEAR(w.pct_of_ceiling, 100 * 55 / 58.0, 1e-9);
  EXPECT_EQ(w.points, 4u);
  EXPECT_EQ(w.converged, 3u);
}

TEST(SummaryReporter, PointsAboveTheCeilingNeverMakeThePeak) {
  auto fast = ok(64 << 20, 900);
  fast.above_link_limit = true;
  const auto w = summary_reporter::summarize_curve({ok(1 << 20, 50), fast});
  EXPECT_NEAR(w.peak_gbps, 50, 1e-9);
  EXPECT_EQ(w.above_limit, 1u);
}

// NVIDIA's OpenCL staged pageable memory outside the profiled command: the
// events said 47 GB/s, the wall clock 4.9 (docs/results/h100/gate).
TEST(SummaryReporter, PointsWhoseDeviceClockMissesHostWorkNeverMakeThePeak) {
  auto staged = ok(1 << 20, 47);
  staged.timer = clock_kind::event;
  staged.wall_stats.median = staged.stats.median * 9.7;
  EXPECT_TRUE(staged.clock_misses_work());
  auto small = ok(4096, 3);  // below 1 MiB the launch dominates both clocks: never flagged
  small.timer = clock_kind::event;
  small.wall_stats.median = small.stats.median * 5;
  EXPECT_FALSE(small.clock_misses_work());
  auto walled = staged;  // the wall clock's own samples have nothing to miss
  walled.timer = clock_kind::wall;
  EXPECT_FALSE(walled.clock_misses_work());
  const auto w = summary_reporter::summarize_curve({small, staged, ok(64 << 20, 20)});
  EXPECT_NEAR(w.peak_gbps, 20, 1e-9);
  EXPECT_EQ(w.clock_misses_work, 1u);

  std::ostringstream out;
  summary_reporter s(out);
  s.report(staged);
  s.finalize(false);
  EXPECT_NE(out.str().find("left out of the peak"), std::string::npos) << out.str();
}

// latency moves 4 B a repetition whatever its buffer's size: a row of access
// times, never a bandwidth of 0.00 GB/s at 0% of the link.
TEST(SummaryReporter, ALatencyCurveShowsItsAccessTimesAndNoBandwidth) {
  std::vector<point_result> curve;
  for (auto [bytes, us] : {std::pair{16ull, 1.13}, {4096ull, 1.20}, {65536ull, 1.40}}) {
    auto p = ok(bytes, 1);
    p.spec.route = route_kind::declare("latency", route_family::latency);
    p.bytes_per_rep = 4;
    p.stats.median = us * 1e-6;
    curve.push_back(p);
  }
  const auto w = summary_reporter::summarize_curve(curve);
  EXPECT_TRUE(w.access_times);
  EXPECT_EQ(w.peak_gbps, 0);
  EXPECT_LT(w.pct_of_ceiling, 0);
  EXPECT_NEAR(w.smallest_us, 1.13, 1e-9);
  EXPECT_NEAR(w.slowest_us, 1.40, 1e-9);

  std::ostringstream out;
  summary_reporter s(out);
  for (const auto& p : curve) s.report(p);
  s.finalize(false);
  EXPECT_NE(out.str().find("1.13-1.40 us"), std::string::npos) << out.str();
  EXPECT_EQ(out.str().find("0.00"), std::string::npos) << out.str();
}

TEST(SummaryReporter, OneTablePerBackendAndDeviceOneRowPerCurve) {
  std::ostringstream out;
  summary_reporter s(out);
  s.report(ok(4096, 2));
  s.report(ok(1 << 20, 40));
  auto d2h = ok(1 << 20, 30);
  d2h.spec.dir = direction::d2h;
  s.report(d2h);
  auto skipped = ok(1 << 20, 30);
  skipped.status = point_status::skipped;  // not a curve's point
  skipped.spec.host_memory = "managed";
  s.report(skipped);
  s.finalize(false);
  const std::string text = out.str();
  EXPECT_NE(text.find("cuda-rt device 0 (H100)"), std::string::npos) << text;
  EXPECT_NE(text.find("copy-async pinned      h2d     40.00      1M"), std::string::npos) << text;
  EXPECT_NE(text.find("69%"), std::string::npos) << text;  // 40 of 58
  EXPECT_NE(text.find("d2h     30.00"), std::string::npos) << text;
  EXPECT_EQ(text.find("managed"), std::string::npos) << text;
}

TEST(SummaryReporter, ColumnsStayStraightUnderLongNamesAndTimesKeepTheirUnit) {
  std::ostringstream out;
  summary_reporter s(out);
  s.report(ok(1 << 20, 40));
  auto long_kind = ok(1 << 20, 30);
  long_kind.spec.host_memory = "device-local-host-visible";
  long_kind.spec.route = route_kind::declare("cpu-store-nt-latency-long", route_family::latency);
  long_kind.bytes_per_rep = 4;
  long_kind.stats.median = 2.17e-9;  // a 2 ns access: not "0.00 us"
  s.report(long_kind);
  s.finalize(false);
  std::istringstream lines(out.str());
  std::string line, header;
  std::vector<std::string> rows;
  while (std::getline(lines, line)) {
    if (line.find("peak GB/s") != std::string::npos) header = line;
    else if (line.find("h2d") != std::string::npos) rows.push_back(line);
  }
  ASSERT_FALSE(header.empty()) << out.str();
  ASSERT_EQ(rows.size(), 2u) << out.str();
  // Every row's direction starts under the header's "dir", whatever the names before it.
  const auto dir_at = header.find("dir");
  for (const auto& r : rows) EXPECT_EQ(r.find("h2d"), dir_at) << out.str();
  EXPECT_NE(out.str().find("2.17-2.17 ns"), std::string::npos) << out.str();
  EXPECT_EQ(out.str().find("0.00 us"), std::string::npos) << out.str();
}

TEST(FormatDuration, EachTimeInTheUnitThatShowsIt) {
  EXPECT_EQ(format_duration(2.17e-9), "2.17 ns");
  EXPECT_EQ(format_duration(1.4e-6), "1.40 us");
  EXPECT_EQ(format_duration(0.25), "250.00 ms");
  EXPECT_EQ(format_duration(3), "3.00 s");
  EXPECT_EQ(format_duration(0), "0.00 s");
}

TEST(SummaryReporter, ARoundTripRouteWhoseSizeIsItsStoreShowsTimesNotBandwidth) {
  // cpu-store-latency (Vulkan) stores 8 B and times the round trip: bytes a repetition equal the size, yet no GB/s.
  std::ostringstream out;
  summary_reporter s(out);
  for (auto [bytes, us] : {std::pair{8ull, 1450.0}, {64ull, 1430.0}}) {
    auto p = ok(bytes, 1);
    p.spec.route = route_kind::declare("round-trip-test", route_family::latency);
    p.bytes_per_rep = bytes;
    p.stats.median = us * 1e-6;
    s.report(p);
  }
  s.finalize(false);
  EXPECT_NE(out.str().find("1.43-1.45 ms"), std::string::npos) << out.str();
  EXPECT_EQ(out.str().find("0.00"), std::string::npos) << out.str();
}

TEST(SummaryReporter, BriefIsOneLinePerDeviceWithEachDirectionsBestCurve) {
  std::ostringstream out;
  summary_reporter s(out, true);
  s.report(ok(64 << 20, 54));  // pinned h2d: the h2d peak
  auto pageable = ok(64 << 20, 8);
  pageable.spec.host_memory = "pageable";
  s.report(pageable);
  auto d2h_pageable = ok(64 << 20, 50);  // d2h's best is another curve than h2d's
  d2h_pageable.spec.dir = direction::d2h;
  d2h_pageable.spec.host_memory = "pageable";
  s.report(d2h_pageable);
  auto d2h_pinned = ok(64 << 20, 20);
  d2h_pinned.spec.dir = direction::d2h;
  s.report(d2h_pinned);
  s.finalize(false);
  const std::string text = out.str();
  EXPECT_NE(text.find("cuda-rt device 0 (H100): h2d 54.00 GB/s (copy-async pinned, 64M, 93% of the link); "
                      "d2h 50.00 GB/s (copy-async pageable, 64M, 86% of the link); 4/4 points converged"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("8.00"), std::string::npos) << text;
  EXPECT_EQ(text.find("20.00"), std::string::npos) << text;
}
