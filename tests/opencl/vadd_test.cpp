// The OpenCL vadd application on PoCL, for real: every strategy the device
// offers runs verified with each phase that applies to it timed, the others
// are skipped with the reason, and sizes or kernels that cannot work say so.
// Behaviour only: no test looks at how long anything took.
#include <atomic>
#include <gtest/gtest.h>
#include <xfer/app/vadd.hpp>
#include <xfer/core/errors.hpp>

#include "app_study.hpp"
#include "opencl/host_memory.hpp"
#include "opencl/vadd_app.hpp"
#include "pocl.hpp"

namespace xfer::opencl {
namespace {

const std::vector<std::string> all_strategies{"pageable",       "pageable-unaligned", "aligned",    "huge",
                                              "alloc-host-ptr", "use-host-ptr",       "svm-coarse", "svm-fine"};

// The phase contract, written out: which phases a strategy times on a device.
bool applies(vadd_phase p, const std::string& strategy, const device_caps& d) {
  using enum vadd_phase;
  const bool v21 = d.major > 2 || (d.major == 2 && d.minor >= 1);
  const bool v12 = d.major > 1 || d.minor >= 2;
  if (strategy == "svm-fine") return p != map && p != write && p != read;  // shared in place: nothing moves
  if (strategy == "svm-coarse" && p == write) return v21;                  // clEnqueueSVMMigrateMem
  if (p == write) return v12;                                              // clEnqueueMigrateMemObjects
  return true;
}

device_caps pocl_caps(opencl_backend& b) { return b.context_for(0).caps; }

TEST(Vadd, TheBackendOffersItOnItsDevicesOnly) {
  XFER_REQUIRE_POCL(b);
  EXPECT_NE(make_vadd_app(*b, 0), nullptr);
  try {
    make_vadd_app(*b, static_cast<int>(b->devices().size()));
    FAIL() << "made a vadd app on a device that does not exist";
  } catch (const usage_error& e) {
    EXPECT_NE(std::string(e.what()).find("has no device"), std::string::npos) << e.what();
  }
  EXPECT_THROW(make_vadd_app(*b, -1), usage_error);
}

TEST(Vadd, StrategiesAreTheHostMemoryKindsWithTheDevicesAvailability) {
  XFER_REQUIRE_POCL(b);
  const device_caps caps = pocl_caps(*b);
  const auto s = make_vadd_app(*b, 0)->strategies();
  ASSERT_EQ(s.size(), all_strategies.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    EXPECT_EQ(s[i].name, all_strategies[i]);
    EXPECT_FALSE(s[i].description.empty()) << s[i].name;
    const std::string why = kind_unavailable_reason(s[i].name, caps);
    EXPECT_EQ(s[i].available, why.empty()) << s[i].name;
    EXPECT_EQ(s[i].reason, why) << s[i].name;
  }
  // The core kinds are wrapped the way seed 000 does it.
  EXPECT_NE(s[1].description.find("CL_MEM_USE_HOST_PTR"), std::string::npos) << s[1].description;
}

class EveryStrategy : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryStrategy, RunsVerifiedWithEveryApplicablePhaseTimed) {
  XFER_REQUIRE_POCL(b);
  const std::string strategy = GetParam();
  const device_caps caps = pocl_caps(*b);
  auto app = make_vadd_app(*b, 0);
  if (const std::string why = kind_unavailable_reason(strategy, caps); !why.empty()) {
    try {
      app->run(strategy, 1024);
      FAIL() << strategy << " ran on a device that lacks it";
    } catch (const skip_point& e) {
      EXPECT_EQ(std::string(e.what()), why);
    }
    return;
  }
  // One element, a length that is no multiple of any work-group size, and
  // enough to need many strides per work item.
  for (std::size_t n : {std::size_t{1}, std::size_t{4099}, std::size_t{1} << 20}) {
    SCOPED_TRACE(::testing::Message() << strategy << ", n = " << n);
    const vadd_times t = app->run(strategy, n);
    EXPECT_TRUE(t.verified);
    for (std::size_t i = 0; i < vadd_phase_count; ++i) {
      const auto p = static_cast<vadd_phase>(i);
      if (applies(p, strategy, caps))
        EXPECT_GE(t[p], 0.0) << vadd_phase_names[i] << " was not timed";
      else
        EXPECT_LT(t[p], 0.0) << vadd_phase_names[i] << " does not apply yet has a time";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(PoCL, EveryStrategy, ::testing::ValuesIn(all_strategies), [](const auto& info) {
  std::string name = info.param;
  for (char& c : name)
    if (c == '-') c = '_';
  return name;
});

// A kernel that leaves c alone: every strategy must then fail verification,
// even right after a correct run whose result may sit in recycled memory.
TEST(Vadd, AResultTheKernelDidNotWriteNeverVerifies) {
  XFER_REQUIRE_POCL(b);
  const device_caps caps = pocl_caps(*b);
  opencl_vadd good(caps, {});
  opencl_vadd lazy(caps, {},
                   "__kernel void vadd(__global const uint* a, __global const uint* b, __global uint* c, ulong n) {}\n");
  for (const auto& s : all_strategies) {
    if (!kind_unavailable_reason(s, caps).empty()) continue;
    SCOPED_TRACE(s);
    EXPECT_TRUE(good.run(s, 4096).verified);
    EXPECT_FALSE(lazy.run(s, 4096).verified);
  }
}

TEST(Vadd, StrategiesTheDeviceLacksAreSkippedWithTheReason) {
  XFER_REQUIRE_POCL(b);
  device_caps no_svm = pocl_caps(*b);
  no_svm.svm = 0;  // as a 1.2 device, or NVIDIA's for fine grain, would report
  opencl_vadd app(no_svm, {});
  for (const auto& k : app.strategies()) {
    const bool svm = k.name.rfind("svm-", 0) == 0;
    EXPECT_EQ(k.available, !svm) << k.name;
    if (!svm) continue;
    EXPECT_NE(k.reason.find("SVM"), std::string::npos) << k.reason;
    try {
      app.run(k.name, 1024);
      FAIL() << k.name << " ran without SVM";
    } catch (const skip_point& e) {
      EXPECT_EQ(std::string(e.what()), k.reason);
    }
  }
  EXPECT_TRUE(app.run("aligned", 1024).verified);  // the rest still run
}

TEST(Vadd, UnknownStrategiesAndEmptyVectorsAreSkipped) {
  XFER_REQUIRE_POCL(b);
  auto app = make_vadd_app(*b, 0);
  try {
    app->run("granite", 1024);
    FAIL();
  } catch (const skip_point& e) {
    EXPECT_NE(std::string(e.what()).find("unknown strategy 'granite'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(app->run("aligned", 0), skip_point);
}

TEST(Vadd, VectorsAboveTheMaxAllocationAreSkippedWithTheLimit) {
  XFER_REQUIRE_POCL(b);
  const device_caps caps = pocl_caps(*b);
  auto app = make_vadd_app(*b, 0);
  const std::size_t n = caps.max_alloc_bytes / sizeof(std::uint32_t) + 1;
  for (const auto& s : {"pageable", "alloc-host-ptr", "svm-fine"}) {
    try {
      app->run(s, n);
      FAIL() << s << " ran vectors above CL_DEVICE_MAX_MEM_ALLOC_SIZE";
    } catch (const skip_point& e) {
      EXPECT_NE(std::string(e.what()).find("CL_DEVICE_MAX_MEM_ALLOC_SIZE = " + std::to_string(caps.max_alloc_bytes)),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(Vadd, VectorsTheDeviceMemoryCannotHoldAreSkipped) {
  XFER_REQUIRE_POCL(b);
  device_caps small = pocl_caps(*b);
  small.global_mem_bytes = 1 << 20;  // three 512 KiB vectors do not fit
  opencl_vadd app(small, {});
  try {
    app.run("aligned", 128 << 10);
    FAIL();
  } catch (const skip_point& e) {
    EXPECT_NE(std::string(e.what()).find("CL_DEVICE_GLOBAL_MEM_SIZE"), std::string::npos) << e.what();
  }
}

TEST(Vadd, AKernelBuildFailureCarriesTheBuildLog) {
  XFER_REQUIRE_POCL(b);
  opencl_vadd broken(pocl_caps(*b), {}, "__kernel void vadd(__global uint* c) { c[0] = not_declared_anywhere; }\n");
  try {
    broken.run("aligned", 1024);
    FAIL() << "a broken kernel ran";
  } catch (const skip_point& e) {
    FAIL() << "a build failure is a failure, not a skip: " << e.what();
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("vadd.cl"), std::string::npos) << what;
    EXPECT_NE(what.find("build log:"), std::string::npos) << what;
    EXPECT_NE(what.find("not_declared_anywhere"), std::string::npos) << what;
  }
}

// What `xferbench app vadd -b opencl:pocl` does with the app: every strategy
// ok and verified, each applicable phase sampled once per repeat.
TEST(Vadd, TheAppStudyRunsEveryStrategy) {
  XFER_REQUIRE_POCL(b);
  const device_caps caps = pocl_caps(*b);
  auto app = make_vadd_app(*b, 0);
  app_study::options o;
  o.sizes = {4096};
  o.repeats = 2;
  std::atomic<bool> stop{false};
  const auto results = app_study::run(*app, b->name(), caps.name, o, stop);
  ASSERT_EQ(results.size(), all_strategies.size());
  for (const auto& r : results) {
    SCOPED_TRACE(r.strategy);
    if (!kind_unavailable_reason(r.strategy, caps).empty()) {
      EXPECT_EQ(r.status, point_status::skipped);
      EXPECT_NE(app_study::to_value(r).dump().find("\"status\":\"skipped\""), std::string::npos);
      continue;
    }
    EXPECT_TRUE(r.ok()) << r.reason;
    EXPECT_TRUE(r.verified);
    for (std::size_t i = 0; i < vadd_phase_count; ++i)
      EXPECT_EQ(r.samples[i].size(), applies(static_cast<vadd_phase>(i), r.strategy, caps) ? 2u : 0u)
          << vadd_phase_names[i];
  }
  const std::string table = app_study::render_table(results, 4096, app_study::default_baseline);
  EXPECT_NE(table.find("| Phase | pageable | Δ pageable | pageable-unaligned |"), std::string::npos) << table;
}

}  // namespace
}  // namespace xfer::opencl
