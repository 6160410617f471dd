#include "cl.hpp"

#include <fmt/format.h>

namespace xfer::opencl {

std::string error_name(cl_int code) {
  switch (code) {
#define XFER_CL_ERROR(name) \
  case name: return #name;
    XFER_CL_ERROR(CL_SUCCESS)
    XFER_CL_ERROR(CL_DEVICE_NOT_FOUND)
    XFER_CL_ERROR(CL_DEVICE_NOT_AVAILABLE)
    XFER_CL_ERROR(CL_COMPILER_NOT_AVAILABLE)
    XFER_CL_ERROR(CL_MEM_OBJECT_ALLOCATION_FAILURE)
    XFER_CL_ERROR(CL_OUT_OF_RESOURCES)
    XFER_CL_ERROR(CL_OUT_OF_HOST_MEMORY)
    XFER_CL_ERROR(CL_PROFILING_INFO_NOT_AVAILABLE)
    XFER_CL_ERROR(CL_MEM_COPY_OVERLAP)
    XFER_CL_ERROR(CL_IMAGE_FORMAT_MISMATCH)
    XFER_CL_ERROR(CL_IMAGE_FORMAT_NOT_SUPPORTED)
    XFER_CL_ERROR(CL_BUILD_PROGRAM_FAILURE)
    XFER_CL_ERROR(CL_MAP_FAILURE)
    XFER_CL_ERROR(CL_MISALIGNED_SUB_BUFFER_OFFSET)
    XFER_CL_ERROR(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
    XFER_CL_ERROR(CL_COMPILE_PROGRAM_FAILURE)
    XFER_CL_ERROR(CL_LINKER_NOT_AVAILABLE)
    XFER_CL_ERROR(CL_LINK_PROGRAM_FAILURE)
    XFER_CL_ERROR(CL_DEVICE_PARTITION_FAILED)
    XFER_CL_ERROR(CL_KERNEL_ARG_INFO_NOT_AVAILABLE)
    XFER_CL_ERROR(CL_INVALID_VALUE)
    XFER_CL_ERROR(CL_INVALID_DEVICE_TYPE)
    XFER_CL_ERROR(CL_INVALID_PLATFORM)
    XFER_CL_ERROR(CL_INVALID_DEVICE)
    XFER_CL_ERROR(CL_INVALID_CONTEXT)
    XFER_CL_ERROR(CL_INVALID_QUEUE_PROPERTIES)
    XFER_CL_ERROR(CL_INVALID_COMMAND_QUEUE)
    XFER_CL_ERROR(CL_INVALID_HOST_PTR)
    XFER_CL_ERROR(CL_INVALID_MEM_OBJECT)
    XFER_CL_ERROR(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR)
    XFER_CL_ERROR(CL_INVALID_IMAGE_SIZE)
    XFER_CL_ERROR(CL_INVALID_SAMPLER)
    XFER_CL_ERROR(CL_INVALID_BINARY)
    XFER_CL_ERROR(CL_INVALID_BUILD_OPTIONS)
    XFER_CL_ERROR(CL_INVALID_PROGRAM)
    XFER_CL_ERROR(CL_INVALID_PROGRAM_EXECUTABLE)
    XFER_CL_ERROR(CL_INVALID_KERNEL_NAME)
    XFER_CL_ERROR(CL_INVALID_KERNEL_DEFINITION)
    XFER_CL_ERROR(CL_INVALID_KERNEL)
    XFER_CL_ERROR(CL_INVALID_ARG_INDEX)
    XFER_CL_ERROR(CL_INVALID_ARG_VALUE)
    XFER_CL_ERROR(CL_INVALID_ARG_SIZE)
    XFER_CL_ERROR(CL_INVALID_KERNEL_ARGS)
    XFER_CL_ERROR(CL_INVALID_WORK_DIMENSION)
    XFER_CL_ERROR(CL_INVALID_WORK_GROUP_SIZE)
    XFER_CL_ERROR(CL_INVALID_WORK_ITEM_SIZE)
    XFER_CL_ERROR(CL_INVALID_GLOBAL_OFFSET)
    XFER_CL_ERROR(CL_INVALID_EVENT_WAIT_LIST)
    XFER_CL_ERROR(CL_INVALID_EVENT)
    XFER_CL_ERROR(CL_INVALID_OPERATION)
    XFER_CL_ERROR(CL_INVALID_GL_OBJECT)
    XFER_CL_ERROR(CL_INVALID_BUFFER_SIZE)
    XFER_CL_ERROR(CL_INVALID_MIP_LEVEL)
    XFER_CL_ERROR(CL_INVALID_GLOBAL_WORK_SIZE)
    XFER_CL_ERROR(CL_INVALID_PROPERTY)
    XFER_CL_ERROR(CL_INVALID_IMAGE_DESCRIPTOR)
    XFER_CL_ERROR(CL_INVALID_COMPILER_OPTIONS)
    XFER_CL_ERROR(CL_INVALID_LINKER_OPTIONS)
    XFER_CL_ERROR(CL_INVALID_DEVICE_PARTITION_COUNT)
    XFER_CL_ERROR(CL_INVALID_PIPE_SIZE)
    XFER_CL_ERROR(CL_INVALID_DEVICE_QUEUE)
    XFER_CL_ERROR(CL_INVALID_SPEC_ID)
    XFER_CL_ERROR(CL_PLATFORM_NOT_FOUND_KHR)
#ifdef CL_MAX_SIZE_RESTRICTION_EXCEEDED  // headers from 2022 on (older CUDA toolkits ship earlier ones)
    XFER_CL_ERROR(CL_MAX_SIZE_RESTRICTION_EXCEEDED)
#endif
#undef XFER_CL_ERROR
  }
  return fmt::format("CL error {}", code);
}

namespace {

std::string error_message(cl_int code, const std::string& call, std::string_view what) {
  return what.empty() ? fmt::format("{}: {}", call, error_name(code))
                      : fmt::format("{}({}): {}", call, what, error_name(code));
}

}  // namespace

cl_error::cl_error(cl_int code, const std::string& call, std::string_view what)
    : std::runtime_error(error_message(code, call, what)), code_(code) {}

void throw_cl_error(cl_int code, const char* call, std::string_view what) { throw cl_error(code, call, what); }

bool is_out_of_memory(cl_int code) noexcept {
  return code == CL_MEM_OBJECT_ALLOCATION_FAILURE || code == CL_OUT_OF_RESOURCES || code == CL_OUT_OF_HOST_MEMORY;
}

std::string platform_string(cl_platform_id p, cl_platform_info what, const char* name) {
  std::size_t n = 0;
  check(clGetPlatformInfo(p, what, 0, nullptr, &n), "clGetPlatformInfo", name);
  std::string s(n, '\0');
  check(clGetPlatformInfo(p, what, n, s.data(), nullptr), "clGetPlatformInfo", name);
  while (!s.empty() && (s.back() == '\0' || s.back() == ' ')) s.pop_back();
  return s;
}

std::string device_string(cl_device_id d, cl_device_info what, const char* name) {
  std::size_t n = 0;
  check(clGetDeviceInfo(d, what, 0, nullptr, &n), "clGetDeviceInfo", name);
  std::string s(n, '\0');
  check(clGetDeviceInfo(d, what, n, s.data(), nullptr), "clGetDeviceInfo", name);
  while (!s.empty() && (s.back() == '\0' || s.back() == ' ')) s.pop_back();
  return s;
}

std::vector<cl_platform_id> platform_ids() {
  cl_uint n = 0;
  const cl_int rc = clGetPlatformIDs(0, nullptr, &n);
  // The ICD loader answers "no platform" with CL_PLATFORM_NOT_FOUND_KHR (some with 0 and success).
  if (rc == CL_PLATFORM_NOT_FOUND_KHR || (rc == CL_SUCCESS && n == 0)) return {};
  check(rc, "clGetPlatformIDs");
  std::vector<cl_platform_id> ids(n);
  check(clGetPlatformIDs(n, ids.data(), nullptr), "clGetPlatformIDs", fmt::format("{} platforms", n));
  return ids;
}

std::vector<cl_device_id> device_ids(cl_platform_id p) {
  cl_uint n = 0;
  const cl_int rc = clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &n);
  if (rc == CL_DEVICE_NOT_FOUND || (rc == CL_SUCCESS && n == 0)) return {};
  check(rc, "clGetDeviceIDs");
  std::vector<cl_device_id> ids(n);
  check(clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, n, ids.data(), nullptr), "clGetDeviceIDs", fmt::format("{} devices", n));
  return ids;
}

}  // namespace xfer::opencl
