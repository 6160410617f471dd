// Backend xrt through XRT's no-op emulation shim (XCL_EMULATION_MODE=noop):
// every route runs, its points say they are emulated and stay out of peaks,
// the 4 KiB user-pointer rule is exercised with aligned and unaligned
// memory, and the modes that cannot run here say why.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <string>
#include <xfer/core/errors.hpp>
#include <xfer/core/runner.hpp>
#include <xfer/core/summary_reporter.hpp>
#include <xfer/mem/kinds.hpp>

#include "../conformance/corrupt_places.hpp"
#include "xrt/xrt_backend.hpp"
#include "xrt/xrt_transfer.hpp"

namespace {

using namespace xfer;

backend_entry with_mode(const char* mode) {
  if (mode)
    ::setenv("XCL_EMULATION_MODE", mode, 1);
  else
    ::unsetenv("XCL_EMULATION_MODE");
  return xrt_backend::make_xrt_backend({});
}

point_result run_point(backend& b, route_kind r, direction d, const std::string& kind, std::uint64_t bytes) {
  const point_spec p{"xrt", 0, r, d, kind, bytes};
  const auto dev = b.devices().at(0);
  try {
    auto t = b.prepare(p);
    measure_options o;
    o.max_time_s = 0.01;
    std::atomic<bool> stop{false};
    return measure(*t, p, dev, o, stop);
  } catch (const skip_point& s) {
    point_result r0;
    r0.spec = p;
    r0.status = point_status::skipped;
    r0.reason = s.what();
    return r0;
  }
}

// copy-sync moves bytes even under the shim (bo.write, bo.read): core's check
// reaches its places, the buffer object's backing and the host memory, and
// catches a byte flipped in either.
TEST(XrtNoop, ACorruptedPlaceOfCopySyncFailsTheCheck) {
  auto e = with_mode("noop");
  ASSERT_TRUE(e.impl) << e.reason;
  for (direction d : {direction::h2d, direction::d2h, direction::rw}) {
    SCOPED_TRACE(to_string(d));
    auto t = e.impl->prepare({"xrt", 0, route_kind::copy_sync, d, "aligned", 4099});
    xfer::expect_every_corrupted_place_caught(*t);
  }
}

TEST(XrtNoop, TheEmulatedDeviceIsListedAsEmulation) {
  auto e = with_mode("noop");
  ASSERT_TRUE(e.impl) << e.reason;
  const auto devs = e.impl->devices();
  ASSERT_EQ(devs.size(), 1u);
  EXPECT_EQ(devs[0].details.at("emulation"), "noop");
  EXPECT_NE(devs[0].name.find("emulation"), std::string::npos) << devs[0].name;
  EXPECT_NE(e.impl->description().find("emulation"), std::string::npos);
}

TEST(XrtNoop, EveryRouteRunsAndSaysNoDataCrossedALink) {
  auto e = with_mode("noop");
  ASSERT_TRUE(e.impl) << e.reason;
  for (direction d : {direction::h2d, direction::d2h, direction::rw})
    for (auto [route, kind] : {std::pair{route_kind::copy_sync, "pageable"}, {route_kind::copy_sync, "aligned"},
                               {xrt_backend::own_routes::bo_sync, "bo-normal"}, {xrt_backend::own_routes::bo_sync, "bo-host-only"},
                               {xrt_backend::own_routes::user_ptr, "aligned"}}) {
      SCOPED_TRACE(std::string(to_string(route)) + " " + kind + " " + to_string(d));
      for (std::uint64_t n : {std::uint64_t{4096}, std::uint64_t{1} << 20, (std::uint64_t{3} << 20) + 4096}) {
        const point_result r = run_point(*e.impl, route, d, kind, n);
        ASSERT_EQ(r.status, point_status::ok) << r.reason;
        EXPECT_EQ(r.emulation, "noop");
        EXPECT_NE(r.reason.find("no data crossed a link"), std::string::npos) << r.reason;
        EXPECT_EQ(r.timer, clock_kind::wall);
        EXPECT_EQ(r.bytes_per_rep, d == direction::rw ? 2 * n : n);
        EXPECT_GE(r.samples_s.size(), 1u);
        // bo.write/bo.read move bytes in host memory and are checked; a bare
        // bo.sync moves nothing under the shim, so nothing is claimed.
        EXPECT_EQ(r.verified, route == route_kind::copy_sync);
      }
    }
}

TEST(XrtNoop, EmulatedPointsNeverMakeAPeak) {
  auto e = with_mode("noop");
  ASSERT_TRUE(e.impl) << e.reason;
  std::vector<point_result> pts;
  for (std::uint64_t n : {std::uint64_t{1} << 16, std::uint64_t{1} << 20})
    pts.push_back(run_point(*e.impl, xrt_backend::own_routes::bo_sync, direction::h2d, "bo-normal", n));
  const auto row = summary_reporter::summarize_curve(pts);
  EXPECT_EQ(row.emulated, 2u);
  EXPECT_EQ(row.emulation, "noop");
  EXPECT_EQ(row.peak_gbps, 0.0) << "an emulated point is no bandwidth";
}

// Seed 000's rule asked of XRT: a user pointer off a 4 KiB boundary is
// refused (a skipped point naming the rule), an aligned one runs.
TEST(XrtNoop, AnUnalignedUserPointerIsRefusedWithTheRule) {
  auto e = with_mode("noop");
  ASSERT_TRUE(e.impl) << e.reason;
  const point_result bad = run_point(*e.impl, xrt_backend::own_routes::user_ptr, direction::h2d, "pageable-unaligned", 1 << 20);
  ASSERT_EQ(bad.status, point_status::skipped);
  EXPECT_NE(bad.reason.find("16 B past a 4 KiB boundary"), std::string::npos) << bad.reason;
  EXPECT_NE(bad.reason.find("4 KiB-aligned"), std::string::npos) << bad.reason;
  const point_result good = run_point(*e.impl, xrt_backend::own_routes::user_ptr, direction::h2d, "aligned", 1 << 20);
  EXPECT_EQ(good.status, point_status::ok) << good.reason;
  EXPECT_TRUE(good.note.empty()) << "an aligned pointer is XRT's own: " << good.note;
}

TEST(XrtNoop, KindsAndRoutesThatDoNotGoTogetherAreSkippedWithWhy) {
  auto e = with_mode("noop");
  ASSERT_TRUE(e.impl) << e.reason;
  const auto a = run_point(*e.impl, xrt_backend::own_routes::bo_sync, direction::h2d, "pageable", 4096);
  EXPECT_EQ(a.status, point_status::skipped);
  EXPECT_NE(a.reason.find("bo-normal"), std::string::npos) << a.reason;
  const auto b = run_point(*e.impl, route_kind::copy_sync, direction::h2d, "bo-normal", 4096);
  EXPECT_EQ(b.status, point_status::skipped);
  EXPECT_NE(b.reason.find("route bo-sync"), std::string::npos) << b.reason;
}

TEST(XrtModes, ModesNeedingVitisAreUnavailableWithTheReason) {
  for (const char* m : {"sw_emu", "hw_emu"}) {
    auto e = with_mode(m);
    EXPECT_FALSE(e.impl) << m;
    EXPECT_NE(e.reason.find("Vitis"), std::string::npos) << e.reason;
  }
  auto e = with_mode("bogus");
  EXPECT_FALSE(e.impl);
  EXPECT_NE(e.reason.find("not a mode"), std::string::npos) << e.reason;
}

TEST(XrtModes, NoCardAndNoModeIsUnavailableWithTheWayToEmulate) {
  auto e = with_mode(nullptr);
  if (e.impl) GTEST_SKIP() << "an XRT device is present: " << e.impl->devices().at(0).name;
  EXPECT_NE(e.reason.find("XCL_EMULATION_MODE=noop"), std::string::npos) << e.reason;
}

}  // namespace
