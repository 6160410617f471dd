// The backend conformance suite (backend_conformance.hpp) over the host
// backend: every route, direction and host kind runs here, on the wall clock.
#include <cstdlib>

#include <xfer/core/block_route.hpp>

#include "backend_conformance.hpp"
#include "../support/scoped_inputs.hpp"
#include "host/host_backend.hpp"

namespace {

using namespace xfer;
using xfer::test::backend_case;

backend_case host_case() {
  using enum direction;
  backend_case c;
  c.name = "host";
  c.get = [](std::string&) -> backend* {
    // Route staged with a tuning the inputs fix (so nothing is
    // calibrated): 4 KiB chunks and no handoff, so the suite's sizes run
    // through the ring, 4099 B and 256 KiB + 20 B ending in a partial chunk.
    static const test::scoped_inputs fixed = test::fixed_staged_tuning("4096", "4", "2", "1");
    static host::host_backend b(2, {});
    return &b;
  };
  c.routes = {{route_kind::memcpy, {h2d, d2h, bidir, rw, d2d}, true},
              {host::own_routes::memcpy_mt, {h2d, d2h, rw, d2d}, true},
              {route_kind::staged, {h2d, d2h}, true}};
  for (route_kind r : {block_routes::loop, block_routes::batch, block_routes::kernel, block_routes::pack,
                       block_routes::choice, block_routes::contiguous})
    c.routes.push_back({r, {h2d, d2h}, true});
  c.kinds = {"pageable", "pageable-unaligned", "aligned", "huge"};
  c.expect = [](backend&, const point_spec& p) {
    test::point_expectation e{.runs = true, .skip_mentions = "", .timer = clock_kind::wall,
                              .bytes_per_rep = test::two_way_bytes(p)};
    // Every host kind is pageable: the kernel way needs page-locked memory.
    if (p.route == block_routes::kernel) e.skip("page-locked");
    return e;
  };
  return c;
}

}  // namespace

namespace xfer::test {

XFER_CONFORMANCE_SUITES(Host, host_case());

}  // namespace xfer::test
