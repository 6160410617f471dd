#pragma once
// Entry point for the registry: one backend per Vulkan physical device
// ("vulkan:llvmpipe", "vulkan:nvidia", ...), or one unavailable "vulkan"
// entry saying why there is none. Free of Vulkan headers on purpose.
#include <vector>
#include <xfer/core/backend.hpp>
#include <xfer/mem/kinds.hpp>

namespace xfer::vulkan {

std::vector<backend_entry> make_vulkan_backends(const mem::kind_options& kinds);

}  // namespace xfer::vulkan
