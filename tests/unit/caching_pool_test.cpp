#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <future>
#include <memory>
#include <stdexcept>
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

namespace {

// Runs body on its own thread and says whether it finished within the limit.
// A deadlocked body can be neither joined nor cancelled: its thread is
// detached and whatever it references must outlive the test (the callers
// leak their pool on purpose when this returns false).
bool finishes_within(std::chrono::seconds limit, std::function<void()> body) {
  auto done = std::make_shared<std::promise<void>>();
  auto finished = done->get_future();
  std::thread([done, body = std::move(body)] {
    body();
    done->set_value();
  }).detach();
  return finished.wait_for(limit) == std::future_status::ready;
}

}  // namespace

// A ready() that throws (a failed event query, say) must neither escape
// allocate()/trim() nor lose the block: it counts as not ready, and the block
// is reused once ready() answers true.
TEST(CachingPool, ThrowingReadyCallbackIsNotReadyAndKeepsTheBlock) {
  aligned_resource upstream;
  caching_pool pool(upstream);
  bool throwing = true;
  int calls = 0;
  void* a = pool.allocate(1 << 16, 64);
  pool.deallocate_after(a, 1 << 16, 64, [&] {
    ++calls;
    if (throwing) throw std::runtime_error("event query failed");
    return true;
  });
  void* b = nullptr;
  EXPECT_NO_THROW(b = pool.allocate(1 << 16, 64));
  EXPECT_NE(a, b);  // not ready: a fresh block
  EXPECT_NO_THROW(pool.trim());
  EXPECT_GE(calls, 2);
  auto s = pool.stats();
  EXPECT_EQ(s.reserved_bytes, 2u << 16);  // the pending block is still held, not released or lost
  EXPECT_EQ(s.cached_bytes, 1u << 16);
  throwing = false;
  void* c = pool.allocate(1 << 16, 64);
  EXPECT_EQ(a, c);
  pool.deallocate(b, 1 << 16, 64);
  pool.deallocate(c, 1 << 16, 64);
  s = pool.stats();
  EXPECT_EQ(s.upstream_frees, 0u);
  EXPECT_EQ(s.reserved_bytes, s.cached_bytes);
}

// A ready() may use the pool (free a companion block, read the stats, trim):
// it runs outside the pool's lock, so this must not deadlock. Bounded in time
// so that a regression fails instead of hanging the suite.
TEST(CachingPool, ReadyCallbackMayCallBackIntoThePool) {
  auto upstream = std::make_unique<aligned_resource>();
  auto pool = std::make_unique<caching_pool>(*upstream);
  void* result = nullptr;
  const bool finished = finishes_within(std::chrono::seconds(10), [&, p = pool.get()] {
    void* a = p->allocate(1 << 16, 64);
    void* companion = p->allocate(4096, 64);
    p->deallocate_after(a, 1 << 16, 64, [p, &companion] {
      if (companion) {
        p->deallocate(companion, 4096, 64);
        companion = nullptr;
      }
      (void)p->stats();
      p->trim();
      return true;
    });
    result = p->allocate(1 << 16, 64);  // polls ready(), which re-enters
    EXPECT_EQ(result, a);
    EXPECT_EQ(companion, nullptr);
    p->trim();  // ready() is not polled again: a is handed out
  });
  if (!finished) {
    (void)pool.release();  // still locked by the stuck thread: leak rather than destroy
    (void)upstream.release();
    FAIL() << "a ready() callback calling back into the pool deadlocked";
  }
  pool->deallocate(result, 1 << 16, 64);
  const auto s = pool->stats();
  EXPECT_EQ(s.requested_bytes, 0u);
  EXPECT_EQ(s.reserved_bytes, s.cached_bytes);
}

// The idle-cache cap counts pending blocks too: a pending block cannot go
// upstream while the device may use it, but once ready it is released
// rather than cached when the cache is over the cap.
TEST(CachingPool, IdleCacheCapCountsPendingBlocks) {
  aligned_resource upstream;
  caching_pool pool(upstream, 2 * 4096);
  bool done = false;
  std::vector<void*> ps;
  for (int i = 0; i < 5; ++i) ps.push_back(pool.allocate(4096, 64));
  for (void* p : ps) pool.deallocate_after(p, 4096, 64, [&] { return done; });
  EXPECT_EQ(pool.stats().upstream_frees, 0u);  // none may go upstream before it is ready
  done = true;
  void* again = pool.allocate(4096, 64);  // promotes the five: two cached, three released
  auto s = pool.stats();
  EXPECT_EQ(s.hits, 1u);
  EXPECT_EQ(s.upstream_frees, 3u);
  EXPECT_EQ(s.cached_bytes, 4096u);
  EXPECT_EQ(s.reserved_bytes, 2u * 4096);
  // A plain free while pending blocks fill the cap goes straight upstream.
  bool later = false;
  void* x = pool.allocate(4096, 64);  // the last cached block
  void* y = pool.allocate(4096, 64);  // from upstream
  pool.deallocate_after(x, 4096, 64, [&] { return later; });
  pool.deallocate_after(again, 4096, 64, [&] { return later; });
  pool.deallocate(y, 4096, 64);
  s = pool.stats();
  EXPECT_EQ(s.upstream_frees, 4u);
  EXPECT_LE(s.cached_bytes, 2u * 4096);
  later = true;
  pool.trim();
  s = pool.stats();
  EXPECT_EQ(s.cached_bytes, 0u);
  EXPECT_EQ(s.reserved_bytes, 0u);
}

// Pending blocks polled without the lock while other threads allocate, free
// and trim: each block is handed to one owner at a time, none is lost, and
// the books balance at the end.
TEST(CachingPool, ThreadSafeWithPendingBlocks) {
  aligned_resource upstream;
  caching_pool pool(upstream, 64 * 4096);
  std::atomic<int> corrupted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 1000; ++i) {
        const std::size_t n = 256 + (i * 53 + t * 211) % 8000;
        auto* p = static_cast<unsigned char*>(pool.allocate(n, 64));
        std::memset(p, t + 1, n);
        std::this_thread::yield();
        for (std::size_t k = 0; k < n; k += 97)
          if (p[k] != t + 1) ++corrupted;
        if (i % 3 == 0) {
          pool.deallocate(p, n, 64);
        } else {
          // Ready on its second poll, so blocks go back to pending at times.
          pool.deallocate_after(p, n, 64, [polls = 0]() mutable { return ++polls >= 2; });
        }
        if (i % 100 == 0) pool.trim();
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(corrupted.load(), 0);
  pool.trim();
  pool.trim();  // the second poll of blocks the first found not ready
  const auto s = pool.stats();
  EXPECT_EQ(s.requested_bytes, 0u);
  EXPECT_EQ(s.handed_out_bytes, 0u);
  EXPECT_EQ(s.cached_bytes, 0u);
  EXPECT_EQ(s.reserved_bytes, 0u);
  EXPECT_EQ(s.hits + s.misses, 4000u);
}
