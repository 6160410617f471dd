// The backend conformance suite (tests/conformance/backend_conformance.hpp)
// over OpenCL on PoCL: every route x direction x host kind either verifies and
// times, or is skipped for the reason the backend gives for it.
#include "../conformance/backend_conformance.hpp"
#include "opencl/host_memory.hpp"
#include "opencl/routes.hpp"
#include "pocl.hpp"

namespace xfer::opencl {
namespace {

using test::backend_case;
using test::point_expectation;

backend_case pocl_case() {
  using enum direction;
  backend_case c;
  c.name = "opencl_pocl";
  c.get = [](std::string& why) -> backend* { return testing::pocl_backend(&why); };
  c.routes = {{route_kind::copy_async, {h2d, d2h, bidir, rw, d2d}, true},
              {route_kind::copy_sync, {h2d, d2h, rw}, true},
              {opencl::own_routes::map, {h2d, d2h, rw}, true},
              {route_kind::kernel_host, {h2d, d2h, bidir, rw}, true},
              {route_kind::kernel_device, {d2d}, false},
              {route_kind::staged, {h2d, d2h}, true},
              {opencl::own_routes::blocks_list, {h2d, d2h}, true}};
  c.kinds = {"pageable",       "pageable-unaligned", "aligned",    "huge",
             "alloc-host-ptr", "use-host-ptr",       "svm-coarse", "svm-fine"};
  c.expect = [](backend& b, const point_spec& p) {
    point_expectation e;
    e.timer = p.route == route_kind::copy_async || p.route == route_kind::kernel_host || p.route == route_kind::kernel_device ? clock_kind::event : clock_kind::wall;
    e.bytes_per_rep = test::two_way_bytes(p);
    if (p.host_memory == "none") return e;
    // A kind this device cannot provide, then a kernel that cannot reach plain host memory.
    const auto& caps = static_cast<opencl_backend&>(b).context_for(p.device).caps;
    if (const std::string why = kind_unavailable_reason(p.host_memory, caps); !why.empty()) {
      e.skip(why);
    } else if (p.route == route_kind::kernel_host && !is_opencl_kind(p.host_memory)) {
      e.skip("cl_mem or SVM");
    } else if (p.route == route_kind::staged && is_opencl_kind(p.host_memory)) {
      e.skip("for pageable memory");  // the API's own memory: copy-sync and copy-async move it
    }
    return e;
  };
  return c;
}

}  // namespace
}  // namespace xfer::opencl

namespace xfer::test {

XFER_CONFORMANCE_SUITES(Pocl, opencl::pocl_case());

}  // namespace xfer::test
