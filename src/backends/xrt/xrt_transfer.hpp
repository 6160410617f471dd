#pragma once
#include <memory>
#include <string>
#include <vector>
#include <xfer/core/backend.hpp>
#include <xfer/mem/kinds.hpp>

namespace xfer::xrt_backend {

// XRT's own routes (copy-sync is core's); a new one is declared here and
// described in the backend's routes() (xrt_backend.cpp).
namespace own_routes {
// bo.sync of a buffer object's own host backing, the DMA alone
inline const route_kind bo_sync = route_kind::declare("bo-sync", route_family::copy);
// a buffer object over the caller's memory, then bo.sync (the 4 KiB rule applies)
inline const route_kind user_ptr = route_kind::declare("user-ptr", route_family::copy);
}  // namespace own_routes

// XRT's own buffer flavours, the host memory kinds of route bo-sync.
struct bo_kind {
  std::string name;
  std::string description;
};
const std::vector<bo_kind>& bo_kinds();

// Why `route` can never move `kind`: bo-sync takes only XRT's own buffers,
// the other routes only host memory (backend::pairing_gap); "" when it can.
std::string bo_pairing_gap(route_kind route, const std::string& kind);

// Throws skip_point where the point cannot run (with why).
std::unique_ptr<transfer> make_xrt_transfer(const point_spec& p, const device_info& device, const std::string& mode,
                                            mem::kind_options kinds);

}  // namespace xfer::xrt_backend
