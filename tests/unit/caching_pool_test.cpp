#include <atomic>
#include <cerrno>
#include <cstring>
#include <gtest/gtest.h>
#include <thread>
#include <vector>
#include <xfer/mem/caching_pool.hpp>
#include <xfer/mem/error.hpp>
#include <xfer/mem/host_resources.hpp>
#include <xfer/mem/os.hpp>

using namespace xfer::mem;

TEST(CachingPool, SizeClassesBoundRoundingWaste) {
  EXPECT_EQ(caching_pool::class_size(0), 256u);
  EXPECT_EQ(caching_pool::class_size(256), 256u);
  EXPECT_EQ(caching_pool::class_size(257), 272u);   // 256 + 256/16
  EXPECT_EQ(caching_pool::class_size(4096), 4096u);
  EXPECT_EQ(caching_pool::class_size(4097), 4352u);  // 4096 + 256
  EXPECT_EQ(caching_pool::class_size(256u << 20), 256u << 20);
  for (std::size_t n = 257; n < (1u << 22); n = n * 3 / 2 + 7) {
    const std::size_t c = caching_pool::class_size(n);
    EXPECT_GE(c, n);
    EXPECT_LT(static_cast<double>(c - n) / n, 1.0 / caching_pool::classes_per_doubling) << n;
  }
}

TEST(CachingPool, ReusesAFreedBlockAndCountsHitsAndMisses) {
  aligned_resource upstream;
  caching_pool pool(upstream);
  void* a = pool.allocate(10000, 64);
  pool.deallocate(a, 10000, 64);
  void* b = pool.allocate(9990, 64);  // same class
  EXPECT_EQ(a, b);
  const auto s = pool.stats();
  EXPECT_EQ(s.misses, 1u);
  EXPECT_EQ(s.hits, 1u);
  EXPECT_EQ(s.requested_bytes, 9990u);
  EXPECT_EQ(s.handed_out_bytes, caching_pool::class_size(10000));
  EXPECT_EQ(s.reserved_bytes, caching_pool::class_size(10000));
  EXPECT_EQ(s.cached_bytes, 0u);
  pool.deallocate(b, 9990, 64);
}

TEST(CachingPool, DifferentAlignmentsDoNotShareBlocks) {
  aligned_resource upstream;
  caching_pool pool(upstream);
  void* a = pool.allocate(1000, 16);
  pool.deallocate(a, 1000, 16);
  void* b = pool.allocate(1000, 4096);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b) % 4096, 0u);
  EXPECT_EQ(pool.stats().misses, 2u);
  pool.deallocate(b, 1000, 4096);
}

TEST(CachingPool, WasteAccountsRoundingAndCachedBlocks) {
  aligned_resource upstream;
  caching_pool pool(upstream);
  void* a = pool.allocate(4097, 64);  // class 4352
  void* b = pool.allocate(8192, 64);
  pool.deallocate(b, 8192, 64);       // cached, not live
  const auto s = pool.stats();
  EXPECT_EQ(s.requested_bytes, 4097u);
  EXPECT_EQ(s.reserved_bytes, 4352u + 8192u);
  EXPECT_EQ(s.cached_bytes, 8192u);
  EXPECT_DOUBLE_EQ(s.waste_ratio(), (4352.0 + 8192.0 - 4097.0) / 4097.0);
  EXPECT_EQ(s.peak_reserved_bytes, 4352u + 8192u);
  pool.deallocate(a, 4097, 64);
}

TEST(CachingPool, RoundingWasteIsSeparateFromIdleCache) {
  aligned_resource upstream;
  caching_pool pool(upstream);
  void* a = pool.allocate(4097, 64);
  const auto s = pool.stats();
  EXPECT_DOUBLE_EQ(s.rounding_waste_ratio(), (4352.0 - 4097.0) / 4097.0);
  pool.deallocate(a, 4097, 64);
  EXPECT_DOUBLE_EQ(pool.stats().rounding_waste_ratio(), 0.0);
}

TEST(CachingPool, IdleCacheCapSendsExcessBlocksUpstream) {
  aligned_resource upstream;
  caching_pool pool(upstream, 3 * 4096);
  std::vector<void*> ps;
  for (int i = 0; i < 5; ++i) ps.push_back(pool.allocate(4096, 64));
  for (void* p : ps) pool.deallocate(p, 4096, 64);
  const auto s = pool.stats();
  EXPECT_EQ(s.cached_bytes, 3u * 4096);
  EXPECT_EQ(s.reserved_bytes, 3u * 4096);
  EXPECT_EQ(s.upstream_frees, 2u);
}

TEST(CachingPool, TrimReturnsCachedBlocksUpstream) {
  aligned_resource upstream;
  caching_pool pool(upstream);
  std::vector<void*> ps;
  for (int i = 0; i < 8; ++i) ps.push_back(pool.allocate(1 << 16, 64));
  for (void* p : ps) pool.deallocate(p, 1 << 16, 64);
  EXPECT_EQ(pool.stats().cached_bytes, 8u << 16);
  pool.trim();
  const auto s = pool.stats();
  EXPECT_EQ(s.cached_bytes, 0u);
  EXPECT_EQ(s.reserved_bytes, 0u);
  EXPECT_EQ(s.upstream_frees, 8u);
  EXPECT_EQ(s.peak_reserved_bytes, 8u << 16);
  pool.reset_peak();
  EXPECT_EQ(pool.stats().peak_reserved_bytes, 0u);
}

TEST(CachingPool, BlockFreedWhileInUseIsReusedOnlyWhenReady) {
  aligned_resource upstream;
  caching_pool pool(upstream);
  bool transfer_done = false;
  void* a = pool.allocate(1 << 20, 64);
  pool.deallocate_after(a, 1 << 20, 64, [&] { return transfer_done; });
  void* b = pool.allocate(1 << 20, 64);
  EXPECT_NE(a, b);  // still in flight: a fresh block
  pool.trim();      // trim must not release the pending block either
  EXPECT_EQ(pool.stats().reserved_bytes, 2u << 20);
  transfer_done = true;
  void* c = pool.allocate(1 << 20, 64);
  EXPECT_EQ(a, c);
  pool.deallocate(b, 1 << 20, 64);
  pool.deallocate(c, 1 << 20, 64);
}

TEST(CachingPool, UpstreamFailureThrowsAndLeavesThePoolConsistent) {
  aligned_resource upstream;
  caching_pool pool(upstream);
  void* keep = pool.allocate(1000, 64);
  const auto before = pool.stats();
  os_calls failing = real_os();
  failing.posix_memalign = [](void**, std::size_t, std::size_t) { return ENOMEM; };
  {
    scoped_os_override guard(failing);
    try {
      (void)pool.allocate(12345, 64);
      FAIL();
    } catch (const allocation_error& e) {
      EXPECT_EQ(e.bytes(), 12345u);
      EXPECT_NE(std::string(e.what()).find("pool:aligned"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("Cannot allocate memory"), std::string::npos) << e.what();
    }
  }
  const auto after = pool.stats();
  EXPECT_EQ(after.requested_bytes, before.requested_bytes);
  EXPECT_EQ(after.reserved_bytes, before.reserved_bytes);
  EXPECT_EQ(after.misses, before.misses);
  pool.deallocate(keep, 1000, 64);
}

TEST(CachingPool, BadAlignmentIsRefused) {
  aligned_resource upstream;
  caching_pool pool(upstream);
  EXPECT_THROW((void)pool.allocate(100, 3), allocation_error);
  EXPECT_EQ(pool.stats().reserved_bytes, 0u);
}

// Concurrent allocate/free: no block is ever handed to two owners at once,
// and the books balance at the end.
TEST(CachingPool, ThreadSafeUnderConcurrentAllocateAndFree) {
  aligned_resource upstream;
  caching_pool pool(upstream);
  std::atomic<int> corrupted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) {
        const std::size_t n = 256 + (i * 37 + t * 101) % 5000;
        auto* p = static_cast<unsigned char*>(pool.allocate(n, 64));
        std::memset(p, t + 1, n);
        std::this_thread::yield();
        for (std::size_t k = 0; k < n; k += 97)
          if (p[k] != t + 1) ++corrupted;
        pool.deallocate(p, n, 64);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(corrupted.load(), 0);
  const auto s = pool.stats();
  EXPECT_EQ(s.requested_bytes, 0u);
  EXPECT_EQ(s.handed_out_bytes, 0u);
  EXPECT_EQ(s.reserved_bytes, s.cached_bytes);
  EXPECT_EQ(s.hits + s.misses, 8000u);
}
