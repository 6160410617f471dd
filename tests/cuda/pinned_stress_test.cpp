// The pinned kinds keep their promise under the allocation pattern of a
// long-lived process: 10,000 blocks of random sizes from 1 B to 8 MiB per
// kind and API, up to 32 alive at once and freed in random order, each one
// page-aligned and usable over its whole length by a copy both ways; at the
// end nothing is left allocated (the resource's table, the pool's books, the
// device's free memory). Before the fix, CUDA 13 handed out blocks at +0x200
// into a page once other pinned blocks were alive.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fmt/format.h>
#include <random>
#include <stdexcept>
#include <vector>
#include <xfer/mem/caching_pool.hpp>
#include <xfer/mem/os.hpp>

#include "cuda/kernels.hpp"
#include "cuda/resources.hpp"
#include "gpu.hpp"

using namespace xfer;
using namespace xfer::cuda;

namespace {

constexpr int blocks_per_kind = 10'000;
constexpr std::size_t max_alive = 32;
constexpr std::size_t max_block = std::size_t{8} << 20;

struct stress_case {
  std::string backend, kind;
};

struct live_block {
  void* p;
  std::size_t n;
};

// Sizes spread evenly over the powers of two from 1 B to 8 MiB (a uniform
// draw would make almost every block megabytes long and never test the
// small ones the CUDA allocator packs together).
std::size_t random_size(std::mt19937_64& rng) {
  std::uniform_real_distribution<double> exponent(0.0, 23.0);
  return std::max<std::size_t>(1, std::min(max_block, static_cast<std::size_t>(std::exp2(exponent(rng)))));
}

class PinnedStress : public ::testing::TestWithParam<stress_case> {
 protected:
  void SetUp() override {
    XFER_REQUIRE_GPU();
    api_ = &test::gpu().backend(GetParam().backend)->cuda_api();
    api_->make_current(0);
    kind_ = make_host_kind(GetParam().kind, *api_, {});
    ASSERT_NE(kind_, nullptr);
  }

  // The whole block is written by one copy and read by another: the device
  // writes a pattern, it comes down into the block, goes back up into a
  // poisoned device buffer and is checked there. A block the API gave out
  // short, or shared with a live one, fails the check. (All on the device:
  // checking 5 GB per kind on the CPU would make this test minutes long.)
  void round_trip(const live_block& b, std::uint64_t seed, void* down, void* up, std::uint64_t* first_bad) {
    const int sms = api_->attributes(0).multiprocessors;
    kernels::write_pattern(nullptr, down, b.n, seed, sms);
    api_->synchronize();
    api_->copy(b.p, down, b.n, copy_kind::d2h);
    api_->fill_device(up, 0, b.n);
    api_->copy(up, b.p, b.n, copy_kind::h2d);
    api_->fill_device(first_bad, 0xFF, sizeof *first_bad);
    kernels::find_pattern_mismatch(nullptr, up, b.n, seed, first_bad, sms);
    api_->synchronize();
    std::uint64_t at = 0;
    api_->copy(&at, first_bad, sizeof at, copy_kind::d2h);
    if (at != ~std::uint64_t{0})
      throw std::runtime_error(fmt::format("byte {} of {} differs after the round trip", at, b.n));
  }

  api* api_ = nullptr;
  std::unique_ptr<mem::host_resource> kind_;
};

}  // namespace

TEST_P(PinnedStress, TenThousandRandomBlocksArePageAlignedUsableAndFreed) {
  std::size_t free_before = 0, free_after = 0, total = 0;
  api_->memory_info(free_before, total);
  std::mt19937_64 rng(0x5eed + GetParam().kind.size());
  device_buffer down(*api_, max_block), up(*api_, max_block), first_bad(*api_, sizeof(std::uint64_t));
  std::vector<live_block> alive;
  const std::size_t page = mem::page_size();
  std::size_t misaligned = 0;
  const auto free_one = [&] {
    const std::size_t i = std::uniform_int_distribution<std::size_t>(0, alive.size() - 1)(rng);
    kind_->deallocate(alive[i].p, alive[i].n, 1);
    alive[i] = alive.back();
    alive.pop_back();
  };
  for (int made = 0; made < blocks_per_kind;) {
    if (alive.size() == max_alive || (!alive.empty() && rng() % 3 == 0)) {
      free_one();
      continue;
    }
    const std::size_t n = random_size(rng);
    live_block b{kind_->allocate(n, 1), n};
    alive.push_back(b);
    ++made;
    if (reinterpret_cast<std::uintptr_t>(b.p) % page != 0) {
      if (++misaligned <= 3) ADD_FAILURE() << fmt::format("block {} of {} B at {} is not page-aligned", made, n, b.p);
      continue;
    }
    ASSERT_NO_THROW(round_trip(b, made, down.data(), up.data(), static_cast<std::uint64_t*>(first_bad.data())))
        << "block " << made << " of " << n << " B";
  }
  while (!alive.empty()) free_one();
  EXPECT_EQ(misaligned, 0u);
  if (const auto* pinned = dynamic_cast<const pinned_host_resource*>(kind_.get())) {
    EXPECT_EQ(pinned->live_blocks(), 0u);
  }
  down = device_buffer();
  up = device_buffer();
  first_bad = device_buffer();
  api_->memory_info(free_after, total);
  EXPECT_EQ(free_after, free_before) << "device memory leaked";
}

// The same pattern through a caching pool: its books balance at the end, and
// trimming hands every block back to the kind. (The pool is the same code
// over either API: the runtime's kinds suffice.)
TEST_P(PinnedStress, ThroughAPoolTheBooksBalance) {
  if (GetParam().backend != "cuda-rt") GTEST_SKIP() << "the pool over cuda-rt's kinds covers it";
  mem::caching_pool pool(*kind_);
  std::mt19937_64 rng(0xb00c + GetParam().kind.size());
  std::vector<live_block> alive;
  const std::size_t page = mem::page_size();
  for (int made = 0; made < blocks_per_kind;) {
    if (alive.size() == max_alive || (!alive.empty() && rng() % 3 == 0)) {
      const std::size_t i = std::uniform_int_distribution<std::size_t>(0, alive.size() - 1)(rng);
      pool.deallocate(alive[i].p, alive[i].n, 1);
      alive[i] = alive.back();
      alive.pop_back();
      continue;
    }
    const std::size_t n = random_size(rng);
    alive.push_back({pool.allocate(n, page), n});
    ++made;
    ASSERT_EQ(reinterpret_cast<std::uintptr_t>(alive.back().p) % page, 0u) << n << " B from the pool";
    static_cast<unsigned char*>(alive.back().p)[n - 1] = 0x5A;  // the last byte is there
  }
  for (const auto& b : alive) pool.deallocate(b.p, b.n, 1);
  const mem::pool_stats s = pool.stats();
  EXPECT_EQ(s.requested_bytes, 0u);
  EXPECT_EQ(s.handed_out_bytes, 0u);
  pool.trim();
  EXPECT_EQ(pool.stats().reserved_bytes, 0u);
  if (const auto* pinned = dynamic_cast<const pinned_host_resource*>(kind_.get())) {
    EXPECT_EQ(pinned->live_blocks(), 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(CudaPinnedKinds, PinnedStress,
                         ::testing::ValuesIn([] {
                           std::vector<stress_case> cases;
                           for (const char* b : {"cuda-rt", "cuda-drv"})
                             for (const char* k : {"pinned", "pinned-wc", "mapped", "registered"}) cases.push_back({b, k});
                           return cases;
                         }()),
                         [](const auto& info) {
                           std::string n = info.param.backend + "_" + info.param.kind;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });
