// One conformance suite for every host memory resource (rmm's mr_ref_test
// shape): each instantiation must pass the same checks.
#include <cstdint>
#include <cstring>
#include <functional>
#include <gtest/gtest.h>
#include <limits>
#include <memory>
#include <vector>
#include <xfer/mem/error.hpp>
#include <xfer/mem/host_resources.hpp>
#include <xfer/mem/caching_pool.hpp>
#include <xfer/mem/kinds.hpp>
#include <xfer/mem/more_resources.hpp>

using namespace xfer::mem;

// Declared properties are compile-time facts.
static_assert(pageable_resource::declared.host_accessible && !pageable_resource::declared.pinned);
static_assert(!unaligned_resource::declared.device_accessible);
static_assert(!aligned_resource::declared.write_combined);
static_assert(huge_page_resource::declared.host_accessible && !huge_page_resource::declared.pinned);
static_assert(over_aligned_resource::declared.host_accessible && !over_aligned_resource::declared.pinned);
static_assert(mmap_resource::declared.host_accessible && numa_resource::declared.host_accessible);

namespace {

struct resource_case {
  std::string name;
  std::function<std::unique_ptr<host_resource>()> make;
};

// A caching pool owns nothing but borrows its upstream: bundle the two.
struct pooled final : host_resource {
  over_aligned_resource upstream{4096};
  caching_pool pool{upstream};
  std::string_view kind() const noexcept override { return pool.kind(); }
  properties props() const noexcept override { return pool.props(); }
  std::size_t max_alignment() const noexcept override { return pool.max_alignment(); }
  std::size_t natural_alignment() const noexcept override { return pool.natural_alignment(); }
  std::string describe() const override { return pool.describe(); }
  void* do_allocate(std::size_t n, std::size_t a) override { return pool.allocate(n, a); }
  void do_deallocate(void* p, std::size_t n, std::size_t a) noexcept override { pool.deallocate(p, n, a); }
  bool do_is_equal(const std::pmr::memory_resource& o) const noexcept override { return this == &o; }
};

bool aligned_to(const void* p, std::size_t a) { return reinterpret_cast<std::uintptr_t>(p) % a == 0; }

class HostResourceConformance : public ::testing::TestWithParam<resource_case> {
 protected:
  void SetUp() override { r = GetParam().make(); }
  std::unique_ptr<host_resource> r;
};

}  // namespace

TEST_P(HostResourceConformance, NaturalAlignmentHonoured) {
  for (std::size_t n : {1u, 7u, 4096u, 100000u}) {
    void* p = r->allocate(n, 1);
    EXPECT_TRUE(aligned_to(p, r->natural_alignment())) << n;
    r->deallocate(p, n, 1);
  }
}

TEST_P(HostResourceConformance, EveryAlignmentUpToMaxHonoured) {
  for (std::size_t a = 1; a <= r->max_alignment(); a *= 2) {
    void* p = r->allocate(100, a);
    EXPECT_TRUE(aligned_to(p, a)) << "alignment " << a;
    r->deallocate(p, 100, a);
  }
}

TEST_P(HostResourceConformance, OverMaxOrNonPowerOfTwoAlignmentThrows) {
  EXPECT_THROW((void)r->allocate(64, r->max_alignment() * 2), allocation_error);
  EXPECT_THROW((void)r->allocate(64, 3), allocation_error);
}

TEST_P(HostResourceConformance, WritableAcrossSizes) {
  for (std::size_t n = 1; n <= (std::size_t{64} << 20); n *= 8) {
    auto* p = static_cast<unsigned char*>(r->allocate(n, 1));
    std::memset(p, 0xA5, n);
    EXPECT_EQ(p[0], 0xA5);
    EXPECT_EQ(p[n - 1], 0xA5);
    r->deallocate(p, n, 1);
  }
}

TEST_P(HostResourceConformance, ZeroSizeGivesAUniqueFreeablePointer) {
  void* a = r->allocate(0, 1);
  void* b = r->allocate(0, 1);
  EXPECT_NE(a, nullptr);
  EXPECT_NE(a, b);
  r->deallocate(a, 0, 1);
  r->deallocate(b, 0, 1);
}

TEST_P(HostResourceConformance, AbsurdSizeThrowsAllocationErrorWithTheSize) {
  for (std::size_t n : {std::numeric_limits<std::size_t>::max(), std::numeric_limits<std::size_t>::max() / 2,
                        std::size_t{1} << 60}) {
    try {
      (void)r->allocate(n, 1);
      FAIL() << "allocated " << n;
    } catch (const allocation_error& e) {
      EXPECT_EQ(e.bytes(), n);
    }
  }
}

TEST_P(HostResourceConformance, ServesPmrContainers) {
  std::pmr::vector<double> v(r.get());
  for (int i = 0; i < 10000; ++i) v.push_back(i);
  EXPECT_EQ(v[9999], 9999.0);
}

TEST_P(HostResourceConformance, DistinctAllocationsDoNotOverlap) {
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

INSTANTIATE_TEST_SUITE_P(
    HostKinds, HostResourceConformance,
    ::testing::Values(resource_case{"pageable", [] { return make_host_kind("pageable"); }},
                      resource_case{"unaligned", [] { return make_host_kind("pageable-unaligned"); }},
                      resource_case{"unaligned_offset_8", [] { return std::make_unique<unaligned_resource>(8); }},
                      resource_case{"aligned", [] { return make_host_kind("aligned"); }},
                      resource_case{"aligned_64", [] { return std::make_unique<aligned_resource>(64); }},
                      resource_case{"aligned_2M", [] { return std::make_unique<aligned_resource>(2 << 20); }},
                      resource_case{"huge", [] { return make_host_kind("huge"); }},
                      resource_case{"over_aligned", [] { return std::make_unique<over_aligned_resource>(); }},
                      resource_case{"over_aligned_64", [] { return std::make_unique<over_aligned_resource>(64); }},
                      resource_case{"mmap", [] { return std::make_unique<mmap_resource>(); }},
                      resource_case{"numa0", [] { return std::make_unique<numa_resource>(0); }},
                      resource_case{"pool_over_aligned", [] { return std::make_unique<pooled>(); }}),
    [](const auto& info) { return info.param.name; });

TEST(UnalignedResource, StartsOnNoPageOrCacheLine) {
  unaligned_resource r;
  void* p = r.allocate(4096, 16);
  EXPECT_FALSE(aligned_to(p, 64));
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 4096, unaligned_resource::default_offset);
  r.deallocate(p, 4096, 16);
}

TEST(UnalignedResource, RejectsOffsetsOnABoundary) {
  EXPECT_THROW(unaligned_resource(0), std::invalid_argument);
  EXPECT_THROW(unaligned_resource(64), std::invalid_argument);
  EXPECT_THROW(unaligned_resource(4096), std::invalid_argument);
}

TEST(AlignedResource, RejectsNonPowerOfTwo) {
  EXPECT_THROW(aligned_resource(3000), std::invalid_argument);
  EXPECT_THROW(aligned_resource(2), std::invalid_argument);
}

TEST(NumaResource, RejectsANodeThatDoesNotExist) { EXPECT_THROW(numa_resource(4096), std::invalid_argument); }

TEST(OverAlignedResource, RejectsNonPowerOfTwo) { EXPECT_THROW(over_aligned_resource(48), std::invalid_argument); }

TEST(Kinds, CatalogueMakesEveryNamedKindAndNothingElse) {
  for (const auto& name : host_kind_names()) {
    auto r = make_host_kind(name);
    ASSERT_NE(r, nullptr) << name;
    EXPECT_EQ(r->kind(), name);
  }
  EXPECT_EQ(make_host_kind("granite"), nullptr);
}
