#pragma once
// Anonymous page mappings at any power-of-two alignment, shared by the
// mmap, huge and numa resources.
#include <cstddef>
#include <string_view>

namespace xfer::mem::detail {

// Maps `bytes` (at least one page) read/write at `alignment` (>= page size).
// Throws allocation_error naming `kind` on failure.
void* map_pages(std::string_view kind, std::size_t bytes, std::size_t alignment);
// Unmaps what map_pages(bytes, alignment) returned.
void unmap_pages(void* p, std::size_t bytes, std::size_t alignment) noexcept;
// The length map_pages actually maps for `bytes`: whole units of `alignment`.
std::size_t mapped_length(std::size_t bytes, std::size_t alignment) noexcept;

}  // namespace xfer::mem::detail
