#include <gtest/gtest.h>
#include <set>
#include <xfer/backends/registry.hpp>

#include "opencl/platform.hpp"
#include "pocl.hpp"

namespace xfer::opencl {
namespace {

TEST(PlatformToken, KnownVendorsGetTheirShortName) {
  EXPECT_EQ(platform_token("Portable Computing Language", "The pocl project"), "pocl");
  EXPECT_EQ(platform_token("NVIDIA CUDA", "NVIDIA Corporation"), "nvidia");
  EXPECT_EQ(platform_token("AMD Accelerated Parallel Processing", "Advanced Micro Devices, Inc."), "amd");
  EXPECT_EQ(platform_token("Intel(R) OpenCL HD Graphics", "Intel(R) Corporation"), "intel");
  EXPECT_EQ(platform_token("rusticl", "Mesa/X.org"), "rusticl");
  EXPECT_EQ(platform_token("Clover", "Mesa"), "clover");
}

TEST(PlatformToken, UnknownPlatformsUseTheirFirstWord) {
  EXPECT_EQ(platform_token("Oclgrind", "University of Bristol"), "oclgrind");
  EXPECT_EQ(platform_token("Apple", "Apple"), "apple");
  EXPECT_EQ(platform_token("  My-Accel v2", "Someone"), "my");
  EXPECT_EQ(platform_token("", ""), "platform");
}

TEST(PlatformToken, RepeatsAreMadeUniqueByPlatformIndex) {
  EXPECT_EQ(unique_tokens({"intel", "pocl", "intel", "intel"}),
            (std::vector<std::string>{"intel", "pocl", "intel-2", "intel-3"}));
}

TEST(PlatformToken, ParsesDeviceVersions) {
  EXPECT_EQ(parse_cl_version("OpenCL 3.0 CUDA 12.4.89"), std::make_pair(3, 0));
  EXPECT_EQ(parse_cl_version("OpenCL 1.2 pocl"), std::make_pair(1, 2));
  EXPECT_EQ(parse_cl_version("garbage"), std::make_pair(1, 0));
}

TEST(Platforms, PoclIsABackendNamedOpenclPocl) {
  XFER_REQUIRE_POCL(b);
  EXPECT_EQ(b->name(), "opencl:pocl");
  // Selection: the family name picks every platform, an exact name one, others none.
  EXPECT_TRUE(backend_matches("opencl", b->name()));
  EXPECT_TRUE(backend_matches("opencl:pocl", b->name()));
  EXPECT_FALSE(backend_matches("opencl:nvidia", b->name()));
  EXPECT_FALSE(backend_matches("cuda-rt", b->name()));
}

TEST(Platforms, EveryPlatformIsListedOnceUnderAUniqueName) {
  const auto entries = make_backends({});
  std::set<std::string> names;
  std::size_t opencl = 0;
  for (const auto& e : entries) {
    EXPECT_TRUE(names.insert(e.name).second) << "duplicate backend name " << e.name;
    if (backend_matches("opencl", e.name)) ++opencl;
  }
  EXPECT_GE(opencl, 1u);
}

TEST(Platforms, DevicesCarryTheDetailsListShows) {
  XFER_REQUIRE_POCL(b);
  const auto devices = b->devices();
  ASSERT_FALSE(devices.empty());
  const auto& d = devices[0];
  EXPECT_EQ(d.type, "cpu");  // PoCL's device is the CPU itself
  EXPECT_GT(d.max_alloc_bytes, 0u);
  EXPECT_GT(d.memory_bytes, 0u);
  for (const char* key : {"opencl_version", "profiling_timer_resolution_ns", "host_unified_memory", "max_alloc_bytes",
                          "driver_version", "svm"})
    EXPECT_TRUE(d.details.count(key)) << "missing detail " << key;
  EXPECT_EQ(d.details.at("opencl_version").rfind("OpenCL ", 0), 0u);
  // CPU "transfers" must not pass for a link's bandwidth.
  EXPECT_NE(b->description().find("is a CPU"), std::string::npos) << b->description();
  EXPECT_EQ(b->versions().at("platform"), "Portable Computing Language");
}

TEST(Platforms, HostKindsIncludeOpenclsOwn) {
  XFER_REQUIRE_POCL(b);
  std::set<std::string> kinds;
  for (const auto& k : b->host_memory_kinds()) {
    kinds.insert(k.name);
    EXPECT_FALSE(k.description.empty()) << k.name;
    if (!k.available) {
      EXPECT_FALSE(k.reason.empty()) << k.name;
    }
  }
  for (const char* k : {"pageable", "pageable-unaligned", "aligned", "alloc-host-ptr", "use-host-ptr", "svm-coarse",
                        "svm-fine"})
    EXPECT_TRUE(kinds.count(k)) << "missing kind " << k;
}

}  // namespace
}  // namespace xfer::opencl
