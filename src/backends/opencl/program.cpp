#include "program.hpp"

#include <fmt/format.h>

namespace xfer::opencl {
namespace {

std::string build_log(cl_program prog, cl_device_id device) {
  std::size_t n = 0;
  if (clGetProgramBuildInfo(prog, device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n) != CL_SUCCESS)
    return "(the build log could not be read)";
  std::string log(n, '\0');
  if (clGetProgramBuildInfo(prog, device, CL_PROGRAM_BUILD_LOG, n, log.data(), nullptr) != CL_SUCCESS)
    return "(the build log could not be read)";
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n' || log.back() == ' ')) log.pop_back();
  return log.empty() ? "(the build log is empty)" : log;
}

}  // namespace

program build_program(cl_context ctx, cl_device_id device, std::string_view source, std::string_view what,
                      const char* options) {
  const char* text = source.data();
  const std::size_t length = source.size();
  cl_int rc = CL_SUCCESS;
  program prog(clCreateProgramWithSource(ctx, 1, &text, &length, &rc));
  check(rc, "clCreateProgramWithSource", fmt::format("{}, {} B of source", what, length));
  rc = clBuildProgram(prog.get(), 1, &device, options, nullptr, nullptr);
  if (rc != CL_SUCCESS) {
    std::string device_name = "?";
    try {
      device_name = device_string(device, CL_DEVICE_NAME, "CL_DEVICE_NAME");
    } catch (const cl_error&) {
    }
    throw std::runtime_error(fmt::format("building OpenCL program {} for {} failed: clBuildProgram({}): {}\nbuild log:\n{}",
                                         what, device_name, options, error_name(rc), build_log(prog.get(), device)));
  }
  return prog;
}

kernel make_kernel(cl_program prog, const char* name) {
  cl_int rc = CL_SUCCESS;
  kernel k(clCreateKernel(prog, name, &rc));
  check(rc, "clCreateKernel", name);
  return k;
}

}  // namespace xfer::opencl
