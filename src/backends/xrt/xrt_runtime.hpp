#pragma once
// What XRT needs from the process before its first call, and what it says
// about where it runs: hardware, or one of its emulation modes.
#include <string>

namespace xfer::xrt_backend {

// XCL_EMULATION_MODE as XRT reads it: "" (hardware), "noop", "sw_emu", "hw_emu".
std::string emulation_mode();

// XRT loads its shims from $XILINX_XRT/lib. Xilinx's own packages install
// under /opt/xilinx/xrt and their setup script sets the variable; Debian's
// libxrt puts the shims in the multiarch directory and sets nothing, so
// every call fails with "XILINX_XRT not set". Where it is unset and the
// shims are found beside libxrt_coreutil, this points it at a directory
// whose lib/ is that directory (a symlink under the user's cache), once per
// process. Returns "" when XRT can be called, else why not.
std::string prepare_environment();

}  // namespace xfer::xrt_backend
