#pragma once
#include <cstddef>
#include <xfer/mem/resource.hpp>

namespace xfer::mem::detail {

// Throws allocation_error unless `alignment` is a power of two the resource honours.
void check_alignment(const host_resource& r, std::size_t bytes, std::size_t alignment);

}  // namespace xfer::mem::detail
