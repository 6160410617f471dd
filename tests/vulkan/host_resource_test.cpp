// The mapped Vulkan kinds as host memory resources (what the CPU study
// stores into): the shared resource suite on the device under test, with no
// allocation left alive after each test, and their declared properties.
#include <gtest/gtest.h>
#include <xfer/core/errors.hpp>

#include "../conformance/resource_conformance.hpp"
#include "device_under_test.hpp"
#include "vulkan/host_resource.hpp"

namespace xfer::vulkan {
namespace {

std::vector<xfer::test::resource_case> mapped_cases() {
  std::vector<xfer::test::resource_case> out;
  for (std::string kind : {"host-coherent", "host-cached", "device-local-host-visible"}) {
    out.push_back({kind,
                   [kind](std::string& why) -> std::unique_ptr<mem::host_resource> {
                     vulkan_backend* b = testing::device_under_test(&why);
                     if (!b) return nullptr;
                     why = kind_unavailable_reason(kind, b->caps());
                     return why.empty() ? b->host_memory(kind) : nullptr;
                   },
                   [](mem::host_resource& r) {
                     if (auto* v = dynamic_cast<vk_host_resource*>(&r)) {
                       EXPECT_EQ(v->live(), 0u) << "an allocation leaked";
                     }
                   }});
  }
  return out;
}

using xfer::test::ResourceConformance;
INSTANTIATE_TEST_SUITE_P(Vulkan, ResourceConformance, ::testing::ValuesIn(mapped_cases()), xfer::test::case_name);

TEST(VulkanHostResource, DeclaresWhatItsMemoryTypeIs) {
  std::string why;
  vulkan_backend* b = testing::device_under_test(&why);
  if (!b) GTEST_SKIP() << why;
  auto r = b->host_memory("device-local-host-visible");
  EXPECT_TRUE(r->props().device_accessible);
  EXPECT_TRUE(r->props().pinned);
  EXPECT_NE(r->describe().find("DEVICE_LOCAL"), std::string::npos) << r->describe();
  // lavapipe's only type is HOST_CACHED: nothing there is write-combined.
  if (b->name() == "vulkan:llvmpipe") {
    EXPECT_FALSE(r->props().write_combined);
  }
  EXPECT_THROW((void)b->host_memory("imported"), skip_point);
  EXPECT_EQ(b->host_memory("pageable")->kind(), "pageable");
}

}  // namespace
}  // namespace xfer::vulkan
