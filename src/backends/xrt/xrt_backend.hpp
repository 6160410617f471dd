#pragma once
// Backend xrt: Xilinx's runtime through its native C++ API (xrt::device,
// xrt::bo), the vendor side of seed 002's OpenCL-against-XRT study. Runs on
// an Alveo card with XRT installed, and here through XRT's no-op emulation
// shim (XCL_EMULATION_MODE=noop), whose points are labelled as emulation and
// kept out of every peak, plot and model: bo.sync moves nothing there.
#include <memory>
#include <vector>
#include <xfer/core/backend.hpp>
#include <xfer/mem/kinds.hpp>

namespace xfer::xrt_backend {

// The one xrt entry: the backend, or null with why it cannot run here.
backend_entry make_xrt_backend(mem::kind_options kinds);

}  // namespace xfer::xrt_backend
