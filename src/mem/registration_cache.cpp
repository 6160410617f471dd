#include <xfer/mem/registration_cache.hpp>

#include <algorithm>
#include <unistd.h>
#include <fmt/format.h>
#include <xfer/mem/os.hpp>
#include <xfer/mem/staged/device_step.hpp>

namespace xfer::mem {

namespace {

std::string error_message(registration_error::reason why, std::size_t bytes, const std::string& cause) {
  const char* what = why == registration_error::reason::over_bound ? "over the cache's bound"
                     : why == registration_error::reason::refused  ? "refused"
                                                                    : "unsupported";
  return fmt::format("registering {} bytes of host memory: {}: {}", bytes, what, cause);
}

// 1 GiB, or a quarter of the machine's memory where that is less: pinned
// pages are taken from every other program on the machine.
std::size_t default_bound() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const std::size_t quarter = pages > 0 ? static_cast<std::size_t>(pages) * page_size() / 4 : std::size_t{1} << 30;
  return std::min<std::size_t>(std::size_t{1} << 30, quarter);
}

// The whole pages holding [at, at + bytes).
std::uintptr_t page_floor(std::uintptr_t at) { return at & ~(page_size() - 1); }
std::uintptr_t page_ceil(std::uintptr_t at) { return (at + page_size() - 1) & ~(page_size() - 1); }

bool overlap(std::uintptr_t a, std::size_t an, std::uintptr_t b, std::size_t bn) { return a < b + bn && b < a + an; }

}  // namespace

registration_error::registration_error(reason why, std::size_t bytes, std::string cause)
    : std::runtime_error(error_message(why, bytes, cause)), why_(why), bytes_(bytes), cause_(std::move(cause)) {}

registration_cache::registration_cache(device_step& step, registration_cache_options options)
    : step_(step), options_(options), bound_(options.max_pinned_bytes ? options.max_pinned_bytes : default_bound()) {
  if (auto why = step_.registration_unsupported(); !why.empty())
    throw registration_error(registration_error::reason::unsupported, 0, why);
}

registration_cache::~registration_cache() { clear(); }

registration_cache::lease::~lease() {
  if (cache_) cache_->release(id_);
}

registration_cache::entries::iterator registration_cache::find_covering(std::uintptr_t at, std::size_t bytes) {
  return std::find_if(live_.begin(), live_.end(),
                      [&](const entry& e) { return e.base <= at && at + bytes <= e.base + e.bytes; });
}

// Pinned pages stay mapped and resident for as long as the registration
// holds them; a page that is not resident (or a range no longer mapped:
// mincore fails with ENOMEM) belongs to memory put there since. And the
// API's own table must still cover the range.
bool registration_cache::stale(const entry& e) {
  if (step_.registered(reinterpret_cast<const void*>(e.base), e.bytes) == 0) return true;
  const auto mincore = os().mincore;
  if (!mincore) return false;  // a test's table without it: cannot tell
  residency_.resize(e.bytes / page_size());
  if (mincore(reinterpret_cast<void*>(e.base), e.bytes, residency_.data()) != 0) return true;
  return std::any_of(residency_.begin(), residency_.end(), [](unsigned char v) { return (v & 1) == 0; });
}

void registration_cache::drop(entries::iterator it, std::size_t& counter) noexcept {
  ++counter;
  if (it->users) {
    it->doomed = true;
    doomed_.splice(doomed_.end(), live_, it);
    return;
  }
  step_.unregister_host(reinterpret_cast<void*>(it->base));
  stats_.pinned_bytes -= it->bytes;
  live_.erase(it);
}

registration_cache::entries::iterator registration_cache::add(std::uintptr_t at, std::size_t bytes) {
  const std::uintptr_t base = page_floor(at);
  const std::size_t length = page_ceil(at + bytes) - base;
  if (length > bound_)
    throw registration_error(registration_error::reason::over_bound, bytes,
                             fmt::format("{} bytes of pages exceed the bound of {} bytes", length, bound_));
  // A registration sharing a page with this one: the driver would refuse
  // the overlap; the old one goes (the newer use is the likelier to recur).
  for (auto it = live_.begin(); it != live_.end();) {
    auto next = std::next(it);
    if (overlap(it->base, it->bytes, base, length) && !it->users) drop(it, stats_.evicted);
    it = next;
  }
  // Evict from the least recently used end until the pages fit.
  for (auto it = live_.end(); stats_.pinned_bytes + length > bound_ && it != live_.begin();) {
    --it;
    if (it->users) continue;
    auto victim = it;
    it = std::next(it);  // stays valid: only victim is erased
    drop(victim, stats_.evicted);
  }
  if (stats_.pinned_bytes + length > bound_)
    throw registration_error(registration_error::reason::over_bound, bytes,
                             fmt::format("the bound of {} bytes is held by registrations in use ({} bytes)", bound_,
                                         stats_.pinned_bytes));
  try {
    step_.register_host(reinterpret_cast<void*>(base), length);
  } catch (const std::exception& e) {
    throw registration_error(registration_error::reason::refused, bytes, e.what());
  }
  stats_.pinned_bytes += length;
  ++stats_.registered;
  live_.push_front(entry{base, length, next_id_++, 0, false});
  return live_.begin();
}

void registration_cache::pin(const void* p, std::size_t bytes) {
  const auto at = reinterpret_cast<std::uintptr_t>(p);
  if (!p || bytes == 0)
    throw registration_error(registration_error::reason::refused, bytes, "a null pointer or a size of 0");
  std::lock_guard lock(mutex_);
  if (auto it = find_covering(at, bytes); it != live_.end()) {
    if (!stale(*it)) {
      live_.splice(live_.begin(), live_, it);
      return;
    }
    drop(it, stats_.stale);
  }
  try {
    add(at, bytes);
  } catch (const registration_error& e) {
    ++stats_.refused;
    stats_.last_refusal = e.what();
    throw;
  }
}

registration_cache::lease registration_cache::use(const void* p, std::size_t bytes) {
  const auto at = reinterpret_cast<std::uintptr_t>(p);
  std::lock_guard lock(mutex_);
  auto grant = [&](entries::iterator it) {
    live_.splice(live_.begin(), live_, it);
    ++it->users;
    ++stats_.hits;
    return lease(this, it->id);
  };
  bool was_stale = false;
  if (auto it = find_covering(at, bytes); it != live_.end()) {
    if (!stale(*it)) return grant(it);
    drop(it, stats_.stale);
    was_stale = true;  // new memory at an old address: this is its first copy
  }
  if (options_.when == registration_cache_options::policy::explicit_only) return {};
  auto seen = std::find_if(candidates_.begin(), candidates_.end(),
                           [&](const candidate& c) { return c.at == at && c.bytes == bytes; });
  if (was_stale && seen != candidates_.end()) {
    candidates_.erase(seen);
    seen = candidates_.end();
  }
  if (seen == candidates_.end()) {
    candidates_.push_front({at, bytes, false});
    if (candidates_.size() > options_.max_candidates) candidates_.pop_back();
    return {};
  }
  candidates_.splice(candidates_.begin(), candidates_, seen);
  if (seen->refused) return {};
  try {
    auto it = add(at, bytes);
    candidates_.erase(seen);  // registered: its uses are hits from now on
    return grant(it);
  } catch (const registration_error& e) {
    seen->refused = true;
    ++stats_.refused;
    stats_.last_refusal = e.what();
    return {};
  }
}

void registration_cache::release(std::uint64_t id) noexcept {
  std::lock_guard lock(mutex_);
  for (auto* list : {&live_, &doomed_}) {
    auto it = std::find_if(list->begin(), list->end(), [&](const entry& e) { return e.id == id; });
    if (it == list->end()) continue;
    if (--it->users == 0 && it->doomed) {
      step_.unregister_host(reinterpret_cast<void*>(it->base));
      stats_.pinned_bytes -= it->bytes;
      list->erase(it);
    }
    return;
  }
}

std::size_t registration_cache::forget(const void* p, std::size_t bytes) noexcept {
  const auto at = reinterpret_cast<std::uintptr_t>(p);
  const std::size_t n = std::max<std::size_t>(bytes, 1);
  std::lock_guard lock(mutex_);
  std::size_t dropped = 0;
  for (auto it = live_.begin(); it != live_.end();) {
    auto next = std::next(it);
    if (overlap(it->base, it->bytes, at, n)) {
      dropped += it->bytes;
      drop(it, stats_.forgotten);
    }
    it = next;
  }
  candidates_.remove_if([&](const candidate& c) { return overlap(c.at, c.bytes, at, n); });
  return dropped;
}

void registration_cache::clear() noexcept {
  std::lock_guard lock(mutex_);
  std::size_t ignored = 0;
  while (!live_.empty()) drop(live_.begin(), ignored);
  candidates_.clear();
}

registration_stats registration_cache::stats() const {
  std::lock_guard lock(mutex_);
  registration_stats s = stats_;
  s.registrations = live_.size() + doomed_.size();
  return s;
}

}  // namespace xfer::mem
