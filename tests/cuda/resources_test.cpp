// The host memory conformance suite (as tests/conformance runs it for the
// core's kinds) instantiated for the CUDA kinds, through both APIs.
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory_resource>
#include <vector>
#include <xfer/core/pattern.hpp>
#include <xfer/mem/error.hpp>

#include "cuda/kernels.hpp"

#include "cuda/resources.hpp"
#include "gpu.hpp"

using namespace xfer;
using namespace xfer::cuda;

// Declared properties are compile-time facts.
static_assert(registered_resource::declared.pinned && !registered_resource::declared.device_accessible);
static_assert(pinned_resource::declared.pinned && !pinned_resource::declared.write_combined);
static_assert(pinned_wc_resource::declared.pinned && pinned_wc_resource::declared.write_combined);
static_assert(mapped_resource::declared.pinned && mapped_resource::declared.device_accessible);
static_assert(managed_resource::declared.device_accessible && !managed_resource::declared.pinned);
static_assert(managed_resource::declared.host_accessible && mapped_resource::declared.host_accessible);

namespace {

struct resource_case {
  std::string backend;  // whose api allocates
  std::string kind;
};

std::string case_name(const ::testing::TestParamInfo<resource_case>& info) {
  std::string n = info.param.backend + "_" + info.param.kind;
  for (char& c : n)
    if (c == '-') c = '_';
  return n;
}

bool aligned_to(const void* p, std::size_t a) { return reinterpret_cast<std::uintptr_t>(p) % a == 0; }

class CudaResourceConformance : public ::testing::TestWithParam<resource_case> {
 protected:
  void SetUp() override {
    XFER_REQUIRE_GPU();
    api_ = &test::gpu().backend(GetParam().backend)->cuda_api();
    api_->make_current(0);
    r = make_host_kind(GetParam().kind, *api_, {});
    ASSERT_NE(r, nullptr);
  }
  api* api_ = nullptr;
  std::unique_ptr<mem::host_resource> r;
};

}  // namespace

TEST_P(CudaResourceConformance, NameAndPropertiesMatchTheKind) {
  EXPECT_EQ(r->kind(), GetParam().kind);
  const auto p = r->props();
  EXPECT_TRUE(p.host_accessible);
  EXPECT_EQ(p.pinned, GetParam().kind != "managed");
  EXPECT_EQ(p.device_accessible, GetParam().kind == "mapped" || GetParam().kind == "managed");
  EXPECT_EQ(p.write_combined, GetParam().kind == "pinned-wc");
  EXPECT_FALSE(r->describe().empty());
}

TEST_P(CudaResourceConformance, AlignmentHonouredAndLimited) {
  for (std::size_t n : {1u, 7u, 4096u, 100000u}) {
    void* p = r->allocate(n, 1);
    EXPECT_TRUE(aligned_to(p, r->natural_alignment())) << n;
    r->deallocate(p, n, 1);
  }
  for (std::size_t a = 1; a <= r->max_alignment(); a *= 2) {
    void* p = r->allocate(100, a);
    EXPECT_TRUE(aligned_to(p, a)) << "alignment " << a;
    r->deallocate(p, 100, a);
  }
  EXPECT_THROW((void)r->allocate(64, r->max_alignment() * 2), mem::allocation_error);
  EXPECT_THROW((void)r->allocate(64, 3), mem::allocation_error);
}

TEST_P(CudaResourceConformance, WritableAcrossSizes) {
  for (std::size_t n = 1; n <= (std::size_t{64} << 20); n *= 8) {
    auto* p = static_cast<unsigned char*>(r->allocate(n, 1));
    std::memset(p, 0xA5, n);
    EXPECT_EQ(p[0], 0xA5);
    EXPECT_EQ(p[n - 1], 0xA5);
    r->deallocate(p, n, 1);
  }
}

TEST_P(CudaResourceConformance, ZeroSizeGivesAUniqueFreeablePointer) {
  void* a = r->allocate(0, 1);
  void* b = r->allocate(0, 1);
  EXPECT_NE(a, nullptr);
  EXPECT_NE(a, b);
  r->deallocate(a, 0, 1);
  r->deallocate(b, 0, 1);
}

TEST_P(CudaResourceConformance, AbsurdSizeThrowsAllocationErrorWithTheSize) {
  for (std::size_t n : {std::numeric_limits<std::size_t>::max(), std::numeric_limits<std::size_t>::max() / 2,
                        std::size_t{1} << 60}) {
    try {
      (void)r->allocate(n, 1);
      FAIL() << "allocated " << n;
    } catch (const mem::allocation_error& e) {
      EXPECT_EQ(e.bytes(), n);
      EXPECT_NE(std::string(e.what()).find(GetParam().kind), std::string::npos) << e.what();
    }
  }
}

TEST_P(CudaResourceConformance, ServesPmrContainersWithDistinctAllocations) {
  std::pmr::vector<double> v(r.get());
  for (int i = 0; i < 10000; ++i) v.push_back(i);
  EXPECT_EQ(v[9999], 9999.0);
  std::vector<unsigned char*> ps;
  for (int i = 0; i < 16; ++i) {
    auto* p = static_cast<unsigned char*>(r->allocate(1000, 1));
    std::memset(p, i + 1, 1000);
    ps.push_back(p);
  }
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(ps[i][0], i + 1);
    EXPECT_EQ(ps[i][999], i + 1);
    r->deallocate(ps[i], 1000, 1);
  }
}

// Device-accessible kinds: what the host wrote, the device reads back (and
// the reverse), through the address device_view gives.
TEST_P(CudaResourceConformance, DeviceAccessibleKindsAreReachableFromTheDevice) {
  if (!r->props().device_accessible) GTEST_SKIP() << GetParam().kind << " is not device-accessible";
  const std::size_t n = 4096;
  auto* host = static_cast<unsigned char*>(r->allocate(n, 1));
  std::memset(host, 0x5A, n);
  device_buffer dev(*api_, n);
  stream s(*api_);
  kernels::copy(s.get(), dev.data(), device_view(*r, host), n, 1);  // the device reads host memory
  kernels::write_pattern(s.get(), device_view(*r, host), n, 9, 1);    // and writes it
  api_->synchronize_stream(s.get());
  std::vector<unsigned char> back(n);
  api_->copy(back.data(), dev.data(), n, copy_kind::d2h);
  EXPECT_EQ(back[0], 0x5A);
  EXPECT_EQ(back[n - 1], 0x5A);
  EXPECT_NO_THROW(check_pattern(host, n, 9, "kernel-written host memory"));
  r->deallocate(host, n, 1);
}

INSTANTIATE_TEST_SUITE_P(CudaKinds, CudaResourceConformance,
                         ::testing::Values(resource_case{"cuda-rt", "registered"}, resource_case{"cuda-rt", "pinned"},
                                           resource_case{"cuda-rt", "pinned-wc"}, resource_case{"cuda-rt", "mapped"},
                                           resource_case{"cuda-rt", "managed"}, resource_case{"cuda-drv", "registered"},
                                           resource_case{"cuda-drv", "pinned"}, resource_case{"cuda-drv", "pinned-wc"},
                                           resource_case{"cuda-drv", "mapped"}, resource_case{"cuda-drv", "managed"}),
                         case_name);

TEST(CudaKindCatalogue, CoreKindsFirstThenTheCudaOnes) {
  const auto& names = host_kind_names();
  const std::vector<std::string> expected{"pageable", "pageable-unaligned", "aligned", "huge",   "registered",
                                          "pinned",   "pinned-wc",          "mapped",  "managed"};
  EXPECT_EQ(names, expected);
}

TEST(CudaManagedResource, RefusesMoreThanTheDeviceHasFree) {
  XFER_REQUIRE_GPU();
  api& a = test::gpu().backend("cuda-rt")->cuda_api();
  a.make_current(0);
  std::size_t free = 0, total = 0;
  a.memory_info(free, total);
  managed_resource r(a);
  try {
    (void)r.allocate(free + (std::size_t{1} << 30), 256);
    FAIL() << "allocated more managed memory than the device has free";
  } catch (const mem::allocation_error& e) {
    EXPECT_NE(std::string(e.what()).find("free"), std::string::npos) << e.what();
  }
}
