#include <gtest/gtest.h>
#include <xfer/core/errors.hpp>
#include <xfer/core/runner.hpp>
#include <xfer/core/sweep.hpp>

#include "host/host_backend.hpp"

using namespace xfer;

namespace {

measure_options quick() {
  measure_options o;
  o.warmup_s = 0;
  o.max_time_s = 0.005;
  o.min_samples = 3;
  return o;
}

}  // namespace

// Every route x direction x kind runs and its data verifies, at awkward sizes.
TEST(HostBackend, EveryPointRunsAndVerifies) {
  host::host_backend b(2, {});
  sweep_spec s;
  s.sizes = {1, 4097, 1 << 20};
  const auto points = expand(b, s);
  ASSERT_EQ(points.size(), 3u * (4 * 4 + 1 + 4 * 3 + 1));
  std::atomic<bool> stop{false};
  const auto dev = b.devices().at(0);
  for (const auto& p : points) {
    auto t = b.prepare(p);
    const auto r = measure(*t, p, dev, quick(), stop);
    ASSERT_EQ(r.status, point_status::ok) << p.route << " " << to_string(p.dir) << " " << p.host_memory << " "
                                          << p.bytes << ": " << r.reason;
    EXPECT_TRUE(r.verified);
    EXPECT_GT(r.stats.median, 0);
    EXPECT_GE(r.first.alloc_s, 0);
    EXPECT_GE(r.first.touch_s, 0);
    const std::uint64_t expect = (p.dir == direction::bidir || p.dir == direction::rw) ? 2 * p.bytes : p.bytes;
    EXPECT_EQ(r.bytes_per_rep, expect);
    if (p.dir == direction::bidir) {
      EXPECT_EQ(r.part_samples_s.size(), 2u);
    }
  }
}

TEST(HostBackend, SizeBeyondMemoryIsSkippedWithTheNumbers) {
  host::host_backend b(1, {});
  const point_spec p{"host", 0, "memcpy", direction::h2d, "pageable", 1ull << 50};
  try {
    b.prepare(p);
    FAIL() << "expected skip_point";
  } catch (const skip_point& e) {
    EXPECT_NE(std::string(e.what()).find("available"), std::string::npos) << e.what();
  }
}

TEST(HostBackend, DescribesItself) {
  host::host_backend b(3, {});
  EXPECT_EQ(b.name(), "host");
  EXPECT_EQ(b.devices().at(0).type, "cpu");
  const auto routes = b.routes();
  ASSERT_EQ(routes.size(), 2u);
  EXPECT_NE(routes[1].description.find("3 threads"), std::string::npos);
  EXPECT_EQ(b.host_memory_kinds().size(), 4u);
}
