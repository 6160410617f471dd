#include "routes.hpp"

#include <fmt/format.h>
#include <stdexcept>
#include <xfer/config.hpp>
#include <xfer/core/block_route.hpp>
#include <xfer/core/errors.hpp>

#include "memory.hpp"
#include "store_latency.hpp"
#include "transfer.hpp"

namespace xfer::vulkan {

const std::vector<route_info>& route_table() {
  using enum direction;
  static const std::vector<route_info> routes{
      {own_routes::copy,
       "vkCmdCopyBuffer on the device's transfer-only queue family where it has one (a copy engine), recorded behind a "
       "timeline-semaphore gate; timestamp queries around the batch, wall clock beside. Pageable kinds are staged by "
       "the application through a host-coherent buffer, one copy at a time, by the wall clock",
       {h2d, d2h, bidir, rw, d2d},
       true},
      {route_kind::kernel_host,
       "a compute shader (SPIR-V built with glslc) copies 32-bit words between host memory the device maps "
       "(host-coherent, host-cached, imported) and a device buffer over the link; timestamps, wall clock beside",
       {h2d, d2h, bidir, rw},
       true},
      {own_routes::cpu_store,
       "the CPU stores into device memory it maps (device-local-host-visible: the BAR on a discrete GPU) with "
       "memcpy and a fence; wall clock; checked by the device reading it back",
       {h2d},
       true},
      {own_routes::cpu_store_nt, "as cpu-store, with non-temporal (streaming) stores and SFENCE", {h2d}, true},
      {own_routes::cpu_load,
       "the CPU loads from device memory it maps (device-local-host-visible), after the device wrote it, with "
       "memcpy; wall clock",
       {d2h},
       true},
      {own_routes::cpu_load_nt, "as cpu-load, with streaming loads (MOVNTDQA, the way to read write-combined memory)",
       {d2h},
       true},
      {own_routes::cpu_store_latency,
       "a round trip per store: the CPU stores N bytes (1 to 4096) into device memory it maps "
       "(device-local-host-visible: the BAR on a discrete GPU) with memcpy, the last word after a fence; one shader "
       "invocation polls that word until it shows the round's number (the whole store is then visible) and answers "
       "in host memory the CPU polls; many rounds in one dispatch, wall clock; the bytes are checked after each "
       "sample. The time is the store made visible to the device plus the answer back: an upper bound of the "
       "store's visibility time. Sizes: 8 and 64 B unless --sizes/--min/--max say otherwise",
       {h2d},
       true,
       {8, 64}},
      {own_routes::cpu_store_nt_latency,
       "as cpu-store-latency (a round trip), with non-temporal stores (MOVNTI below 16 B) and SFENCE",
       {h2d},
       true,
       {8, 64}},
      {own_routes::blocks_list,
       "many blocks (sweep --blocks): the scattered block list as one vkCmdCopyBuffer with a VkBufferCopy region per "
       "block, one command buffer on the transfer queue, timestamps (the copy route's staging for pageable kinds)",
       {h2d, d2h},
       true,
       {},
       0,
       true},
  };
  return routes;
}

bool is_cpu_route(route_kind r) {
  return r == own_routes::cpu_store || r == own_routes::cpu_store_nt || r == own_routes::cpu_load ||
         r == own_routes::cpu_load_nt;
}

std::optional<route_kind> vulkan_route(route_kind r) {
  for (const auto& info : route_table())
    if (info.name == r) return r;
  return std::nullopt;
}

std::string route_kind_gap(route_kind r, const std::string& kind) {
  if (r == route_kind::kernel_host) return kernel_host_kind_gap(kind);
  if (is_cpu_route(r)) return cpu_route_kind_gap(r, kind);
  if (is_store_latency_route(r)) return store_latency_kind_gap(r, kind);
  return {};
}

void require_route(const point_spec& p, const device_caps& caps) {
  if (p.bytes == 0) throw skip_point("a copy of 0 bytes is not a Vulkan command (VkBufferCopy.size must be > 0)");
  if (p.route == route_kind::kernel_host) require_kernel_host(p, caps);
  if (is_cpu_route(p.route)) require_cpu_route(p, caps);
  if (is_store_latency_route(p.route)) require_store_latency(p);
  if (p.route == own_routes::blocks_list) require_scattered_list(p);
}

std::unique_ptr<transfer> make_transfer(const point_spec& p, device_context& dev, const mem::kind_options& kinds,
                                        compute_pipeline* pipe, compute_pipeline* poll) {
  if (p.route == own_routes::copy) return make_copy_transfer(p, dev, kinds);
  if (p.route == own_routes::blocks_list) return make_block_list_transfer(p, dev, kinds);
  if (p.route == route_kind::kernel_host) {
    if (!pipe) throw std::logic_error("kernel-host prepared without its pipeline");
    return make_kernel_transfer(p, dev, kinds, *pipe);
  }
  if (is_cpu_route(p.route)) return make_cpu_transfer(p, dev);
  if (is_store_latency_route(p.route)) {
    if (!poll) throw std::logic_error("cpu-store-latency prepared without its pipeline");
    return make_store_latency_transfer(p, dev, *poll);
  }
  throw std::logic_error(std::string("make_transfer: Vulkan has no route ") + to_string(p.route));
}

}  // namespace xfer::vulkan
