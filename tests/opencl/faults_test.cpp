// Bad input and faults: sizes the device cannot allocate, broken kernels, and
// errors that must name the call, the CL error and the sizes.
#include <gtest/gtest.h>
#include <xfer/core/errors.hpp>
#include <xfer/core/reporter.hpp>
#include <xfer/core/runner.hpp>

#include "opencl/program.hpp"
#include "pocl.hpp"

namespace xfer::opencl {
namespace {

TEST(Errors, NameTheCallTheClErrorAndTheSizes) {
  EXPECT_EQ(error_name(CL_OUT_OF_RESOURCES), "CL_OUT_OF_RESOURCES");
  EXPECT_EQ(error_name(CL_MEM_OBJECT_ALLOCATION_FAILURE), "CL_MEM_OBJECT_ALLOCATION_FAILURE");
  EXPECT_EQ(error_name(CL_PLATFORM_NOT_FOUND_KHR), "CL_PLATFORM_NOT_FOUND_KHR");
  EXPECT_EQ(error_name(-12345), "CL error -12345");
  try {
    check(CL_MEM_OBJECT_ALLOCATION_FAILURE, "clEnqueueWriteBuffer", "4096 B");
    FAIL() << "check_sample() did not throw";
  } catch (const cl_error& e) {
    EXPECT_STREQ(e.what(), "clEnqueueWriteBuffer(4096 B): CL_MEM_OBJECT_ALLOCATION_FAILURE");
    EXPECT_EQ(e.code(), CL_MEM_OBJECT_ALLOCATION_FAILURE);
  }
  EXPECT_NO_THROW(check(CL_SUCCESS, "clFinish"));
  EXPECT_TRUE(is_out_of_memory(CL_OUT_OF_RESOURCES));
  EXPECT_TRUE(is_out_of_memory(CL_MEM_OBJECT_ALLOCATION_FAILURE));
  EXPECT_FALSE(is_out_of_memory(CL_INVALID_VALUE));
}

TEST(Limits, SizesAboveTheMaxAllocationAreSkippedWithTheLimit) {
  XFER_REQUIRE_POCL(b);
  const std::uint64_t max = b->devices()[0].max_alloc_bytes;
  for (route_kind route : {route_kind::copy_async, route_kind::kernel_device}) {
    const direction d = route == route_kind::copy_async ? direction::h2d : direction::d2d;
    const point_spec p{b->name(), 0, route, d, d == direction::d2d ? "none" : "pageable", max + 1};
    // The plan skips it, with the limit, before the backend ever sees it.
    const auto planned = check_points(*b, {p});
    ASSERT_EQ(planned.size(), 1u);
    EXPECT_NE(planned[0].skip_reason.find("offers, " + std::to_string(max) + " B"), std::string::npos)
        << planned[0].skip_reason;
    const point_spec fits{b->name(), 0, route, d, d == direction::d2d ? "none" : "pageable", 4096};
    EXPECT_EQ(check_points(*b, {fits})[0].skip_reason, "");
  }
}

struct collect final : reporter {
  void report_context(const run_context&) override {}
  void report(const point_result& r) override { results.push_back(r); }
  void finalize(bool) override {}
  std::vector<point_result> results;
};

TEST(Limits, TheSweepGoesOnPastASkippedPoint) {
  XFER_REQUIRE_POCL(b);
  const std::uint64_t max = b->devices()[0].max_alloc_bytes;
  const std::vector<point_spec> points{{b->name(), 0, route_kind::copy_async, direction::h2d, "aligned", max * 2},
                                       {b->name(), 0, route_kind::copy_async, direction::h2d, "aligned", 4096},
                                       {b->name(), 0, route_kind::kernel_host, direction::h2d, "pageable", 4096}};
  measure_options o;
  o.max_time_s = 0.01;
  o.warmup_s = 0.001;
  collect out;
  std::atomic<bool> stop{false};
  const auto outcome = run_sweep(*b, check_points(*b, points), o, out, stop);
  ASSERT_EQ(out.results.size(), 3u);
  EXPECT_EQ(out.results[0].status, point_status::skipped);
  EXPECT_EQ(out.results[0].device_type, "cpu");
  EXPECT_EQ(out.results[1].status, point_status::ok) << out.results[1].reason;
  EXPECT_TRUE(out.results[1].verified);
  // Timed samples were checked too (poison_sample/check_sample around each
  // batch): the first always, the rest while checking costs no more than sampling.
  EXPECT_GE(out.results[1].samples_checked, 1u);
  EXPECT_LE(out.results[1].samples_checked, out.results[1].samples_s.size());
  EXPECT_EQ(out.results[1].timer, clock_kind::event);
  EXPECT_EQ(out.results[1].device_type, "cpu");  // every point says what the "device" is
  EXPECT_TRUE(out.results[1].part_samples_s.count("queued_to_end"));
  EXPECT_EQ(out.results[2].status, point_status::skipped);
  EXPECT_EQ(outcome.ok, 1u);
  EXPECT_EQ(outcome.skipped, 2u);
}

TEST(Kernels, TheEmbeddedSourceBuilds) {
  XFER_REQUIRE_POCL(b);
  auto& dev = b->context_for(0);
  ASSERT_FALSE(copy_kernel_source().empty());
  EXPECT_NE(copy_kernel_source().find("copy_bytes"), std::string_view::npos);
  const program prog = build_program(dev.ctx.get(), dev.caps.id, copy_kernel_source(), "copy.cl");
  EXPECT_TRUE(make_kernel(prog.get(), "copy_bytes"));
  EXPECT_THROW(make_kernel(prog.get(), "no_such_kernel"), cl_error);
}

TEST(Kernels, ABuildFailureThrowsWithTheBuildLog) {
  XFER_REQUIRE_POCL(b);
  auto& dev = b->context_for(0);
  const char* broken = "__kernel void broken(__global int* p) { p[0] = not_declared_anywhere; }\n";
  try {
    build_program(dev.ctx.get(), dev.caps.id, broken, "broken.cl");
    FAIL() << "a broken kernel built";
  } catch (const cl_error&) {
    FAIL() << "a build failure must carry the build log, not only the CL error";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("broken.cl"), std::string::npos) << what;
    EXPECT_NE(what.find("CL_BUILD_PROGRAM_FAILURE"), std::string::npos) << what;
    EXPECT_NE(what.find("build log:"), std::string::npos) << what;
    EXPECT_NE(what.find("not_declared_anywhere"), std::string::npos) << what;  // the compiler's own words
  }
}

}  // namespace
}  // namespace xfer::opencl
