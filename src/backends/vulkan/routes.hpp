#pragma once
// The Vulkan backend's routes: core's kernel_host, and its own (own_routes):
//   copy         vkCmdCopyBuffer on a transfer-only queue where the device has one
//   kernel_host  a compute shader copies between host-visible memory and a device buffer
//   cpu_store(_nt), cpu_load(_nt)  the CPU writes into / reads from memory the device maps
//   cpu_store(_nt)_latency  a small CPU store into that memory until a device reader answers (store_latency.hpp)
//   blocks_list  sweep --blocks: the scattered block list as one vkCmdCopyBuffer with a region per block
// A new route: declare its name here, describe it in route_table() (routes.cpp)
// and build its transfer in make_transfer; core needs no edit.
#include <memory>
#include <optional>
#include <vector>
#include <xfer/core/backend.hpp>
#include <xfer/mem/kinds.hpp>

#include "device.hpp"

namespace xfer::vulkan {

// The routes only this backend has, declared to core by name, family and role.
namespace own_routes {
inline const route_kind copy = route_kind::declare("copy", route_family::copy, route_role::api_copy_queued);
inline const route_kind cpu_store = route_kind::declare("cpu-store", route_family::cpu_access, route_role::cpu_store);
inline const route_kind cpu_store_nt = route_kind::declare("cpu-store-nt", route_family::cpu_access, route_role::cpu_store);
inline const route_kind cpu_load = route_kind::declare("cpu-load", route_family::cpu_access, route_role::cpu_load);
inline const route_kind cpu_load_nt = route_kind::declare("cpu-load-nt", route_family::cpu_access, route_role::cpu_load);
inline const route_kind cpu_store_latency = route_kind::declare("cpu-store-latency", route_family::latency,
                                                                route_role::cpu_store_round_trip);
inline const route_kind cpu_store_nt_latency = route_kind::declare("cpu-store-nt-latency", route_family::latency,
                                                                   route_role::cpu_store_round_trip);
// Vulkan's list of buffer copies in one command buffer (core/block_route.hpp's workload).
inline const route_kind blocks_list = route_kind::declare("blocks-list", route_family::copy);
}  // namespace own_routes

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
