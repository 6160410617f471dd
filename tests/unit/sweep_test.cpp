#include <gtest/gtest.h>
#include <xfer/core/errors.hpp>
#include <xfer/core/sweep.hpp>

#include "fake_backend.hpp"

using namespace xfer;

TEST(Expand, FullCrossProductInNestingOrder) {
  test::fake_backend b;
  sweep_spec s;
  s.sizes = {1, 2};
  const auto points = expand(b, s);
  // per device: copy (4 host directions x 2 kinds + d2d once) + kernel (2 x 2 kinds), x 2 sizes
  EXPECT_EQ(points.size(), 2u * ((4 * 2 + 1) + 2 * 2) * 2);
  EXPECT_EQ(points.front().route, route_kind::copy_sync);
  EXPECT_EQ(points.front().dir, direction::h2d);
  EXPECT_EQ(points.front().host_memory, "pageable");
  EXPECT_EQ(points.front().bytes, 1u);
  EXPECT_EQ(points[1].bytes, 2u);
  EXPECT_EQ(points[2].host_memory, "pinned");
  EXPECT_EQ(points.back().device, 1);
}

TEST(Expand, DeviceToDeviceUsesNoHostMemory) {
  test::fake_backend b;
  sweep_spec s;
  s.sizes = {64};
  s.directions = {direction::d2d};
  const auto points = expand(b, s);
  ASSERT_EQ(points.size(), 2u);  // one per device, not one per kind
  EXPECT_EQ(points[0].host_memory, "none");
}

TEST(Expand, UnsupportedDirectionOfOneRouteIsLeftOut) {
  test::fake_backend b;
  sweep_spec s;
  s.sizes = {64};
  s.devices = {0};
  s.directions = {direction::rw};
  for (const auto& p : expand(b, s)) EXPECT_EQ(p.route, route_kind::copy_sync);
}

TEST(Expand, WithoutDirectionsARouteGetsTheOnesItMoves) {
  test::fake_backend b;
  sweep_spec s;
  s.sizes = {64};
  s.devices = {0};
  s.routes = {"kernel-host"};
  const auto points = expand(b, s);
  ASSERT_EQ(points.size(), 4u);  // h2d and d2h, two kinds
  for (const auto& p : points) EXPECT_TRUE(p.dir == direction::h2d || p.dir == direction::d2h);
}

TEST(Expand, UnknownNamesAreUsageErrors) {
  test::fake_backend b;
  sweep_spec s;
  s.sizes = {64};
  s.routes = {"teleport"};
  EXPECT_THROW(expand(b, s), usage_error);
  s.routes = {};
  s.host_memory = {"granite"};
  EXPECT_THROW(expand(b, s), usage_error);
  s.host_memory = {};
  s.devices = {7};
  EXPECT_THROW(expand(b, s), usage_error);
  s.devices = {};
  s.routes = {"kernel-host"};
  s.directions = {direction::d2d};
  EXPECT_THROW(expand(b, s), usage_error);
}

TEST(Expand, UnavailableKindsStillExpandSoTheySkipWithAReason) {
  test::fake_backend b;
  sweep_spec s;
  s.sizes = {64};
  s.host_memory = {"pinned"};
  s.directions = {direction::h2d};
  s.devices = {0};
  const auto points = expand(b, s);
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[0].host_memory, "pinned");
}

TEST(Direction, ParsesKnownNamesOnly) {
  EXPECT_EQ(parse_direction("bidir"), direction::bidir);
  EXPECT_THROW(parse_direction("sideways"), usage_error);
}

TEST(Expand, RepeatedSelectionsGiveEachPointOnce) {
  test::fake_backend b;
  sweep_spec s;
  s.devices = {0, 0};
  s.routes = {"copy-sync", "copy-sync"};
  s.host_memory = {"pinned", "pinned"};
  s.directions = {direction::h2d, direction::h2d};
  s.sizes = {4096, 4096};
  const auto points = expand(b, s);
  ASSERT_EQ(points.size(), 1u);
  EXPECT_EQ(points[0].bytes, 4096u);
}

namespace {
struct chase_backend final : backend {
  std::string name() const override { return "chase"; }
  std::string description() const override { return "test double"; }
  std::vector<device_info> devices() const override { return {{.index = 0, .name = "d", .type = "gpu"}}; }
  std::vector<route_info> routes() const override {
    return {{route_kind::declare("latency", route_family::latency), "", {direction::h2d}, true, {}, 4}};
  }
  std::vector<kind_support> host_memory_kinds() const override { return {{"pinned", true, "", ""}}; }
  std::unique_ptr<transfer> prepare(const point_spec&) override { return nullptr; }
};
}  // namespace

TEST(Expand, SizesARouteCannotTakeAreLeftOutOfTheDefaultGridButKeptWhenAskedFor) {
  chase_backend b;
  sweep_spec s;
  s.sizes = {1, 16, 256};
  s.sizes_given = false;
  std::vector<std::uint64_t> got;
  for (const auto& p : expand(b, s)) got.push_back(p.bytes);
  EXPECT_EQ(got, (std::vector<std::uint64_t>{16, 256}));
  s.sizes_given = true;  // asked for: planned, and the backend says why it cannot run
  EXPECT_EQ(expand(b, s).size(), 3u);
}
