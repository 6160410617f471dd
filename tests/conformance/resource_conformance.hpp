#pragma once
// The one conformance suite every host memory resource passes (rmm's
// mr_ref_test shape). A test binary includes this once and instantiates
// ResourceConformance with its own resource_cases: tests/conformance for the
// library's kinds, tests/cuda and tests/opencl for the device APIs' kinds
// (whose factories say why not where no device is present, and the tests skip).
#include <cstdint>
#include <cstring>
#include <functional>
#include <gtest/gtest.h>
#include <limits>
#include <memory>
#include <memory_resource>
#include <ostream>
#include <string>
#include <vector>
#include <xfer/mem/caching_pool.hpp>
#include <xfer/mem/error.hpp>
#include <xfer/mem/resource.hpp>

namespace xfer::test {

struct resource_case {
  std::string name;
  // The resource, or nullptr with why_not set when it cannot exist here.
  std::function<std::unique_ptr<mem::host_resource>(std::string& why_not)> make;
  // Runs after each test (e.g. a leak check); may be empty.
  std::function<void(mem::host_resource&)> after = {};
};

// A caching pool owning the upstream it borrows, as one resource, so a pool
// can be a conformance case like any other.
struct owned_pool final : mem::host_resource {
  explicit owned_pool(std::unique_ptr<mem::host_resource> up) : upstream(std::move(up)), pool(*upstream) {}
  std::unique_ptr<mem::host_resource> upstream;
  mem::caching_pool pool;
  std::string_view kind() const noexcept override { return pool.kind(); }
  mem::properties props() const noexcept override { return pool.props(); }
  std::size_t max_alignment() const noexcept override { return pool.max_alignment(); }
  std::size_t natural_alignment() const noexcept override { return pool.natural_alignment(); }
  std::string describe() const override { return pool.describe(); }

 private:
  void* do_allocate(std::size_t n, std::size_t a) override { return pool.allocate(n, a); }
  void do_deallocate(void* p, std::size_t n, std::size_t a) noexcept override { pool.deallocate(p, n, a); }
};

inline void PrintTo(const resource_case& c, std::ostream* os) { *os << c.name; }

inline std::string case_name(const ::testing::TestParamInfo<resource_case>& info) {
  std::string n = info.param.name;
  for (char& c : n)
    if (c == '-' || c == ':') c = '_';
  return n;
}

inline bool aligned_to(const void* p, std::size_t a) { return reinterpret_cast<std::uintptr_t>(p) % a == 0; }

class ResourceConformance : public ::testing::TestWithParam<resource_case> {
 protected:
  void SetUp() override {
    std::string why;
    r = GetParam().make(why);
    if (!r) GTEST_SKIP() << why;
  }
  void TearDown() override {
    if (r && GetParam().after) GetParam().after(*r);
  }
  std::unique_ptr<mem::host_resource> r;
};

TEST_P(ResourceConformance, NaturalAlignmentHonoured) {
  for (std::size_t n : {1u, 7u, 4096u, 100000u}) {
    void* p = r->allocate(n, 1);
    EXPECT_TRUE(aligned_to(p, r->natural_alignment())) << n;
    r->deallocate(p, n, 1);
  }
}

// With many small blocks alive at once, as in a pool or a real program: an
// allocator that packs small requests must still honour the alignment.
TEST_P(ResourceConformance, NaturalAlignmentHonouredWithBlocksAlive) {
  std::vector<std::pair<void*, std::size_t>> live;
  for (std::size_t n = 200; n < 3000; n += 37) {
    void* p = r->allocate(n, 1);
    EXPECT_TRUE(aligned_to(p, r->natural_alignment())) << n << " bytes with " << live.size() << " blocks alive";
    live.emplace_back(p, n);
  }
  for (auto [p, n] : live) r->deallocate(p, n, 1);
}

TEST_P(ResourceConformance, EveryAlignmentUpToMaxHonoured) {
  for (std::size_t a = 1; a <= r->max_alignment(); a *= 2) {
    void* p = r->allocate(100, a);
    EXPECT_TRUE(aligned_to(p, a)) << "alignment " << a;
    r->deallocate(p, 100, a);
  }
}

// The error names the refused alignment: the size alone would not say why.
TEST_P(ResourceConformance, OverMaxOrNonPowerOfTwoAlignmentThrows) {
  for (std::size_t a : {r->max_alignment() * 2, std::size_t{3}}) {
    try {
      (void)r->allocate(64, a);
      FAIL() << "accepted alignment " << a;
    } catch (const mem::allocation_error& e) {
      EXPECT_EQ(e.bytes(), 64u);
      EXPECT_NE(std::string(e.what()).find("alignment " + std::to_string(a)), std::string::npos) << e.what();
    }
  }
}

TEST_P(ResourceConformance, WritableAcrossSizes) {
  for (std::size_t n = 1; n <= (std::size_t{64} << 20); n *= 8) {
    auto* p = static_cast<unsigned char*>(r->allocate(n, 1));
    std::memset(p, 0xA5, n);
    EXPECT_EQ(p[0], 0xA5);
    EXPECT_EQ(p[n - 1], 0xA5);
    r->deallocate(p, n, 1);
  }
}

TEST_P(ResourceConformance, ZeroSizeGivesAUniqueFreeablePointer) {
  void* a = r->allocate(0, 1);
  void* b = r->allocate(0, 1);
  EXPECT_NE(a, nullptr);
  EXPECT_NE(a, b);
  r->deallocate(a, 0, 1);
  r->deallocate(b, 0, 1);
}

TEST_P(ResourceConformance, AbsurdSizeThrowsAllocationErrorNamingSizeAndKind) {
  for (std::size_t n : {std::numeric_limits<std::size_t>::max(), std::numeric_limits<std::size_t>::max() / 2,
                        std::size_t{1} << 60}) {
    try {
      (void)r->allocate(n, 1);
      FAIL() << "allocated " << n;
    } catch (const mem::allocation_error& e) {
      EXPECT_EQ(e.bytes(), n);
      EXPECT_NE(std::string(e.what()).find(std::string(r->kind())), std::string::npos) << e.what();
    }
  }
}

TEST_P(ResourceConformance, ServesPmrContainers) {
  std::pmr::vector<double> v(r.get());
  for (int i = 0; i < 10000; ++i) v.push_back(i);
  EXPECT_EQ(v[9999], 9999.0);
}

TEST_P(ResourceConformance, DistinctAllocationsDoNotOverlap) {
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

}  // namespace xfer::test
