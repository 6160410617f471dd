#pragma once
// Run-time kernel builds: a failure throws with the compiler's build log, so a
// broken kernel or a driver's refusal is readable where it is reported.
#include <string>
#include <string_view>

#include "opencl/cl.hpp"

namespace xfer::opencl {

// kernels/copy.cl, embedded at build time.
std::string_view copy_kernel_source();
// kernels/vadd.cl, embedded at build time: the application view's vector add.
std::string_view vadd_kernel_source();

// The OpenCL C options every build uses: 1.2 is what every platform compiles
// (NVIDIA's and PoCL's OpenCL C included).
inline constexpr const char* build_options = "-cl-std=CL1.2";

// Builds `source` for one device. Throws std::runtime_error naming `what`,
// the device and the CL error, followed by the build log.
program build_program(cl_context ctx, cl_device_id device, std::string_view source, std::string_view what,
                      const char* options = build_options);

kernel make_kernel(cl_program prog, const char* name);

}  // namespace xfer::opencl
