// backend::host_memory on PoCL: OpenCL's own kinds as std::pmr resources that
// the CPU-side and allocator studies can use, held to the same conformance
// checks as every other host resource, and honest about their properties.
#include <cstdint>
#include <cstring>
#include <gtest/gtest.h>
#include <limits>
#include <memory_resource>
#include <vector>
#include <xfer/core/errors.hpp>
#include <xfer/core/pattern.hpp>
#include <xfer/mem/error.hpp>

#include "opencl/cl_host_resource.hpp"
#include "opencl/host_memory.hpp"
#include "../conformance/resource_conformance.hpp"
#include "pocl.hpp"

namespace xfer::opencl {
namespace {

TEST(HostMemory, AllocHostPtrRoundTripsDataAndFreesCleanly) {
  XFER_REQUIRE_POCL(b);
  auto r = b->host_memory("alloc-host-ptr");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->kind(), "alloc-host-ptr");
  auto* cl = dynamic_cast<cl_host_resource*>(r.get());
  ASSERT_NE(cl, nullptr);
  const std::size_t n = std::size_t{4} << 20;
  void* p = r->allocate(n, r->natural_alignment());
  fill_pattern(p, n, 7);
  EXPECT_NO_THROW(check_pattern(p, n, 7, "alloc-host-ptr memory"));
  void* q = r->allocate(n, 64);
  std::memcpy(q, p, n);  // what the CPU study does to it: copy in and out
  EXPECT_NO_THROW(check_pattern(q, n, 7, "copied into alloc-host-ptr memory"));
  EXPECT_EQ(cl->live(), 2u);
  r->deallocate(p, n, r->natural_alignment());
  r->deallocate(q, n, 64);
  EXPECT_EQ(cl->live(), 0u);
}

TEST(HostMemory, PropertiesAreHonest) {
  XFER_REQUIRE_POCL(b);
  const auto caps = b->context_for(0).caps;
  for (const char* kind : {"alloc-host-ptr", "use-host-ptr", "svm-coarse", "svm-fine"}) {
    if (!kind_unavailable_reason(kind, caps).empty()) continue;
    SCOPED_TRACE(kind);
    const auto p = b->host_memory(kind)->props();
    EXPECT_TRUE(p.host_accessible);
    EXPECT_FALSE(p.write_combined);
    // PoCL's device is the CPU: nothing it allocates is page-locked for DMA.
    EXPECT_FALSE(p.pinned);
    // Kept mapped, only fine-grained SVM may be touched by a kernel meanwhile.
    EXPECT_EQ(p.device_accessible, std::string(kind) == "svm-fine");
  }
}

TEST(HostMemory, CoreKindsComeFromTheDefaultCatalogue) {
  XFER_REQUIRE_POCL(b);
  auto r = b->host_memory("aligned");
  EXPECT_EQ(r->kind(), "aligned");
  EXPECT_EQ(dynamic_cast<cl_host_resource*>(r.get()), nullptr);
  EXPECT_EQ(b->host_memory("pageable-unaligned")->kind(), "pageable-unaligned");
}

TEST(HostMemory, UnknownOrUnavailableKindsAreSkippedWithTheReason) {
  XFER_REQUIRE_POCL(b);
  try {
    b->host_memory("granite");
    FAIL();
  } catch (const skip_point& e) {
    EXPECT_NE(std::string(e.what()).find("'granite'"), std::string::npos) << e.what();
  }
  // The same platform as a device without SVM would be.
  device_caps no_svm = b->context_for(0).caps;
  no_svm.svm = 0;
  opencl_backend lacking(b->platform(), {no_svm}, {});
  for (const char* kind : {"svm-coarse", "svm-fine"}) {
    try {
      lacking.host_memory(kind);
      FAIL() << kind;
    } catch (const skip_point& e) {
      EXPECT_NE(std::string(e.what()).find("SVM"), std::string::npos) << e.what();
    }
  }
  EXPECT_NE(lacking.host_memory("alloc-host-ptr"), nullptr);
}

// ---- conformance, per OpenCL kind: the shared suite, and what only OpenCL kinds have ----

class ClResourceConformance : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    b_ = testing::pocl_backend(&why_);
    if (!b_) GTEST_SKIP() << why_;
    if (const auto why = kind_unavailable_reason(GetParam(), b_->context_for(0).caps); !why.empty())
      GTEST_SKIP() << why;
    r_ = b_->host_memory(GetParam());
  }
  void TearDown() override {
    if (auto* cl = dynamic_cast<cl_host_resource*>(r_.get())) {
      EXPECT_EQ(cl->live(), 0u) << "an allocation leaked";
    }
  }
  std::string why_;
  opencl_backend* b_ = nullptr;
  std::unique_ptr<mem::host_resource> r_;
};

TEST_P(ClResourceConformance, AbsurdSizeNamesTheDeviceLimit) {
  for (std::size_t n : {std::numeric_limits<std::size_t>::max(), std::numeric_limits<std::size_t>::max() / 2,
                        std::size_t{1} << 60}) {
    try {
      (void)r_->allocate(n, 1);
      FAIL() << "allocated " << n;
    } catch (const mem::allocation_error& e) {
      EXPECT_EQ(e.bytes(), n);
      EXPECT_NE(std::string(e.what()).find("CL_DEVICE_MAX_MEM_ALLOC_SIZE"), std::string::npos) << e.what();
    }
  }
}

TEST_P(ClResourceConformance, ForeignPointersAreIgnoredOnDeallocate) {
  int not_ours = 0;
  r_->deallocate(&not_ours, sizeof not_ours, alignof(int));  // noexcept, and frees nothing
  SUCCEED();
}

INSTANTIATE_TEST_SUITE_P(PoCL, ClResourceConformance,
                         ::testing::Values("alloc-host-ptr", "use-host-ptr", "svm-coarse", "svm-fine"),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& c : name)
                             if (c == '-') c = '_';
                           return name;
                         });

// The shared suite over the same kinds; a kind PoCL lacks is skipped with why,
// and every test ends with no allocation left alive.
std::vector<xfer::test::resource_case> shared_cases() {
  std::vector<xfer::test::resource_case> out;
  for (std::string kind : {"alloc-host-ptr", "use-host-ptr", "svm-coarse", "svm-fine"}) {
    out.push_back({kind,
                   [kind](std::string& why) -> std::unique_ptr<mem::host_resource> {
                     opencl_backend* b = testing::pocl_backend(&why);
                     if (!b) return nullptr;
                     why = kind_unavailable_reason(kind, b->context_for(0).caps);
                     return why.empty() ? b->host_memory(kind) : nullptr;
                   },
                   [](mem::host_resource& r) {
                     if (auto* cl = dynamic_cast<cl_host_resource*>(&r)) {
                       EXPECT_EQ(cl->live(), 0u) << "an allocation leaked";
                     }
                   }});
  }
  return out;
}

using xfer::test::ResourceConformance;
INSTANTIATE_TEST_SUITE_P(PoCL, ResourceConformance, ::testing::ValuesIn(shared_cases()),
                         xfer::test::case_name);

}  // namespace
}  // namespace xfer::opencl
