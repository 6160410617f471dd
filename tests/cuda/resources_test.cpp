// The host memory conformance suite (tests/conformance/resource_conformance.hpp)
// instantiated for the CUDA kinds through both APIs, and the checks only
// device kinds have (declared properties, reachability from the device).
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory_resource>
#include <vector>
#include <xfer/core/pattern.hpp>
#include <xfer/mem/caching_pool.hpp>
#include <xfer/mem/error.hpp>

#include "cuda/kernels.hpp"

#include "cuda/resources.hpp"
#include "../conformance/resource_conformance.hpp"
#include "gpu.hpp"

using namespace xfer;
using namespace xfer::cuda;

// Declared properties are compile-time facts.
static_assert(registered_resource::declared.pinned && !registered_resource::declared.device_accessible);
static_assert(fast_pinned_resource::declared.pinned && !fast_pinned_resource::declared.device_accessible);
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

class CudaResourceConformance : public ::testing::TestWithParam<resource_case> {
 protected:
  void SetUp() override {
    XFER_REQUIRE_GPU();
    api_ = &cuda::test::gpu().backend(GetParam().backend)->cuda_api();
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

// Every CUDA kind is reachable from a kernel on a device with unified
// addressing (the zero-copy routes rely on it): what the host wrote, the
// device reads back (and the reverse), through the address device_view gives.
TEST_P(CudaResourceConformance, EveryKindIsReachableFromTheDevice) {
  const device_attributes attrs = api_->attributes(0);
  ASSERT_TRUE(attrs.unified_addressing) << "every 64-bit CUDA platform has unified addressing";
  ASSERT_EQ(device_access_gap(*r, attrs), "");
  const std::size_t n = 4096 + 123;  // more than a page, not whole pages
  auto* host = static_cast<unsigned char*>(r->allocate(n, 1));
  std::memset(host, 0x5A, n);
  device_buffer dev(*api_, n);
  stream s(*api_);
  kernels::copy(s.get(), dev.data(), device_view(*r, *api_, host), n, 1);  // the device reads host memory
  kernels::write_pattern(s.get(), device_view(*r, *api_, host), n, 9, 1);    // and writes it
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
                                           resource_case{"cuda-drv", "mapped"}, resource_case{"cuda-drv", "managed"},
                                           resource_case{"cuda-rt", "pinned-fast"}, resource_case{"cuda-drv", "pinned-fast"}),
                         case_name);

namespace {

// The shared suite's cases: each factory says why not where there is no GPU.
xfer::test::resource_case shared_case(const resource_case& c) {
  return {c.backend + "_" + c.kind, [c](std::string& why) -> std::unique_ptr<mem::host_resource> {
            if (!cuda::test::gpu().available()) {
              why = "no usable CUDA device: " + cuda::test::gpu().reason;
              return nullptr;
            }
            api& a = cuda::test::gpu().backend(c.backend)->cuda_api();
            a.make_current(0);
            return make_host_kind(c.kind, a, {});
          }};
}

const resource_case all_cases[] = {{"cuda-rt", "registered"}, {"cuda-rt", "pinned"},  {"cuda-rt", "pinned-wc"},
                                   {"cuda-rt", "mapped"},     {"cuda-rt", "managed"}, {"cuda-drv", "registered"},
                                   {"cuda-drv", "pinned"},    {"cuda-drv", "pinned-wc"}, {"cuda-drv", "mapped"},
                                   {"cuda-drv", "managed"}, {"cuda-rt", "pinned-fast"}, {"cuda-drv", "pinned-fast"}};

// A caching pool over pinned memory: the pool keeps blocks alive, which is
// where the CUDA allocator's packing of small blocks showed.
std::vector<xfer::test::resource_case> shared_cases() {
  std::vector<xfer::test::resource_case> out;
  for (const auto& c : all_cases) out.push_back(shared_case(c));
  auto pinned = shared_case({"cuda-rt", "pinned"});
  out.push_back({"cuda_rt_pool_pinned", [pinned](std::string& why) -> std::unique_ptr<mem::host_resource> {
                   auto up = pinned.make(why);
                   return up ? std::make_unique<xfer::test::owned_pool>(std::move(up)) : nullptr;
                 }});
  return out;
}

}  // namespace

using xfer::test::ResourceConformance;
INSTANTIATE_TEST_SUITE_P(CudaKinds, ResourceConformance, ::testing::ValuesIn(shared_cases()),
                         xfer::test::case_name);

// pinned-fast faults its pages in from several threads and registers the
// block once: a block large enough to be split between threads must come
// back whole, every page written and a copy of all of it exact both ways.
TEST(CudaFastPinned, ALargeBlockIsOneRegistrationEveryPageUsable) {
  XFER_REQUIRE_GPU();
  for (const char* b : {"cuda-rt", "cuda-drv"}) {
    api& a = cuda::test::gpu().backend(b)->cuda_api();
    a.make_current(0);
    fast_pinned_resource r(a, 4);
    const std::size_t n = (std::size_t{96} << 20) + 4096 + 7;  // four threads' shares and a ragged end
    auto* host = static_cast<unsigned char*>(r.allocate(n, 4096));
    fill_pattern(host, n, 21);
    device_buffer dev(a, n);
    a.copy(dev.data(), host, n, copy_kind::h2d);
    std::memset(host, 0, n);
    a.copy(host, dev.data(), n, copy_kind::d2h);
    EXPECT_NO_THROW(check_pattern(host, n, 21, b));
    EXPECT_NE(r.describe().find("4 threads"), std::string::npos) << r.describe();
    r.deallocate(host, n, 4096);
  }
}

TEST(CudaKindCatalogue, CoreKindsFirstThenTheCudaOnes) {
  const auto& names = host_kind_names();
  const std::vector<std::string> expected{"pageable", "pageable-unaligned", "aligned", "huge",   "registered",
                                          "pinned",   "pinned-wc",          "mapped",  "managed"};
  EXPECT_EQ(names, expected);
}

TEST(CudaManagedResource, RefusesMoreThanTheDeviceHasFree) {
  XFER_REQUIRE_GPU();
  api& a = cuda::test::gpu().backend("cuda-rt")->cuda_api();
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
