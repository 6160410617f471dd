// Route staged on PoCL: libxfer's staged copier driven by the OpenCL backend
// (its step in the backend's context, so the route's buffers are checked as
// every other route's). test_main.cpp fixes the tuning: 4 KiB chunks, a ring
// of 4 over 2 threads, no handoff. (That every kind verifies or skips with
// its reason is conformance_test.cpp's; the per-sample check catching a wrong
// byte is sample_check_test.cpp's.)
#include <cstdlib>
#include <gtest/gtest.h>
#include <string>
#include <vector>
#include <xfer/core/errors.hpp>

#include "pocl.hpp"

namespace xfer::opencl {
namespace {

// The tuning test_main.cpp sets (a run by hand may set another: the sizes
// below then still verify, only less pointedly).
std::uint64_t chunk() {
  const char* v = std::getenv("XFER_STAGED_CHUNK_BYTES");
  return v ? std::strtoull(v, nullptr, 10) : 4096;
}

TEST(OpenCLStagedRoute, DataArrivesAtEveryChunkBoundary) {
  XFER_REQUIRE_POCL(b);
  const std::uint64_t c = chunk();
  // A chunk and a byte either side; the ring's depth of chunks (4) and past
  // it, so slots are reused; an odd tail after several rounds.
  const std::vector<std::uint64_t> sizes{1,         c - 1,     c,         c + 1,          2 * c,
                                         4 * c - 1, 4 * c,     4 * c + 1, 9 * c + 7};
  for (const direction d : {direction::h2d, direction::d2h})
    for (const char* kind : {"pageable", "pageable-unaligned"})
      for (const std::uint64_t n : sizes) {
        SCOPED_TRACE(::testing::Message() << to_string(d) << " " << kind << " " << n << " B");
        auto t = b->prepare({b->name(), 0, route_kind::staged, d, kind, n});
        EXPECT_NO_THROW(t->verify());
        t->poison_sample();
        EXPECT_GT(t->run(2).seconds, 0);
        EXPECT_NO_THROW(t->check_sample());
        t->poison_sample();  // a batch that never ran leaves the poison
        EXPECT_THROW(t->check_sample(), verification_error);
      }
}

TEST(OpenCLStagedRoute, TheApisOwnHostMemoryIsSkippedWithTheReason) {
  XFER_REQUIRE_POCL(b);
  for (const char* kind : {"alloc-host-ptr", "use-host-ptr"}) {
    try {
      b->prepare({b->name(), 0, route_kind::staged, direction::h2d, kind, 4096});
      ADD_FAILURE() << kind << " was prepared";
    } catch (const skip_point& e) {
      EXPECT_NE(std::string(e.what()).find("for pageable memory"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(kind), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace xfer::opencl
