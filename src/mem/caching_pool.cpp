#include <bit>
#include <chrono>
#include <fmt/format.h>
#include <limits>
#include <xfer/mem/caching_pool.hpp>
#include <xfer/mem/error.hpp>

namespace xfer::mem {
namespace {

using clock = std::chrono::steady_clock;
double seconds_since(clock::time_point t0) { return std::chrono::duration<double>(clock::now() - t0).count(); }

}  // namespace

double pool_stats::rounding_waste_ratio() const noexcept {
  return requested_bytes ? static_cast<double>(handed_out_bytes - requested_bytes) / requested_bytes : 0.0;
}

double pool_stats::waste_ratio() const noexcept {
  return requested_bytes ? static_cast<double>(reserved_bytes - requested_bytes) / requested_bytes : 0.0;
}

caching_pool::caching_pool(host_resource& upstream, std::size_t max_cached_bytes)
    : upstream_(upstream), max_cached_bytes_(max_cached_bytes), name_(fmt::format("pool:{}", upstream.kind())) {}

caching_pool::~caching_pool() {
  // Whoever destroys the pool vouches that the device is done with every
  // block, pending ones included.
  // Straight back upstream: moving them to the free lists first could need
  // memory, and a destructor must not throw.
  for (auto& b : pending_) release_upstream(b.p, b.k);
  pending_.clear();
  for (auto& [k, blocks] : free_)
    for (void* p : blocks) release_upstream(p, k);
}

std::size_t caching_pool::class_size(std::size_t bytes) noexcept {
  if (bytes <= min_class) return min_class;
  const unsigned e = std::bit_width(bytes) - 1;  // 2^e <= bytes < 2^(e+1)
  const std::size_t step = (std::size_t{1} << e) / classes_per_doubling;
  if (bytes > std::numeric_limits<std::size_t>::max() - step) return bytes;  // upstream will refuse it anyway
  return (bytes + step - 1) / step * step;
}

std::string caching_pool::describe() const {
  return fmt::format("caching pool over {} (classes 1/{} of a doubling apart)", upstream_.kind(), classes_per_doubling);
}

void* caching_pool::do_allocate(std::size_t bytes, std::size_t alignment) {
  const key k{class_size(bytes), alignment};
  promote_ready();
  {
    std::lock_guard lock(mutex_);
    auto it = free_.find(k);
    if (it != free_.end() && !it->second.empty()) {
      void* p = it->second.back();
      it->second.pop_back();
      ++stats_.hits;
      stats_.cached_bytes -= k.first;
      stats_.handed_out_bytes += k.first;
      stats_.requested_bytes += bytes;
      return p;
    }
  }
  // A miss goes upstream outside the lock: pinning can take milliseconds.
  const auto t0 = clock::now();
  void* p = nullptr;
  try {
    p = upstream_.allocate(k.first, alignment);
  } catch (const allocation_error& e) {
    throw allocation_error(name_, bytes, e.cause());  // the caller's size, not the class's
  }
  const double dt = seconds_since(t0);
  std::lock_guard lock(mutex_);
  ++stats_.misses;
  stats_.upstream_seconds += dt;
  stats_.reserved_bytes += k.first;
  stats_.peak_reserved_bytes = std::max(stats_.peak_reserved_bytes, stats_.reserved_bytes);
  stats_.handed_out_bytes += k.first;
  stats_.requested_bytes += bytes;
  return p;
}

void caching_pool::do_deallocate(void* p, std::size_t bytes, std::size_t alignment) noexcept {
  const key k{class_size(bytes), alignment};
  std::unique_lock lock(mutex_);
  stats_.handed_out_bytes -= k.first;
  stats_.requested_bytes -= bytes;
  stats_.cached_bytes += k.first;
  bool keep = stats_.cached_bytes <= max_cached_bytes_;
  if (keep) {
    try {
      free_[k].push_back(p);
    } catch (...) {  // no memory to remember the block: give it back instead
      keep = false;
    }
  }
  if (!keep) {
    lock.unlock();
    release_upstream(p, k);
  }
}

void caching_pool::deallocate_after(void* p, std::size_t bytes, std::size_t alignment, std::function<bool()> ready) {
  const key k{class_size(bytes), alignment};
  std::lock_guard lock(mutex_);
  pending_.push_back({p, k, std::move(ready)});
  stats_.handed_out_bytes -= k.first;
  stats_.requested_bytes -= bytes;
  stats_.cached_bytes += k.first;
}

void caching_pool::promote_ready() {
  // Take the pending blocks out and ask them without the lock: ready() may
  // call back into the pool, and may be slow. Meanwhile other threads see
  // neither these blocks nor a second chance to poll them (no double calls).
  std::list<pending_block> polled;
  {
    std::lock_guard lock(mutex_);
    polled.splice(polled.end(), pending_);
  }
  if (polled.empty()) return;
  std::list<pending_block> ready;
  for (auto it = polled.begin(); it != polled.end();) {
    bool is_ready = false;
    try {
      is_ready = it->ready();
    } catch (...) {
      // Not ready (see deallocate_after): never hand out or free memory the
      // device may still use, and never let a callback's error escape the
      // allocate() or trim() that happened to poll it.
    }
    auto next = std::next(it);
    if (is_ready) ready.splice(ready.end(), polled, it);
    it = next;
  }
  std::list<pending_block> release;  // to go upstream once the lock is dropped
  {
    std::lock_guard lock(mutex_);
    pending_.splice(pending_.end(), polled);
    // stats_.cached_bytes counts every pending block, these included, until
    // release_upstream() takes them off: count down locally meanwhile.
    std::size_t cached = stats_.cached_bytes;
    for (auto it = ready.begin(); it != ready.end();) {
      auto next = std::next(it);
      bool keep = cached <= max_cached_bytes_;  // over the cap: upstream, not the cache
      if (keep) {
        try {
          free_[it->k].push_back(it->p);
        } catch (...) {  // no memory to remember the block: give it back instead
          keep = false;
        }
      }
      if (!keep) {
        cached -= it->k.first;
        release.splice(release.end(), ready, it);
      }
      it = next;
    }
  }
  for (auto& b : release) release_upstream(b.p, b.k);
}

void caching_pool::trim() {
  promote_ready();
  std::map<key, std::vector<void*>> release;
  {
    std::lock_guard lock(mutex_);
    release.swap(free_);
  }
  for (auto& [k, blocks] : release)
    for (void* p : blocks) release_upstream(p, k);
}

void caching_pool::release_upstream(void* p, key k) noexcept {
  const auto t0 = clock::now();
  upstream_.deallocate(p, k.first, k.second);
  const double dt = seconds_since(t0);
  std::lock_guard lock(mutex_);
  stats_.upstream_seconds += dt;
  ++stats_.upstream_frees;
  stats_.reserved_bytes -= k.first;
  stats_.cached_bytes -= k.first;
}

void caching_pool::reset_peak() {
  std::lock_guard lock(mutex_);
  stats_.peak_reserved_bytes = stats_.reserved_bytes;
}

pool_stats caching_pool::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

}  // namespace xfer::mem
