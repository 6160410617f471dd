#pragma once
// What a platform and its devices are, read once: names for selection, and
// the capabilities that decide which points can run (max allocation, SVM,
// profiling clock).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cl.hpp"

namespace xfer::opencl {

// A short, stable, lowercase token for a platform, for backend names
// ("opencl:<token>"): the known vendors by name ("pocl", "nvidia", "amd",
// "intel", "rusticl", ...), else the first word of the platform name.
std::string platform_token(std::string_view platform_name, std::string_view vendor);

// Tokens for all platforms in order, made unique: a token that repeats gets
// "-<platform index>" on every occurrence after its first.
std::vector<std::string> unique_tokens(const std::vector<std::string>& tokens);

struct device_caps {
  cl_device_id id = nullptr;
  std::string name, vendor, version, c_version, driver_version;
  std::string type;  // "cpu", "gpu", "accelerator", "custom"
  int major = 1, minor = 0;  // from CL_DEVICE_VERSION ("OpenCL 3.0 ...")
  std::uint64_t global_mem_bytes = 0;
  std::uint64_t max_alloc_bytes = 0;
  std::size_t timer_resolution_ns = 0;
  int host_unified_memory = -1;  // 1 yes, 0 no, -1 the device does not say
  unsigned compute_units = 0;
  std::size_t max_work_group = 0;
  cl_device_svm_capabilities svm = 0;  // 0 before OpenCL 2.0
  // "0000:00:06.0" from cl_khr_pci_bus_info or NVIDIA's
  // cl_nv_device_attribute_query; empty when the device says neither (PoCL's CPU).
  std::string pci_bus_id;

  bool svm_coarse() const noexcept { return (svm & CL_DEVICE_SVM_COARSE_GRAIN_BUFFER) != 0; }
  bool svm_fine() const noexcept { return (svm & CL_DEVICE_SVM_FINE_GRAIN_BUFFER) != 0; }
  // Seconds per tick of the profiling clock (never 0, so batching stays sane).
  double timer_resolution_s() const noexcept;
};

device_caps query_device(cl_device_id d);

// An in-order queue on `caps`' device, with profiling timestamps if asked for
// (clCreateCommandQueueWithProperties on 2.0+ devices, clCreateCommandQueue on 1.x).
command_queue make_queue(const context& ctx, const device_caps& caps, bool profiling = true);

// "OpenCL 3.0 CUDA 12.4.89" -> {3, 0}; {1, 0} if it cannot be read.
std::pair<int, int> parse_cl_version(std::string_view version);

struct platform_desc {
  cl_platform_id id = nullptr;
  int index = 0;
  std::string name, vendor, version;
  std::string token;
};

// Every installed platform with its unique token; empty when none is installed.
std::vector<platform_desc> discover_platforms();

// A platform by its token (empty: the first) and its device'th device, for
// the public factories (host kinds, the staged step). Throws
// std::runtime_error saying which is missing and what there is.
struct found_device {
  platform_desc platform;
  device_caps device;
};
found_device find_device(std::string_view platform, int device);

}  // namespace xfer::opencl
