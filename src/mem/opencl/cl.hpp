#pragma once
// The only header that includes the OpenCL C API: error checking that says
// which call failed with which CL error and sizes, and reference-counted
// handles so no cl_* object leaks on an exception path.
//
// We target the 3.0 headers but call only what each device's version offers
// (clCreateCommandQueue on 1.x devices, SVM only where the device reports it),
// so the 1.2-era entry points stay declared without deprecation warnings.
#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 300
#endif
#ifndef CL_USE_DEPRECATED_OPENCL_1_2_APIS
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#endif
#include <CL/cl.h>
#include <CL/cl_ext.h>

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace xfer::opencl {

// "CL_OUT_OF_RESOURCES" for -5; "CL error -1234" for codes we do not know.
std::string error_name(cl_int code);

// A failed OpenCL call. what(): "<call>(<what>): <CL_NAME>".
class cl_error : public std::runtime_error {
 public:
  cl_error(cl_int code, const std::string& call, std::string_view what);
  cl_int code() const noexcept { return code_; }

 private:
  cl_int code_;
};

[[noreturn]] void throw_cl_error(cl_int code, const char* call, std::string_view what = {});

inline void check(cl_int code, const char* call, std::string_view what = {}) {
  if (code != CL_SUCCESS) throw_cl_error(code, call, what);
}

// The device ran out of something it needs to hold the point's buffers: the
// point is skipped (with this reason) rather than failed, and the sweep goes on.
bool is_out_of_memory(cl_int code) noexcept;

// Owns one reference to a cl_* object; copying retains, destruction releases.
template <class T, auto Retain, auto Release>
class handle {
 public:
  handle() = default;
  explicit handle(T h) noexcept : h_(h) {}  // adopts the caller's reference
  handle(const handle& o) noexcept : h_(o.h_) {
    if (h_) Retain(h_);
  }
  handle(handle&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  handle& operator=(handle o) noexcept {
    std::swap(h_, o.h_);
    return *this;
  }
  ~handle() {
    if (h_) Release(h_);
  }
  T get() const noexcept { return h_; }
  explicit operator bool() const noexcept { return h_ != nullptr; }
  // For create-style calls that return the object through a pointer.
  T* reset_and_out() noexcept {
    *this = handle();
    return &h_;
  }

 private:
  T h_ = nullptr;
};

using context = handle<cl_context, clRetainContext, clReleaseContext>;
using command_queue = handle<cl_command_queue, clRetainCommandQueue, clReleaseCommandQueue>;
using mem_object = handle<cl_mem, clRetainMemObject, clReleaseMemObject>;
using program = handle<cl_program, clRetainProgram, clReleaseProgram>;
using kernel = handle<cl_kernel, clRetainKernel, clReleaseKernel>;
using event = handle<cl_event, clRetainEvent, clReleaseEvent>;

// ---- info queries (throw cl_error naming the query) ----

std::string platform_string(cl_platform_id p, cl_platform_info what, const char* name);
std::string device_string(cl_device_id d, cl_device_info what, const char* name);

template <class T>
T device_value(cl_device_id d, cl_device_info what, const char* name) {
  T v{};
  check(clGetDeviceInfo(d, what, sizeof v, &v, nullptr), "clGetDeviceInfo", name);
  return v;
}

// Every platform the ICD loader knows; empty when none is installed
// (CL_PLATFORM_NOT_FOUND_KHR). Throws for any other failure.
std::vector<cl_platform_id> platform_ids();
// Every device of the platform; empty when it has none.
std::vector<cl_device_id> device_ids(cl_platform_id p);

}  // namespace xfer::opencl
