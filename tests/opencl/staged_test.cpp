// The staged copier on OpenCL, run on PoCL: the same cases as the host step
// (tests/staged/staged_conformance.hpp) through real command queues, marker
// events and ALLOC_HOST_PTR staging buffers.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <xfer/mem/opencl/staged_step.hpp>
#include <xfer/mem/registration_cache.hpp>

#include "../staged/staged_conformance.hpp"

namespace xfer::test {
namespace {

// PoCL's step, made once; null (with why) where PoCL is not installed.
mem::device_step* pocl_step(std::string& why) {
  static std::string reason;
  static std::unique_ptr<mem::device_step> step = [] {
    try {
      return opencl::make_staged_step("pocl");
    } catch (const std::exception& e) {
      reason = e.what();
      return std::unique_ptr<mem::device_step>();
    }
  }();
  why = reason;
  return step.get();
}

#define XFER_REQUIRE_POCL_STEP(s)      \
  std::string why_;                    \
  auto* s = pocl_step(why_);           \
  if (!s) GTEST_SKIP() << "no PoCL: " << why_

TEST(StagedOpenCL, EveryChunkBoundary) {
  XFER_REQUIRE_POCL_STEP(s);
  EXPECT_EQ(s->name(), "opencl");
  every_boundary(*s, 5);
}

TEST(StagedOpenCL, UnalignedStarts) {
  XFER_REQUIRE_POCL_STEP(s);
  unaligned_starts(*s);
}

TEST(StagedOpenCL, ConcurrentCopiesThroughOneCopier) {
  XFER_REQUIRE_POCL_STEP(s);
  concurrent_copies(*s, 3, 4);
}

TEST(StagedOpenCL, AsyncCopiesInFlight) {
  XFER_REQUIRE_POCL_STEP(s);
  async_in_flight(*s);
}

TEST(StagedOpenCL, DefaultTuningAndHandoffRoundTrip) {
  XFER_REQUIRE_POCL_STEP(s);
  mem::staged_tuning t;  // 8 MiB chunks; a small copy goes to the plain API
  t.threads = 2;
  t.ring_depth = 4;
  mem::staged_copier c(*s, with_tuning(t));
  round_trip(c, (std::size_t{20} << 20) + 5, 3, 1);  // staged: 3 chunks
  round_trip(c, 1000, 1, 1);                         // handed to clEnqueue{Write,Read}Buffer
  EXPECT_EQ(c.staging_stats().handed_out_bytes, 0u);
}

TEST(StagedOpenCL, RangeBeyondTheBufferIsRefused) {
  XFER_REQUIRE_POCL_STEP(s);
  mem::staged_copier c(*s, with_tuning(small_chunks()));
  device_buffer dev(*s, 4096);
  std::vector<unsigned char> host(8192);
  EXPECT_THROW(c.copy_to_device(dev.ref(), 1, host.data(), 4096), mem::staged_error);
}

// Ordering after (and holding) a caller's queue: staged_queue_test.cpp.

TEST(StagedOpenCL, ARegistrationCacheIsRefusedWithTheReason) {
  XFER_REQUIRE_POCL_STEP(s);
  try {
    mem::registration_cache cache(*s);
    FAIL() << "a registration cache was made on the OpenCL step";
  } catch (const mem::registration_error& e) {
    EXPECT_EQ(e.why(), mem::registration_error::reason::unsupported);
    EXPECT_NE(std::string(e.what()).find("OpenCL cannot pin host memory"), std::string::npos) << e.what();
  }
  EXPECT_THROW(s->register_host(nullptr, 4096), mem::device_step_error);
}

TEST(StagedOpenCL, UnknownPlatformOrDeviceSaysWhich) {
  try {
    opencl::make_staged_step("no-such-platform");
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("no-such-platform"), std::string::npos) << e.what();
  }
  XFER_REQUIRE_POCL_STEP(s);
  try {
    opencl::make_staged_step("pocl", 99);
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("no device 99"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace xfer::test
