#pragma once
// The OpenCL staged step in a context the caller already has (the backend's
// route staged): cl_mem buffers of that context are then the step's device
// memory, so the backend fills, poisons and checks them as on its other
// routes. Build tree only: it names OpenCL types (the installed form,
// xfer/mem/opencl/staged_step.hpp, makes a context of its own).
#include <memory>
#include <xfer/mem/staged/device_step.hpp>

#include "cl.hpp"
#include "platform.hpp"

namespace xfer::opencl {

// `ctx` must hold `device`. Throws cl_error when a queue or the staging
// memory cannot be made.
std::unique_ptr<mem::device_step> make_staged_step(const platform_desc& platform, const device_caps& device,
                                                   const context& ctx);

}  // namespace xfer::opencl
