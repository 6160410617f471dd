#include "page_mapping.hpp"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <sys/mman.h>
#include <xfer/mem/error.hpp>
#include <xfer/mem/os.hpp>

namespace xfer::mem::detail {

std::size_t mapped_length(std::size_t bytes, std::size_t alignment) noexcept {
  const std::size_t unit = alignment;
  return ((bytes == 0 ? 1 : bytes) + unit - 1) & ~(unit - 1);
}

// mmap only promises page alignment: for more, map one alignment unit
// extra, then unmap the unaligned head and the tail.
void* map_pages(std::string_view kind, std::size_t bytes, std::size_t alignment) {
  const std::size_t limit = std::numeric_limits<std::size_t>::max() / 2;
  if (bytes > limit) throw allocation_error(std::string(kind), bytes, "size overflows the address space");
  const std::size_t length = mapped_length(bytes, alignment);
  const std::size_t extra = alignment > page_size() ? alignment : 0;
  void* raw = os().mmap(nullptr, length + extra, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) throw allocation_error(std::string(kind), bytes, std::strerror(errno));
  if (!extra) return raw;
  const auto start = reinterpret_cast<std::uintptr_t>(raw);
  const auto aligned = (start + alignment - 1) & ~(std::uintptr_t(alignment) - 1);
  if (aligned > start) os().munmap(raw, aligned - start);
  const std::size_t tail = (start + length + extra) - (aligned + length);
  if (tail > 0) os().munmap(reinterpret_cast<void*>(aligned + length), tail);
  return reinterpret_cast<void*>(aligned);
}

void unmap_pages(void* p, std::size_t bytes, std::size_t alignment) noexcept {
  os().munmap(p, mapped_length(bytes, alignment));
}

}  // namespace xfer::mem::detail
