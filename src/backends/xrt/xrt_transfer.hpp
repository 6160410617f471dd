#pragma once
#include <memory>
#include <string>
#include <vector>
#include <xfer/core/backend.hpp>
#include <xfer/mem/kinds.hpp>

namespace xfer::xrt_backend {

// XRT's own buffer flavours, the host memory kinds of route bo-sync.
struct bo_kind {
  std::string name;
  std::string description;
};
const std::vector<bo_kind>& bo_kinds();

// Throws skip_point where the point cannot run (with why).
std::unique_ptr<transfer> make_xrt_transfer(const point_spec& p, const device_info& device, const std::string& mode,
                                            mem::kind_options kinds);

}  // namespace xfer::xrt_backend
