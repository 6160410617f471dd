#include <gtest/gtest.h>
#include <xfer/core/errors.hpp>
#include <xfer/core/runner.hpp>
#include <xfer/core/sweep.hpp>

#include "host/host_backend.hpp"

using namespace xfer;


// Every route x direction x kind: tests/conformance (the backend conformance suite).

TEST(HostBackend, SizeBeyondMemoryIsSkippedWithTheNumbers) {
  host::host_backend b(1, {});
  const point_spec p{"host", 0, route_kind::memcpy, direction::h2d, "pageable", 1ull << 50};
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
