#include <bit>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fmt/format.h>
#include <limits>
#include <stdexcept>
#include <sys/mman.h>
#include <xfer/mem/error.hpp>
#include <xfer/mem/host_resources.hpp>
#include <xfer/mem/os.hpp>

#include "alignment_check.hpp"
#include "page_mapping.hpp"

namespace xfer::mem {
namespace {

constexpr std::size_t malloc_alignment = alignof(std::max_align_t);

// a + b, or an allocation_error when it would wrap.
std::size_t checked_add(const host_resource& r, std::size_t bytes, std::size_t extra) {
  if (bytes > std::numeric_limits<std::size_t>::max() - extra)
    throw allocation_error(std::string(r.kind()), bytes, "size overflows the address space");
  return bytes + extra;
}

std::uintptr_t align_up(std::uintptr_t v, std::size_t a) { return (v + a - 1) & ~(std::uintptr_t(a) - 1); }

}  // namespace

// ---- pageable ---------------------------------------------------------------

std::size_t pageable_resource::max_alignment() const noexcept { return malloc_alignment; }

std::string pageable_resource::describe() const { return "malloc: what an ordinary program hands to a copy API"; }

void* pageable_resource::do_allocate(std::size_t bytes, std::size_t alignment) {
  detail::check_alignment(*this, bytes, alignment);
  // malloc(0) may return nullptr; a resource must hand out a unique pointer.
  void* p = os().malloc(bytes == 0 ? 1 : bytes);
  if (!p) throw allocation_error("pageable", bytes, std::strerror(errno ? errno : ENOMEM));
  return p;
}

void pageable_resource::do_deallocate(void* p, std::size_t, std::size_t) noexcept { os().free(p); }

// ---- pageable-unaligned -------------------------------------------------------

unaligned_resource::unaligned_resource(std::size_t offset) : offset_(offset) {
  if (offset == 0 || offset >= page_size() || offset % 64 == 0)
    throw std::invalid_argument(fmt::format(
        "pageable-unaligned offset {} must be 1..{} and not a multiple of 64 (a cache line)", offset, page_size() - 1));
}

std::size_t unaligned_resource::max_alignment() const noexcept {
  return std::size_t{1} << std::countr_zero(offset_);
}

std::string unaligned_resource::describe() const {
  return fmt::format("malloc, then {} bytes past a page boundary (on no page or cache-line boundary)", offset_);
}

// Layout: [raw ... | base pointer (8 B) | page boundary | offset_ bytes | user data ...]
// The base pointer is stored just below the returned pointer (memcpy: it may be unaligned).
void* unaligned_resource::do_allocate(std::size_t bytes, std::size_t alignment) {
  detail::check_alignment(*this, bytes, alignment);
  const std::size_t total = checked_add(*this, bytes, sizeof(void*) + page_size() + offset_);
  void* raw = os().malloc(total);
  if (!raw) throw allocation_error("pageable-unaligned", bytes, std::strerror(errno ? errno : ENOMEM));
  const auto page = align_up(reinterpret_cast<std::uintptr_t>(raw) + sizeof(void*), page_size());
  auto* user = reinterpret_cast<std::byte*>(page + offset_);
  std::memcpy(user - sizeof(void*), &raw, sizeof(void*));
  return user;
}

void unaligned_resource::do_deallocate(void* p, std::size_t, std::size_t) noexcept {
  void* raw = nullptr;
  std::memcpy(&raw, static_cast<std::byte*>(p) - sizeof(void*), sizeof(void*));
  os().free(raw);
}

// ---- aligned ----------------------------------------------------------------

aligned_resource::aligned_resource(std::size_t alignment) : alignment_(alignment) {
  if (!std::has_single_bit(alignment) || alignment < sizeof(void*) || alignment > max_alignment_bound)
    throw std::invalid_argument(fmt::format("aligned: alignment {} must be a power of two from {} to {} (1G)",
                                            alignment, sizeof(void*), max_alignment_bound));
}

// posix_memalign takes any power of two; a page is the useful ceiling for
// requests beyond the kind's own alignment.
std::size_t aligned_resource::max_alignment() const noexcept { return std::max(alignment_, page_size()); }

std::string aligned_resource::describe() const { return fmt::format("posix_memalign at {} bytes", alignment_); }

void* aligned_resource::do_allocate(std::size_t bytes, std::size_t alignment) {
  detail::check_alignment(*this, bytes, alignment);
  void* p = nullptr;
  const int rc = os().posix_memalign(&p, std::max(alignment, alignment_), bytes == 0 ? 1 : bytes);
  if (rc != 0 || !p) throw allocation_error("aligned", bytes, std::strerror(rc ? rc : ENOMEM));
  return p;
}

void aligned_resource::do_deallocate(void* p, std::size_t, std::size_t) noexcept { os().free(p); }

// ---- huge -------------------------------------------------------------------

std::string huge_page_resource::describe() const {
  return "mmap at a 2 MiB boundary + madvise(MADV_HUGEPAGE) (transparent huge pages where enabled)";
}

void* huge_page_resource::do_allocate(std::size_t bytes, std::size_t alignment) {
  detail::check_alignment(*this, bytes, alignment);
  void* p = detail::map_pages("huge", bytes, huge_page);
  // Advice only: where THP is disabled the memory still works, just with 4 KiB pages.
  os().madvise(p, detail::mapped_length(bytes, huge_page), MADV_HUGEPAGE);
  return p;
}

void huge_page_resource::do_deallocate(void* p, std::size_t bytes, std::size_t) noexcept {
  detail::unmap_pages(p, bytes, huge_page);
}

namespace detail {

void check_alignment(const host_resource& r, std::size_t bytes, std::size_t alignment) {
  if (!std::has_single_bit(alignment))
    throw allocation_error(std::string(r.kind()), bytes, fmt::format("alignment {} is not a power of two", alignment));
  if (alignment > r.max_alignment())
    throw allocation_error(std::string(r.kind()), bytes,
                           fmt::format("alignment {} exceeds the kind's {}", alignment, r.max_alignment()));
}

}  // namespace detail

}  // namespace xfer::mem
