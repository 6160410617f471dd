#include "resources.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <fmt/format.h>
#include <limits>
#include <thread>
#include <vector>
#include <unistd.h>
#include <xfer/mem/error.hpp>
#include <xfer/mem/kind_registry.hpp>
#include <xfer/mem/os.hpp>

namespace xfer::cuda {
namespace {

bool runtime(const api& a) { return a.name() == "runtime"; }

std::uint64_t physical_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  return pages > 0 ? std::uint64_t(pages) * mem::page_size() : 0;
}

// Page-locking more than the machine has would fail late or destabilise it:
// refuse up front, with the numbers.
void check_host_capacity(const mem::host_resource& r, std::size_t bytes) {
  const std::uint64_t physical = physical_memory_bytes();
  if (physical && bytes > physical)
    throw mem::allocation_error(std::string(r.kind()), bytes,
                                fmt::format("more than the host's physical memory ({} bytes)", physical));
}

}  // namespace

void cuda_host_resource::check_request(std::size_t bytes, std::size_t alignment) const {
  if (!std::has_single_bit(alignment)) fail(bytes, fmt::format("alignment {} is not a power of two", alignment));
  if (alignment > max_alignment())
    fail(bytes, fmt::format("alignment {} exceeds the kind's {}", alignment, max_alignment()));
}

void cuda_host_resource::fail(std::size_t bytes, const std::string& cause) const {
  throw mem::allocation_error(std::string(kind()), bytes, cause);
}

// ---- registered ---------------------------------------------------------------

registered_resource::registered_resource(api& a, std::size_t alignment)
    : cuda_host_resource(a), upstream_(std::max(alignment, mem::page_size())) {}

std::string registered_resource::describe() const {
  return fmt::format("posix_memalign at {} bytes, then {}", upstream_.natural_alignment(),
                     runtime(api_) ? "cudaHostRegister" : "cuMemHostRegister");
}

namespace {
// Whole pages, so the registration covers exactly what was allocated.
std::size_t registered_length(std::size_t bytes) {
  const std::size_t page = mem::page_size();
  return (std::max<std::size_t>(bytes, 1) + page - 1) & ~(page - 1);
}
}  // namespace

void* cuda_host_resource::allocate_registered(mem::host_resource& upstream, std::size_t bytes, std::size_t alignment,
                                              const preparation& prepare) {
  check_request(bytes, alignment);
  // Room for the upstream's own rounding (up to a huge page).
  if (bytes > std::numeric_limits<std::size_t>::max() - mem::huge_page_resource::huge_page)
    fail(bytes, "size overflows the address space");
  check_host_capacity(*this, bytes);
  const std::size_t length = registered_length(bytes);
  void* p = nullptr;
  try {
    p = upstream.allocate(length, alignment);
  } catch (const mem::allocation_error& e) {
    fail(bytes, e.cause());
  }
  std::shared_ptr<void> work;
  try {
    if (prepare) work = prepare(p, length);
    api_.host_register(p, length);
    work.reset();
  } catch (const api_error& e) {
    work.reset();  // nothing may touch the block once it is returned
    upstream.deallocate(p, length, alignment);  // a refused registration leaks nothing
    fail(bytes, e.what());
  } catch (...) {
    work.reset();
    upstream.deallocate(p, length, alignment);
    throw;
  }
  return p;
}

void cuda_host_resource::deallocate_registered(mem::host_resource& upstream, void* p, std::size_t bytes,
                                               std::size_t alignment) noexcept {
  api_.host_unregister(p);
  upstream.deallocate(p, registered_length(bytes), alignment);
}

void* registered_resource::do_allocate(std::size_t bytes, std::size_t alignment) {
  return allocate_registered(upstream_, bytes, alignment);
}

void registered_resource::do_deallocate(void* p, std::size_t bytes, std::size_t alignment) noexcept {
  deallocate_registered(upstream_, p, bytes, alignment);
}

// ---- pinned-fast ----------------------------------------------------------------

namespace {
// Below this a thread's share is not worth starting it for.
constexpr std::size_t touch_share_min = std::size_t{16} << 20;

unsigned touch_threads(unsigned asked) {
  if (asked) return asked;
  return std::clamp(std::thread::hardware_concurrency(), 1u, 16u);
}

// Faults every page of [p, p + length) in, with up to `threads` threads
// taking 2 MiB pieces in address order, and is joined on destruction. The
// kernel zeroes a page on first touch; left to the registration, one thread
// (the driver's) zeroes the whole block. The registration runs meanwhile
// and walks the block from its start, behind the touching threads: it finds
// the pages present and only pins them, so the two costs overlap instead of
// adding up (issue 15, item 4; docs/decisions/0009-fast-pinning.md). Where the registration reaches
// a page first, it faults it in itself: the block is fresh and zero either way.
class page_toucher {
 public:
  page_toucher(void* p, std::size_t length, unsigned threads) : p_(static_cast<unsigned char*>(p)), length_(length) {
    const std::size_t n = std::clamp<std::size_t>(length / touch_share_min, 1, threads);
    try {
      for (std::size_t t = 0; t < n; ++t) team_.emplace_back([this] { touch(); });
    } catch (const std::system_error&) {
      if (team_.empty()) touch();  // no thread at all: this one does it, before registering
    }
  }
  ~page_toucher() {
    for (auto& t : team_) t.join();
  }
  page_toucher(const page_toucher&) = delete;
  page_toucher& operator=(const page_toucher&) = delete;

 private:
  static constexpr std::size_t piece = std::size_t{2} << 20;
  void touch() noexcept {
    const std::size_t page = mem::page_size();
    for (;;) {
      const std::size_t at = next_.fetch_add(piece, std::memory_order_relaxed);
      if (at >= length_) return;
      auto* bytes = reinterpret_cast<volatile unsigned char*>(p_ + at);
      const std::size_t end = std::min(piece, length_ - at);
      for (std::size_t i = 0; i < end; i += page) bytes[i] = 0;  // a write: reading would map the zero page
    }
  }
  unsigned char* p_;
  std::size_t length_;
  std::atomic<std::size_t> next_{0};
  std::vector<std::thread> team_;
};
}  // namespace

fast_pinned_resource::fast_pinned_resource(api& a, unsigned threads)
    : cuda_host_resource(a), threads_(touch_threads(threads)) {}

std::string fast_pinned_resource::describe() const {
  return fmt::format("huge-page mmap, pages faulted in by up to {} threads while {} of the whole block follows them",
                     threads_,
                     runtime(api_) ? "cudaHostRegister" : "cuMemHostRegister");
}

void* fast_pinned_resource::do_allocate(std::size_t bytes, std::size_t alignment) {
  return allocate_registered(upstream_, bytes, alignment, [this](void* p, std::size_t length) {
    return std::shared_ptr<void>(std::make_shared<page_toucher>(p, length, threads_));
  });
}

void fast_pinned_resource::do_deallocate(void* p, std::size_t bytes, std::size_t alignment) noexcept {
  deallocate_registered(upstream_, p, bytes, alignment);
}

// ---- pinned, pinned-wc, mapped ----------------------------------------------------

std::size_t pinned_host_resource::max_alignment() const noexcept { return mem::page_size(); }

std::string pinned_host_resource::describe() const {
  std::string flags = runtime(api_) ? "cudaHostAllocPortable" : "CU_MEMHOSTALLOC_PORTABLE";
  if (flags_.mapped) flags += runtime(api_) ? " | cudaHostAllocMapped" : " | CU_MEMHOSTALLOC_DEVICEMAP";
  if (flags_.write_combined)
    flags += runtime(api_) ? " | cudaHostAllocWriteCombined" : " | CU_MEMHOSTALLOC_WRITECOMBINED";
  return fmt::format("{}({})", runtime(api_) ? "cudaHostAlloc" : "cuMemHostAlloc", flags);
}

pinned_host_resource::~pinned_host_resource() {
  // Blocks still out when the resource goes are freed with it: pinned pages
  // held by nobody would stay locked for the rest of the process.
  for (const auto& [start, block] : blocks_) api_.host_free(block.base);
}

void* pinned_host_resource::do_allocate(std::size_t bytes, std::size_t alignment) {
  check_request(bytes, alignment);
  check_host_capacity(*this, bytes);
  const std::size_t page = mem::page_size();
  if (bytes > std::numeric_limits<std::size_t>::max() - 2 * page) fail(bytes, "size overflows the address space");
  // Whole pages (one at least, which also covers a 0-byte request), plus one
  // page of room to slide the start onto a page boundary.
  const std::size_t length = registered_length(bytes) + page;
  void* block = nullptr;
  try {
    block = api_.host_alloc(length, flags_);
  } catch (const api_error& e) {
    fail(bytes, e.what());
  }
  const std::uintptr_t start = (reinterpret_cast<std::uintptr_t>(block) + page - 1) & ~std::uintptr_t(page - 1);
  try {
    const std::lock_guard lock(mutex_);
    blocks_.emplace(start, api_block{block, length - page});
  } catch (...) {
    api_.host_free(block);
    fail(bytes, "out of memory for the block table");
  }
  return reinterpret_cast<void*>(start);
}

void pinned_host_resource::do_deallocate(void* p, std::size_t, std::size_t) noexcept {
  void* block = nullptr;
  {
    const std::lock_guard lock(mutex_);
    const auto it = blocks_.find(reinterpret_cast<std::uintptr_t>(p));
    if (it == blocks_.end()) return;  // not ours: freeing it would corrupt the API's allocator
    block = it->second.base;
    blocks_.erase(it);
  }
  api_.host_free(block);
}

void* pinned_host_resource::base_of(const void* p) const {
  const auto at = reinterpret_cast<std::uintptr_t>(p);
  const std::lock_guard lock(mutex_);
  auto it = blocks_.upper_bound(at);
  if (it == blocks_.begin()) return nullptr;
  --it;  // the block starting at or before p, if p lies inside it
  return at - it->first < it->second.usable ? it->second.base : nullptr;
}

void* pinned_host_resource::device_pointer(void* host) const {
  void* block = base_of(host);
  if (!block) throw api_error("device_pointer", 0, "not a block of this resource", fmt::format("host pointer {}", host));
  // The API knows the block by the pointer it returned; addresses inside it
  // keep their offset on the device side.
  auto* device = static_cast<std::byte*>(api_.mapped_device_pointer(block));
  return device + (static_cast<std::byte*>(host) - static_cast<std::byte*>(block));
}

std::size_t pinned_host_resource::live_blocks() const {
  const std::lock_guard lock(mutex_);
  return blocks_.size();
}

// ---- managed ------------------------------------------------------------------

std::string managed_resource::describe() const {
  return fmt::format("{}, preferred location host, accessed by the device (stays host memory); at most the "
                     "device's free memory",
                     runtime(api_) ? "cudaMallocManaged + cudaMemAdvise" : "cuMemAllocManaged + cuMemAdvise");
}

void* managed_resource::do_allocate(std::size_t bytes, std::size_t alignment) {
  check_request(bytes, alignment);
  try {
    std::size_t free = 0, total = 0;
    api_.memory_info(free, total);
    if (bytes > free)
      fail(bytes, fmt::format("more than the device's free memory ({} of {} bytes free)", free, total));
    return api_.managed_alloc(std::max<std::size_t>(bytes, 1));
  } catch (const api_error& e) {
    fail(bytes, e.what());
  }
}

void managed_resource::do_deallocate(void* p, std::size_t, std::size_t) noexcept { api_.managed_free(p); }

// ---- catalogue ----------------------------------------------------------------

const std::vector<std::string>& host_kind_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n = mem::host_kind_names();
    for (auto& k : mem::kind_names_of(mem::kind_maker::cuda)) n.push_back(std::move(k));
    return n;
  }();
  return names;
}

const std::vector<std::string>& extra_kind_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const auto& k : mem::host_kinds())
      if (k.maker == mem::kind_maker::cuda && !k.roles.sweep) n.emplace_back(k.name);
    return n;
  }();
  return names;
}

std::unique_ptr<mem::host_resource> make_host_kind(std::string_view name, api& a, const mem::kind_options& options) {
  if (auto core = mem::make_host_kind(name, options)) return core;
  if (name == "registered") return std::make_unique<registered_resource>(a, options.alignment);
  if (name == "pinned") return std::make_unique<pinned_resource>(a);
  if (name == "pinned-wc") return std::make_unique<pinned_wc_resource>(a);
  if (name == "mapped") return std::make_unique<mapped_resource>(a);
  if (name == "managed") return std::make_unique<managed_resource>(a);
  if (name == "pinned-fast") return std::make_unique<fast_pinned_resource>(a);
  return nullptr;
}

std::string device_access_gap(const mem::host_resource& r, const device_attributes& a) {
  if (dynamic_cast<const managed_resource*>(&r)) return a.managed_memory ? "" : "the device has no managed memory";
  const bool pinned_block = dynamic_cast<const pinned_host_resource*>(&r) ||
                            dynamic_cast<const registered_resource*>(&r) || dynamic_cast<const fast_pinned_resource*>(&r);
  if (!pinned_block)
    return fmt::format("'{}' is pageable memory, which the device cannot address (use registered, pinned, pinned-wc, "
                       "mapped or managed)",
                       r.kind());
  // Without unified addressing only blocks allocated as mapped have a device address.
  if (dynamic_cast<const mapped_resource*>(&r)) return a.can_map_host_memory ? "" : "the device cannot map host memory";
  if (!a.unified_addressing || !a.can_map_host_memory)
    return fmt::format("'{}' memory is mapped for the device only with unified addressing, which this device lacks",
                       r.kind());
  return "";
}

void* device_view(const mem::host_resource& r, api& a, void* host) {
  if (const auto* p = dynamic_cast<const pinned_host_resource*>(&r)) return p->device_pointer(host);
  if (dynamic_cast<const registered_resource*>(&r) || dynamic_cast<const fast_pinned_resource*>(&r))
    return a.mapped_device_pointer(host);
  // Managed memory has one address on both sides.
  return host;
}

}  // namespace xfer::cuda
