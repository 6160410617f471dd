#pragma once
// Reused buffers pay for pinning once (issue 37, item 5): an opt-in cache of
// host memory registrations for the staged copier. A program that copies the
// same pageable buffer again and again hands its copier a cache; the second
// copy of a buffer registers (pins) it, and that copy and every later one
// goes as one plain async copy from the registered memory, at pinned speed,
// with no staging and no CPU copy.
//
//   xfer::mem::registration_cache cache(step, {.max_pinned_bytes = 4ull << 30});
//   xfer::mem::staged_copier copier(step, {.registrations = &cache});
//   for (...) copier.copy_to_device(dev, 0, batch.data(), batch.size());  // 2nd and later: pinned
//   cache.forget(batch.data(), batch.size());  // before freeing batch
//
// When a buffer is registered: on its second copy (the same address and
// size twice among the last max_candidates copies), not its first. A copy
// made once never pays for pinning (registering costs about as much as the
// copy itself, and pinned pages are taken from the rest of the machine); a
// buffer copied twice is likely to be copied again. The first copy is
// staged as without the cache, and it leaves every page of the buffer
// resident, so the registration only pins them. Only copies at or above the
// copier's handoff size consult the cache (below it the plain copy already
// serves). policy::explicit_only registers only what pin() was given (the
// Python binding's mode: it knows exactly when an array goes).
//
// When a registration is dropped (unregistered):
// - evicted: registering another buffer would pass max_pinned_bytes; the
//   least recently copied registrations go first (never one a copy is using);
// - forgotten: the caller calls forget() for a range before freeing or
//   remapping it. This is the rule: memory in the cache must be forgotten
//   before it is freed, munmapped, madvise(MADV_DONTNEED)ed or remapped;
// - found stale: checked before every copy from a registration.
//
// What the stale check detects, and what it does not. A buffer freed and
// another allocated at the same address would leave the registration on the
// old pages, and a copy "from" the new buffer would silently move the old
// bytes. Before each registered copy the cache asks the OS (mincore) whether
// every page of the registration is resident (a pinned page always is) and
// asks the device step whether the API still holds the registration (CUDA:
// the driver's pointer attributes). Detected: the range unmapped; the range
// (or part of it) given back with MADV_DONTNEED or remapped and not yet
// written in full; the registration dropped behind the cache's back (the
// program called cudaHostUnregister). NOT detected: a buffer freed and a new
// one at the same address whose every page has been written before the
// copy. The check cannot tell those pages from the registered ones: hence
// the cache is opt-in and forget() is the caller's duty. A stale
// registration found is unregistered and the copy staged (counted in
// stats().stale).
//
// Faults: a refused registration (the locked-memory limit, ulimit -l; an
// error from cudaHostRegister; a range sharing a page with another
// registration) is not an error of the copy: the copy is staged, the cause
// kept in stats().last_refusal, and that range is not tried again until it
// is forgotten or falls out of the candidates. pin() throws
// registration_error instead. Nothing leaks: every registration is
// unregistered by eviction, forget(), clear() or the destructor.
//
// Thread-safe: several copiers (of the one step) may share a cache. The
// cache must outlive every copier given it, and the step the cache.
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace xfer::mem {

class device_step;

struct registration_cache_options {
  enum class policy {
    second_use,     // a range's second copy registers it
    explicit_only,  // only pin() registers
  };
  // The most bytes registered at once (whole pages). 0: the default, 1 GiB
  // or a quarter of the machine's memory where that is less.
  std::size_t max_pinned_bytes = 0;
  policy when = policy::second_use;
  // Ranges seen once that the cache remembers (their next copy registers).
  std::size_t max_candidates = 64;
};

// A registration refused (pin() only: the copier stages instead). what()
// names the size, the address and the cause.
class registration_error : public std::runtime_error {
 public:
  enum class reason {
    over_bound,   // larger than max_pinned_bytes, or the bound is full of registrations in use
    refused,      // the API refused it (the locked-memory limit, cudaHostRegister's error)
    unsupported,  // the step cannot register host memory (OpenCL)
  };
  registration_error(reason why, std::size_t bytes, std::string cause);
  reason why() const noexcept { return why_; }
  std::size_t bytes() const noexcept { return bytes_; }
  const std::string& cause() const noexcept { return cause_; }

 private:
  reason why_;
  std::size_t bytes_;
  std::string cause_;
};

struct registration_stats {
  std::size_t pinned_bytes = 0;   // registered now (whole pages)
  std::size_t registrations = 0;  // live registrations
  std::size_t registered = 0;     // registrations made, ever
  std::size_t hits = 0;           // copies that went from a registration
  std::size_t evicted = 0, forgotten = 0, stale = 0;
  std::size_t refused = 0;        // registrations refused (by use(): the copy was staged; or by pin())
  std::string last_refusal;       // why the last one was refused (empty: none)
};

class registration_cache {
 public:
  // Throws registration_error (unsupported) where the step cannot register.
  explicit registration_cache(device_step& step, registration_cache_options options = {});
  // Unregisters everything (no copy through it may still run).
  ~registration_cache();
  registration_cache(const registration_cache&) = delete;
  registration_cache& operator=(const registration_cache&) = delete;

  // Registers [p, p + bytes) now, evicting to fit; already covered by a
  // registration: nothing to do. Throws registration_error.
  void pin(const void* p, std::size_t bytes);
  // Drops every registration and candidate overlapping [p, p + bytes)
  // (one still in use by a copy is unregistered when that copy ends).
  // Returns the bytes unregistered or due to be.
  std::size_t forget(const void* p, std::size_t bytes) noexcept;
  void clear() noexcept;
  registration_stats stats() const;
  std::size_t max_pinned_bytes() const noexcept { return bound_; }
  device_step& step() const noexcept { return step_; }

  // The copier's side. use() counts a copy of [p, p + bytes): a lease that
  // converts to true when the copy may go from registered memory (it keeps
  // the registration alive until it is destroyed), false when the copy must
  // be staged. Never throws for a refused registration.
  class lease {
   public:
    lease() = default;
    lease(lease&& o) noexcept : cache_(o.cache_), id_(o.id_) { o.cache_ = nullptr; }
    lease& operator=(lease&&) = delete;
    ~lease();
    explicit operator bool() const noexcept { return cache_ != nullptr; }

   private:
    friend class registration_cache;
    lease(registration_cache* c, std::uint64_t id) : cache_(c), id_(id) {}
    registration_cache* cache_ = nullptr;
    std::uint64_t id_ = 0;
  };
  lease use(const void* p, std::size_t bytes);

 private:
  struct entry {
    std::uintptr_t base = 0;
    std::size_t bytes = 0;   // whole pages
    std::uint64_t id = 0;
    unsigned users = 0;      // leases alive
    bool doomed = false;     // out of the table: unregistered once users reaches 0
  };
  struct candidate {
    std::uintptr_t at = 0;
    std::size_t bytes = 0;
    bool refused = false;  // registration refused: not tried again
  };
  using entries = std::list<entry>;  // most recently used first
  entries::iterator find_covering(std::uintptr_t at, std::size_t bytes);
  bool stale(const entry& e);
  // Registers the pages of [at, at + bytes), evicting to fit; returns the
  // entry, or throws registration_error. Under mutex_.
  entries::iterator add(std::uintptr_t at, std::size_t bytes);
  void drop(entries::iterator it, std::size_t& counter) noexcept;  // under mutex_
  void release(std::uint64_t id) noexcept;

  device_step& step_;
  const registration_cache_options options_;
  const std::size_t bound_;
  mutable std::mutex mutex_;
  entries live_;     // in the table
  entries doomed_;   // dropped while in use
  std::list<candidate> candidates_;  // most recent first
  std::uint64_t next_id_ = 1;
  registration_stats stats_;
  std::vector<unsigned char> residency_;  // mincore's answer, reused
};

}  // namespace xfer::mem
