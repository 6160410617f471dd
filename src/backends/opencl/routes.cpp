#include "routes.hpp"

#include <fmt/format.h>
#include <xfer/core/errors.hpp>
#include <xfer/core/staged_route.hpp>

#include "opencl/host_memory.hpp"

namespace xfer::opencl {

const std::vector<route_info>& route_table() {
  using enum direction;
  static const std::vector<route_info> routes{
      {route_kind::copy_async,
       "non-blocking clEnqueueWrite/Read/CopyBuffer held behind a user-event gate (ungated where the driver blocks "
       "behind it); profiling events, start of first to end of last (queued-to-end as a part), wall clock beside",
       {h2d, d2h, bidir, rw, d2d},
       true},
      {route_kind::copy_sync, "blocking clEnqueueWrite/ReadBuffer one after another; wall clock (what a plain program sees)",
       {h2d, d2h, rw},
       true},
      {own_routes::map, "map the device buffer, memcpy, unmap; wall clock, with map/memcpy/unmap as parts", {h2d, d2h, rw}, true},
      {route_kind::kernel_host,
       "a kernel copies between host-visible memory (alloc-host-ptr, use-host-ptr, svm-*) and a device buffer; events",
       {h2d, d2h, bidir, rw},
       true},
      {route_kind::kernel_device, "a kernel copies between two device buffers; profiling events", {d2d}, false},
      {route_kind::staged,
       "libxfer's staged copier: pageable memory through a ring of ALLOC_HOST_PTR staging buffers, CPU threads "
       "filling while a queue per thread drains; wall clock (clEnqueueWrite/ReadBuffer below its handoff size)",
       {h2d, d2h},
       true},
      {own_routes::blocks_list,
       "many blocks (sweep --blocks): the scattered block list as a non-blocking clEnqueueWrite/ReadBuffer per block "
       "on one queue and one clFinish (OpenCL has no batched copy); wall clock",
       {h2d, d2h},
       true,
       {},
       0,
       true},
  };
  return routes;
}

std::optional<route_id> opencl_route(route_kind r) {
  for (const auto& info : route_table())
    if (info.name == r) return r;
  return std::nullopt;
}

bool route_needs_kernel_visible_host(route_id r) { return r == route_id::kernel_host; }

void require_staged_kind(const std::string& kind, const mem::kind_options& kinds) {
  if (is_opencl_kind(kind))
    throw skip_point(fmt::format("the staged copier is for pageable memory; '{}' is OpenCL's own host memory "
                                 "(see copy-sync and copy-async)",
                                 kind));
  if (auto k = mem::make_host_kind(kind, kinds)) require_pageable_for_staged(*k);
}

device_context make_device_context(const device_caps& caps) {
  device_context d;
  d.caps = caps;
  cl_int rc = CL_SUCCESS;
  d.ctx = context(clCreateContext(nullptr, 1, &caps.id, nullptr, nullptr, &rc));
  check(rc, "clCreateContext", caps.name);
  d.queues[0] = make_queue(d.ctx, caps);
  d.queues[1] = make_queue(d.ctx, caps);
  return d;
}

}  // namespace xfer::opencl
