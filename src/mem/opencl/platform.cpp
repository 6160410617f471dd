#include "platform.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fmt/format.h>
#include <map>

namespace xfer::opencl {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool has(const std::string& haystack, std::string_view needle) { return haystack.find(needle) != std::string::npos; }

std::string type_name(cl_device_type t) {
  if (t & CL_DEVICE_TYPE_GPU) return "gpu";
  if (t & CL_DEVICE_TYPE_CPU) return "cpu";
  if (t & CL_DEVICE_TYPE_ACCELERATOR) return "accelerator";
  if (t & CL_DEVICE_TYPE_CUSTOM) return "custom";
  return "unknown";
}

}  // namespace

std::string platform_token(std::string_view platform_name, std::string_view vendor) {
  const std::string text = lower(platform_name) + " | " + lower(vendor);
  // Order matters: Mesa's platforms name their vendor "Mesa" whatever the
  // hardware, and PoCL runs on many vendors' CPUs. Others (Apple, ARM,
  // Oclgrind, ...) are already named by their first word.
  static const std::pair<const char*, const char*> known[] = {
      {"portable computing language", "pocl"},
      {"pocl", "pocl"},
      {"rusticl", "rusticl"},
      {"clover", "clover"},
      {"nvidia", "nvidia"},
      {"advanced micro devices", "amd"},
      {"amd", "amd"},
      {"intel", "intel"},
  };
  for (const auto& [needle, token] : known)
    if (has(text, needle)) return token;
  // Unknown platform: its first word, letters and digits only.
  std::string token;
  for (char c : lower(platform_name)) {
    if (std::isalnum(static_cast<unsigned char>(c)))
      token += c;
    else if (!token.empty())
      break;
  }
  return token.empty() ? "platform" : token;
}

std::vector<std::string> unique_tokens(const std::vector<std::string>& tokens) {
  std::vector<std::string> out;
  std::map<std::string, int> seen;
  for (std::size_t i = 0; i < tokens.size(); ++i)
    out.push_back(seen[tokens[i]]++ == 0 ? tokens[i] : fmt::format("{}-{}", tokens[i], i));
  return out;
}

double device_caps::timer_resolution_s() const noexcept {
  return static_cast<double>(std::max<std::size_t>(timer_resolution_ns, 1)) * 1e-9;
}

std::pair<int, int> parse_cl_version(std::string_view version) {
  int major = 0, minor = 0;
  if (std::sscanf(std::string(version).c_str(), "OpenCL %d.%d", &major, &minor) == 2) return {major, minor};
  return {1, 0};
}

namespace {

// From the Khronos registry's cl_nv_device_attribute_query; not in the
// standard headers. The slot id packs device << 3 | function.
constexpr cl_device_info pci_bus_id_nv = 0x4008, pci_slot_id_nv = 0x4009, pci_domain_id_nv = 0x400A;

std::string pci_address(cl_device_id d) {
  std::string extensions;
  try {
    extensions = device_string(d, CL_DEVICE_EXTENSIONS, "CL_DEVICE_EXTENSIONS");
  } catch (const std::exception&) {
    return {};
  }
  const auto has = [&](std::string_view ext) { return extensions.find(ext) != std::string::npos; };
  if (has("cl_khr_pci_bus_info")) {
    cl_device_pci_bus_info_khr info{};
    if (clGetDeviceInfo(d, CL_DEVICE_PCI_BUS_INFO_KHR, sizeof info, &info, nullptr) == CL_SUCCESS)
      return fmt::format("{:04x}:{:02x}:{:02x}.{:x}", info.pci_domain, info.pci_bus, info.pci_device, info.pci_function);
  }
  if (has("cl_nv_device_attribute_query")) {
    cl_uint bus = 0, slot = 0, domain = 0;
    if (clGetDeviceInfo(d, pci_bus_id_nv, sizeof bus, &bus, nullptr) == CL_SUCCESS &&
        clGetDeviceInfo(d, pci_slot_id_nv, sizeof slot, &slot, nullptr) == CL_SUCCESS) {
      if (clGetDeviceInfo(d, pci_domain_id_nv, sizeof domain, &domain, nullptr) != CL_SUCCESS) domain = 0;
      return fmt::format("{:04x}:{:02x}:{:02x}.{:x}", domain, bus, slot >> 3, slot & 7);
    }
  }
  return {};
}

}  // namespace

device_caps query_device(cl_device_id d) {
  device_caps c;
  c.id = d;
  c.name = device_string(d, CL_DEVICE_NAME, "CL_DEVICE_NAME");
  c.vendor = device_string(d, CL_DEVICE_VENDOR, "CL_DEVICE_VENDOR");
  c.version = device_string(d, CL_DEVICE_VERSION, "CL_DEVICE_VERSION");
  c.c_version = device_string(d, CL_DEVICE_OPENCL_C_VERSION, "CL_DEVICE_OPENCL_C_VERSION");
  c.driver_version = device_string(d, CL_DRIVER_VERSION, "CL_DRIVER_VERSION");
  c.type = type_name(device_value<cl_device_type>(d, CL_DEVICE_TYPE, "CL_DEVICE_TYPE"));
  std::tie(c.major, c.minor) = parse_cl_version(c.version);
  c.global_mem_bytes = device_value<cl_ulong>(d, CL_DEVICE_GLOBAL_MEM_SIZE, "CL_DEVICE_GLOBAL_MEM_SIZE");
  c.max_alloc_bytes = device_value<cl_ulong>(d, CL_DEVICE_MAX_MEM_ALLOC_SIZE, "CL_DEVICE_MAX_MEM_ALLOC_SIZE");
  c.timer_resolution_ns =
      device_value<std::size_t>(d, CL_DEVICE_PROFILING_TIMER_RESOLUTION, "CL_DEVICE_PROFILING_TIMER_RESOLUTION");
  c.compute_units = device_value<cl_uint>(d, CL_DEVICE_MAX_COMPUTE_UNITS, "CL_DEVICE_MAX_COMPUTE_UNITS");
  c.max_work_group = device_value<std::size_t>(d, CL_DEVICE_MAX_WORK_GROUP_SIZE, "CL_DEVICE_MAX_WORK_GROUP_SIZE");
  // Deprecated since 2.0 and optional to answer: a refusal is "unknown", not an error.
  cl_bool unified = CL_FALSE;
  if (clGetDeviceInfo(d, CL_DEVICE_HOST_UNIFIED_MEMORY, sizeof unified, &unified, nullptr) == CL_SUCCESS)
    c.host_unified_memory = unified ? 1 : 0;
  // SVM exists from 2.0 on; 1.x devices reject the query.
  if (c.major >= 2) {
    cl_device_svm_capabilities svm = 0;
    if (clGetDeviceInfo(d, CL_DEVICE_SVM_CAPABILITIES, sizeof svm, &svm, nullptr) == CL_SUCCESS) c.svm = svm;
  }
  c.pci_bus_id = pci_address(d);
  return c;
}

std::vector<platform_desc> discover_platforms() {
  std::vector<platform_desc> out;
  std::vector<std::string> tokens;
  const auto ids = platform_ids();
  for (std::size_t i = 0; i < ids.size(); ++i) {
    platform_desc p;
    p.id = ids[i];
    p.index = static_cast<int>(i);
    p.name = platform_string(ids[i], CL_PLATFORM_NAME, "CL_PLATFORM_NAME");
    p.vendor = platform_string(ids[i], CL_PLATFORM_VENDOR, "CL_PLATFORM_VENDOR");
    p.version = platform_string(ids[i], CL_PLATFORM_VERSION, "CL_PLATFORM_VERSION");
    tokens.push_back(platform_token(p.name, p.vendor));
    out.push_back(std::move(p));
  }
  const auto unique = unique_tokens(tokens);
  for (std::size_t i = 0; i < out.size(); ++i) out[i].token = unique[i];
  return out;
}

command_queue make_queue(const context& ctx, const device_caps& caps, bool profiling) {
  cl_int rc = CL_SUCCESS;
  command_queue q;
  const cl_command_queue_properties flags = profiling ? CL_QUEUE_PROFILING_ENABLE : 0;
  // clCreateCommandQueueWithProperties is 2.0+; 1.x drivers may not export it.
  if (caps.major >= 2) {
    const cl_queue_properties props[] = {CL_QUEUE_PROPERTIES, flags, 0};
    q = command_queue(clCreateCommandQueueWithProperties(ctx.get(), caps.id, props, &rc));
    check(rc, "clCreateCommandQueueWithProperties", profiling ? "CL_QUEUE_PROFILING_ENABLE" : "in order");
  } else {
    q = command_queue(clCreateCommandQueue(ctx.get(), caps.id, flags, &rc));
    check(rc, "clCreateCommandQueue", profiling ? "CL_QUEUE_PROFILING_ENABLE" : "in order");
  }
  return q;
}

found_device find_device(std::string_view platform, int device) {
  const auto platforms = discover_platforms();
  const auto p = std::find_if(platforms.begin(), platforms.end(),
                              [&](const platform_desc& d) { return platform.empty() || d.token == platform; });
  if (p == platforms.end())
    throw std::runtime_error(platforms.empty() ? "no OpenCL platform is installed"
                                               : fmt::format("no OpenCL platform '{}'", platform));
  const auto ids = device_ids(p->id);
  if (device < 0 || static_cast<std::size_t>(device) >= ids.size())
    throw std::runtime_error(fmt::format("OpenCL platform '{}' has {} device(s); there is no device {}", p->token,
                                         ids.size(), device));
  return {*p, query_device(ids[static_cast<std::size_t>(device)])};
}

}  // namespace xfer::opencl
