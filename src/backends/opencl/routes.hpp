#pragma once
// The OpenCL backend's routes, and the per-device state a transfer runs on.
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>
#include <xfer/core/backend.hpp>
#include <xfer/mem/kinds.hpp>
#include <xfer/mem/staged/device_step.hpp>
#include <xfer/mem/staged/staged_copier.hpp>

#include "opencl/cl.hpp"
#include "opencl/platform.hpp"

namespace xfer::opencl {

// The routes this backend offers: core's shared ones (route_kind::...) and
// its own (own_routes); a new one is declared here and described in
// route_table() (routes.cpp), with no edit to core:
//   copy_async    non-blocking clEnqueueWrite/Read/CopyBuffer behind a gate, event-timed
//   copy_sync     blocking clEnqueueWrite/ReadBuffer one after another, wall-timed
//   map           map the device buffer, memcpy, unmap; wall-timed, each part separately
//   kernel_host   a kernel copies between host-visible memory and a device buffer
//   kernel_device a kernel copies between two device buffers
//   staged        libxfer's staged copier (pageable host memory, h2d and d2h), wall-timed
//   blocks_list   sweep --blocks: a non-blocking write/read per block on one queue, one clFinish, wall-timed
using route_id = route_kind;

namespace own_routes {
inline const route_kind map = route_kind::declare("map", route_family::copy);
// OpenCL's list of buffer copies (core/block_route.hpp's workload): it has no batched copy call.
inline const route_kind blocks_list = route_kind::declare("blocks-list", route_family::copy);
}  // namespace own_routes

const std::vector<route_info>& route_table();
// nullopt for a route this backend does not offer.
std::optional<route_id> opencl_route(route_kind r);
// kernel-host: the host memory must be a cl_mem or SVM a kernel can take.
bool route_needs_kernel_visible_host(route_id r);
// Route staged: skip_point unless `kind` is plain pageable host memory (the
// OpenCL kinds are the API's own buffers, moved directly by copy-sync/async).
void require_staged_kind(const std::string& kind, const mem::kind_options& kinds);

// One device's context, with two profiling queues (bidir runs one direction on
// each), the copy program once a kernel route has needed it, and the staged
// copier once route staged has (its step works in this context, so the
// route's buffers are this context's cl_mem like every other route's).
struct device_context {
  device_caps caps;
  context ctx;
  command_queue queues[2];
  program copy_program;  // empty until built
  std::unique_ptr<mem::device_step> staged_step;
  std::unique_ptr<mem::staged_copier> staged_copier;  // after the step: destroyed first
};

device_context make_device_context(const device_caps& caps);

// A prepared point; the spec has been checked against the route and device.
// Throws cl_error or mem::allocation_error when buffers cannot be had.
std::unique_ptr<transfer> make_transfer(const point_spec& p, route_id route, const device_context& dev,
                                        const mem::kind_options& kinds);

// Route staged through `copier` (whose step works in dev's context).
std::unique_ptr<transfer> make_staged_transfer(const point_spec& p, const device_context& dev,
                                               const mem::kind_options& kinds, mem::staged_copier& copier);

// Route peer: src's device memory to dst's (staged through a host buffer
// between two contexts; clEnqueueCopyBuffer when src and dst are one device).
std::unique_ptr<transfer> make_peer_transfer(const point_spec& p, const device_context& src, const device_context& dst);

// For tests of check_sample(): flips the byte at `offset` of destination `which` of a
// transfer make_transfer made (0: the device side where there are two, as in
// bidir and rw; 1: the host side), as a transfer that landed wrong would
// leave it. Flipping it again restores it. False when there is no such
// destination. (Core's corrupt_place_for_testing, numbered as places() are.)
bool corrupt_destination_for_testing(transfer& t, std::size_t which, std::size_t offset);

}  // namespace xfer::opencl
