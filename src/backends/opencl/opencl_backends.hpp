#pragma once
// Entry point for the registry: one backend per installed OpenCL platform
// ("opencl:pocl", "opencl:nvidia", ...), or one unavailable "opencl" entry
// saying why there is none. Free of OpenCL headers on purpose.
#include <vector>
#include <xfer/core/backend.hpp>
#include <xfer/mem/kinds.hpp>

namespace xfer::opencl {

std::vector<backend_entry> make_opencl_backends(const mem::kind_options& kinds);

}  // namespace xfer::opencl
