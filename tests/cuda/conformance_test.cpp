// The backend conformance suite (tests/conformance/backend_conformance.hpp)
// over both CUDA backends: every route x direction x host kind either
// verifies and times, or is skipped for the reason the backend gives for it.
// Label gpu: without a device every test skips, saying why.
#include "../conformance/backend_conformance.hpp"
#include "cuda/cuda_routes.hpp"
#include "gpu.hpp"

namespace xfer::cuda {
namespace {

using ::xfer::test::backend_case;
using ::xfer::test::point_expectation;

// The zero-copy routes take every kind the device can address (all but the pageable ones).
bool device_addressable(const std::string& kind) {
  return kind == "registered" || kind == "pinned" || kind == "pinned-wc" || kind == "mapped" || kind == "managed";
}

backend_case cuda_case(const std::string& name) {
  using enum direction;
  backend_case c;
  c.name = name;
  c.get = [name](std::string& why) -> backend* {
    if (!test::gpu().available()) {
      why = "no usable CUDA device: " + test::gpu().reason;
      return nullptr;
    }
    return test::gpu().backend(name);
  };
  c.routes = {{route_kind::copy_sync, {h2d, d2h, rw, d2d}, true},     {route_kind::copy_async, {h2d, d2h, bidir, rw, d2d}, true},
              {route_kind::staged, {h2d, d2h}, true},
              {cuda::own_routes::batch_any_order, {h2d, d2h}, true},
              {route_kind::kernel_host, {h2d, d2h}, true},            {route_kind::kernel_device, {d2d}, false},
              {cuda::own_routes::kernel_device_read, {d2d}, false},         {cuda::own_routes::kernel_device_write, {d2d}, false},
              {cuda::own_routes::latency, {h2d}, true}};
  // The block routes are cuda-rt's (its block step is the runtime API's).
  if (name == "cuda-rt")
    for (route_kind r : {block_routes::loop, block_routes::batch, block_routes::kernel, block_routes::pack,
                         block_routes::choice, block_routes::contiguous})
      c.routes.push_back({r, {h2d, d2h}, true});
  c.kinds = {"pageable", "pageable-unaligned", "aligned", "huge", "registered", "pinned", "pinned-wc", "mapped",
             "managed"};
  c.expect = [](backend&, const point_spec& p) {
    point_expectation e;
    const bool pageable_route = p.route == route_kind::staged || p.route == cuda::own_routes::batch_any_order;
    e.timer = p.route == route_kind::copy_sync || pageable_route ? clock_kind::wall : clock_kind::event;
    e.bytes_per_rep = p.route == cuda::own_routes::latency ? 4 : ::xfer::test::two_way_bytes(p);
    const bool zero_copy = p.route == route_kind::kernel_host || p.route == cuda::own_routes::latency;
    if (is_block_route(p.route)) {
      e.timer = clock_kind::wall;
      // The kernel way reaches host memory from the device: page-locked only.
      const bool pinned = p.host_memory == "registered" || p.host_memory.starts_with("pinned") ||
                          p.host_memory == "mapped";
      if (p.route == block_routes::kernel && !pinned) e.skip("page-locked");
    } else if (zero_copy && !device_addressable(p.host_memory)) {
      e.skip("the device can address");
    } else if (pageable_route && device_addressable(p.host_memory)) {
      e.skip("for pageable memory");  // pinned kinds and managed memory: copy-async's
    } else if (p.route == cuda::own_routes::latency && p.bytes < 4) {
      e.skip("at least 4 B");
    }
    return e;
  };
  return c;
}

}  // namespace
}  // namespace xfer::cuda

namespace xfer::test {

XFER_CONFORMANCE_SUITES(CudaRuntime, cuda::cuda_case("cuda-rt"));
XFER_CONFORMANCE_SUITES(CudaDriver, cuda::cuda_case("cuda-drv"));

}  // namespace xfer::test
