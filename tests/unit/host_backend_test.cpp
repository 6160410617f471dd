#include <gtest/gtest.h>
#include <xfer/core/errors.hpp>
#include <xfer/core/runner.hpp>
#include <xfer/core/sweep.hpp>

#include "../support/scoped_inputs.hpp"

#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "host/host_backend.hpp"

using namespace xfer;
using xfer::test::fixed_staged_tuning;
using xfer::test::scoped_inputs;


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
  // memcpy, memcpy-mt, staged, then the six block routes (core/block_route.hpp).
  ASSERT_EQ(routes.size(), 9u);
  EXPECT_NE(routes[1].description.find("3 threads"), std::string::npos);
  EXPECT_FALSE(routes[2].block_workload);
  for (std::size_t i = 3; i < routes.size(); ++i) EXPECT_TRUE(routes[i].block_workload) << routes[i].name;
  EXPECT_EQ(b.host_memory_kinds().size(), 4u);
}

// ---- route staged: libxfer's staged copier over the host step ----

namespace {

// A tuning the inputs fix (nothing calibrated): 4 KiB chunks, a ring of 4
// across 2 threads, and a handoff at 1000 B, so sizes around the chunk and
// the handoff take both paths.
struct small_tuning {
  scoped_inputs fixed = fixed_staged_tuning("4096", "4", "2", "1000");
};

}  // namespace

TEST(HostBackendStaged, DataArrivesAtEveryChunkBoundary) {
  small_tuning tuning;
  host::host_backend b(1, {});
  const std::vector<std::uint64_t> sizes{1,    999,  1000, 1001, 4095, 4096,          4097,
                                         8191, 8192, 8193, 3 * 4096 + 1, 4 * 4096, 9 * 4096 + 7};
  for (const direction d : {direction::h2d, direction::d2h})
    for (const char* kind : {"pageable", "pageable-unaligned"})
      for (const std::uint64_t n : sizes) {
        SCOPED_TRACE(::testing::Message() << to_string(d) << " " << kind << " " << n << " B");
        auto t = b.prepare({"host", 0, route_kind::staged, d, kind, n});
        EXPECT_NO_THROW(t->verify());
        t->poison_sample();
        EXPECT_GT(t->run(2).seconds, 0);
        EXPECT_NO_THROW(t->check_sample());
      }
}

TEST(HostBackendStaged, CheckCatchesACopyThatDidNotRun) {
  small_tuning tuning;
  host::host_backend b(1, {});
  for (const direction d : {direction::h2d, direction::d2h}) {
    auto t = b.prepare({"host", 0, route_kind::staged, d, "pageable", 3 * 4096 + 5});
    t->poison_sample();  // and no run: the destination keeps the poison
    EXPECT_THROW(t->check_sample(), verification_error) << to_string(d);
  }
}

// The route really goes through the copier: a tuning the copier refuses
// (the environment's, naming the variable) fails the point.
TEST(HostBackendStaged, GoesThroughTheCopiersTuning) {
  small_tuning tuning;
  scoped_inputs bad([](mem::library_inputs& in) {
    in.staged.push_back({mem::staged_field::threads, "XFER_STAGED_THREADS", "none"});
  });
  host::host_backend b(1, {});
  try {
    b.prepare({"host", 0, route_kind::staged, direction::h2d, "pageable", 8192});
    FAIL() << "expected the tuning to be refused";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("XFER_STAGED_THREADS"), std::string::npos) << e.what();
  }
  // The other routes never make a copier.
  EXPECT_NO_THROW(b.prepare({"host", 0, route_kind::memcpy, direction::h2d, "pageable", 8192}));
}

TEST(HostBackendStaged, OffersOnlyHostToDeviceAndBack) {
  host::host_backend b(1, {});
  for (const auto& r : b.routes())
    if (r.name == route_kind::staged) {
      EXPECT_EQ(r.directions, (std::vector<direction>{direction::h2d, direction::d2h}));
      return;
    }
  FAIL() << "no staged route";
}
