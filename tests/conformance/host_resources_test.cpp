// The conformance suite (resource_conformance.hpp) over the library's own
// resources, and the checks particular to them.
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

#include "resource_conformance.hpp"

using namespace xfer::mem;
using xfer::test::aligned_to;
using xfer::test::resource_case;

// Declared properties are compile-time facts.
static_assert(pageable_resource::declared.host_accessible && !pageable_resource::declared.pinned);
static_assert(!unaligned_resource::declared.device_accessible);
static_assert(!aligned_resource::declared.write_combined);
static_assert(huge_page_resource::declared.host_accessible && !huge_page_resource::declared.pinned);
static_assert(over_aligned_resource::declared.host_accessible && !over_aligned_resource::declared.pinned);
static_assert(mmap_resource::declared.host_accessible && numa_resource::declared.host_accessible);

namespace {

template <class Make>
resource_case library(std::string name, Make make) {
  return {std::move(name), [make](std::string&) -> std::unique_ptr<host_resource> { return make(); }};
}

}  // namespace

using xfer::test::ResourceConformance;
INSTANTIATE_TEST_SUITE_P(
    HostKinds, ResourceConformance,
    ::testing::Values(library("pageable", [] { return make_host_kind("pageable"); }),
                      library("unaligned", [] { return make_host_kind("pageable-unaligned"); }),
                      library("unaligned_offset_8", [] { return std::make_unique<unaligned_resource>(8); }),
                      library("aligned", [] { return make_host_kind("aligned"); }),
                      library("aligned_64", [] { return std::make_unique<aligned_resource>(64); }),
                      library("aligned_2M", [] { return std::make_unique<aligned_resource>(2 << 20); }),
                      library("huge", [] { return make_host_kind("huge"); }),
                      library("over_aligned", [] { return std::make_unique<over_aligned_resource>(); }),
                      library("over_aligned_64", [] { return std::make_unique<over_aligned_resource>(64); }),
                      library("mmap", [] { return std::make_unique<mmap_resource>(); }),
                      library("numa0", [] { return std::make_unique<numa_resource>(0); }),
                      library("pool_over_aligned", [] {
                        return std::make_unique<xfer::test::owned_pool>(std::make_unique<over_aligned_resource>(4096));
                      })),
    xfer::test::case_name);

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

TEST(AlignedResource, BoundedByTheLargestPage) {
  EXPECT_NO_THROW(aligned_resource(aligned_resource::max_alignment_bound));
  EXPECT_THROW(aligned_resource(aligned_resource::max_alignment_bound * 2), std::invalid_argument);
  EXPECT_THROW(aligned_resource(std::size_t{1} << 40), std::invalid_argument);
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
