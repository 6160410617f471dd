#pragma once
// A caching pool over an expensive upstream (pinned memory above all: pinning
// 256 MiB takes ~100 ms, re-acquiring a cached block takes microseconds).
//
// Sizes round up to classes 1/16 of a power of two apart (so rounding wastes
// under 6.25% of a request, against up to 50% for power-of-two classes).
// Freed blocks are kept per (class, alignment) and handed out again; trim()
// returns them upstream. A block freed while a device may still read it
// (deallocate_after) is reused only once its ready() says so.
//
// ready() callbacks run outside the pool's lock: a callback may call back
// into the pool (free a companion block, read the stats) without deadlock,
// and a slow one (a driver query) holds up no other thread's allocation.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <list>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>
#include <xfer/mem/resource.hpp>

namespace xfer::mem {

struct pool_stats {
  std::size_t requested_bytes = 0;       // live bytes as asked for
  std::size_t handed_out_bytes = 0;      // live bytes after class rounding
  std::size_t cached_bytes = 0;          // free blocks held for reuse (pending ones included)
  std::size_t reserved_bytes = 0;        // everything held from upstream: handed out + cached
  std::size_t peak_reserved_bytes = 0;
  std::uint64_t hits = 0, misses = 0;    // allocations served from the cache / from upstream
  std::uint64_t upstream_frees = 0;
  double upstream_seconds = 0;           // time spent in upstream allocate and deallocate
  // (handed out - requested) / requested: what class rounding costs the
  // live blocks. Bounded by 1/classes_per_doubling. 0 when nothing is live.
  double rounding_waste_ratio() const noexcept;
  // (reserved - requested) / requested: everything held beyond what was asked
  // for, rounding and idle cached blocks together.
  double waste_ratio() const noexcept;
};

class caching_pool final : public host_resource {
 public:
  static constexpr unsigned classes_per_doubling = 16;
  static constexpr std::size_t min_class = 256;

  // max_cached_bytes bounds the idle cache, pending blocks included (they
  // hold memory just the same): a block freed beyond it goes straight back
  // upstream (trading misses for memory). A pending block cannot (the device
  // may still use it), so it is held even over the cap, and once ready it is
  // returned upstream rather than cached while the cache is over the cap.
  explicit caching_pool(host_resource& upstream, std::size_t max_cached_bytes = SIZE_MAX);
  ~caching_pool() override;  // returns every cached block upstream
  caching_pool(const caching_pool&) = delete;
  caching_pool& operator=(const caching_pool&) = delete;

  // The size a request is served with.
  static std::size_t class_size(std::size_t bytes) noexcept;

  // Frees a block that may still be in use by the device: it is cached now
  // but reused only once ready() returns true (e.g. a CUDA event completed).
  // ready() is polled by later allocate() and trim() calls, never by two
  // threads at once, and may call into the pool. If it throws, the block
  // counts as not ready and is polled again next time: reusing or freeing
  // memory a device may still read would corrupt data, while holding it only
  // costs memory (the destructor releases it in any case).
  void deallocate_after(void* p, std::size_t bytes, std::size_t alignment, std::function<bool()> ready);
  // Returns every cached block whose ready() holds to upstream.
  void trim();
  pool_stats stats() const;
  // Restarts peak_reserved_bytes from what is reserved now (between workloads).
  void reset_peak();

  std::string_view kind() const noexcept override { return name_; }
  properties props() const noexcept override { return upstream_.props(); }
  std::size_t max_alignment() const noexcept override { return upstream_.max_alignment(); }
  std::size_t natural_alignment() const noexcept override { return upstream_.natural_alignment(); }
  std::string describe() const override;

 private:
  using key = std::pair<std::size_t, std::size_t>;  // (class size, alignment)
  struct pending_block {
    void* p;
    key k;
    std::function<bool()> ready;
  };

  void* do_allocate(std::size_t bytes, std::size_t alignment) override;
  void do_deallocate(void* p, std::size_t bytes, std::size_t alignment) noexcept override;
  void promote_ready();  // pending blocks whose ready() holds become free (call without the lock)
  void release_upstream(void* p, key k) noexcept;

  host_resource& upstream_;
  std::size_t max_cached_bytes_;
  std::string name_;
  mutable std::mutex mutex_;
  std::map<key, std::vector<void*>> free_;
  // A list so that blocks move out for polling and back without allocating
  // (splice cannot fail, so no block is ever dropped on the way).
  std::list<pending_block> pending_;
  pool_stats stats_;
};

}  // namespace xfer::mem
