// The backend conformance suite (tests/conformance/backend_conformance.hpp)
// over Vulkan on the device under test (lavapipe in CI): every route x direction x host kind either
// verifies and times, or is skipped for the reason the backend gives for it.
#include "../conformance/backend_conformance.hpp"
#include "device_under_test.hpp"
#include "vulkan/routes.hpp"
#include "vulkan/kernel.hpp"
#include "vulkan/memory.hpp"
#include "vulkan/store_latency.hpp"

namespace xfer::vulkan {
namespace {

using test::backend_case;
using test::point_expectation;

backend_case vulkan_case() {
  using enum direction;
  backend_case c;
  c.name = "vulkan";  // the device under test (device_under_test.hpp)
  c.get = [](std::string& why) -> backend* { return testing::device_under_test(&why); };
  c.routes = {{vulkan::own_routes::copy, {h2d, d2h, bidir, rw, d2d}, true},
              {route_kind::kernel_host, {h2d, d2h, bidir, rw}, true},
              {vulkan::own_routes::cpu_store, {h2d}, true},
              {vulkan::own_routes::cpu_store_nt, {h2d}, true},
              {vulkan::own_routes::cpu_load, {d2h}, true},
              {vulkan::own_routes::cpu_load_nt, {d2h}, true},
              {vulkan::own_routes::cpu_store_latency, {h2d}, true},
              {vulkan::own_routes::cpu_store_nt_latency, {h2d}, true},
              {vulkan::own_routes::blocks_list, {h2d, d2h}, true}};
  c.kinds = {"pageable",    "pageable-unaligned",        "aligned", "huge", "host-coherent",
             "host-cached", "device-local-host-visible", "imported"};
  c.expect = [](backend& b, const point_spec& p) {
    point_expectation e;
    // Pageable kinds are staged by the application, one copy at a time: wall clock.
    const bool staged = p.host_memory != "none" && !is_vulkan_kind(p.host_memory);
    const bool cpu = p.route == vulkan::own_routes::cpu_store || p.route == vulkan::own_routes::cpu_store_nt ||
                     p.route == vulkan::own_routes::cpu_load || p.route == vulkan::own_routes::cpu_load_nt;
    const bool latency = is_store_latency_route(p.route);
    e.timer = staged || cpu || latency ? clock_kind::wall : clock_kind::event;
    e.bytes_per_rep = test::two_way_bytes(p);
    if (p.host_memory == "none") return e;
    const auto& caps = static_cast<vulkan_backend&>(b).caps();
    if (const std::string why = kind_unavailable_reason(p.host_memory, caps); !why.empty()) {
      e.skip(why);
    } else if (p.route == route_kind::kernel_host && !is_vulkan_kind(p.host_memory)) {
      e.skip("a shader cannot reach");
    } else if (p.route == route_kind::kernel_host && p.host_memory == "device-local-host-visible") {
      e.skip("the device's own memory");
    } else if (p.route == route_kind::kernel_host && copy_shader_spirv().empty()) {
      e.skip("no SPIR-V");  // built without a SPIR-V compiler
    } else if ((cpu || latency) && p.host_memory != "device-local-host-visible") {
      e.skip("through the BAR");  // host memory: the CPU study's, not a route over the link
    } else if (latency && p.bytes > store_latency_max_bytes) {
      e.skip("up to 4096 B");  // a message, not a stream
    } else if (latency && poll_shader_spirv().empty()) {
      e.skip("no SPIR-V");  // built without a SPIR-V compiler
    }
    return e;
  };
  return c;
}

}  // namespace
}  // namespace xfer::vulkan

namespace xfer::test {

XFER_CONFORMANCE_SUITES(Vulkan, vulkan::vulkan_case());

}  // namespace xfer::test
