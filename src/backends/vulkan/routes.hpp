#pragma once
// The Vulkan backend's routes, by core's names (route_kind):
//   copy         vkCmdCopyBuffer on a transfer-only queue where the device has one
//   kernel_host  a compute shader copies between host-visible memory and a device buffer
//   cpu_store(_nt), cpu_load(_nt)  the CPU writes into / reads from memory the device maps
//   cpu_store(_nt)_latency  a small CPU store into that memory until a device reader answers (store_latency.hpp)
#include <memory>
#include <optional>
#include <vector>
#include <xfer/core/backend.hpp>
#include <xfer/mem/kinds.hpp>

#include "device.hpp"

namespace xfer::vulkan {

const std::vector<route_info>& route_table();
std::optional<route_kind> vulkan_route(route_kind r);
bool is_cpu_route(route_kind r);
// skip_point where the route cannot take the point on this device (a kind
// the route cannot use, a size beyond a limit, no SPIR-V in this build).
void require_route(const point_spec& p, const device_caps& caps);
// Why route `r` can never move host memory of `kind` (backend::pairing_gap), or "".
std::string route_kind_gap(route_kind r, const std::string& kind);
class compute_pipeline;
// pipe: the copy pipeline, for kernel-host; poll: the polling one, for
// cpu-store(-nt)-latency (each made by the backend on first use).
std::unique_ptr<transfer> make_transfer(const point_spec& p, device_context& dev, const mem::kind_options& kinds,
                                        compute_pipeline* pipe, compute_pipeline* poll);

}  // namespace xfer::vulkan
