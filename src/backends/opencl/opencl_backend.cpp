#include "opencl_backend.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <xfer/core/errors.hpp>
#include <xfer/core/size.hpp>
#include <xfer/core/staged_route.hpp>
#include <xfer/core/system_probe.hpp>
#include <xfer/mem/error.hpp>

#include "opencl/cl_host_resource.hpp"
#include "opencl/host_memory.hpp"
#include "opencl/shared_context_step.hpp"
#include "opencl_backends.hpp"
#include "program.hpp"

namespace xfer::opencl {
namespace {

std::string svm_text(const device_caps& d) {
  std::vector<std::string> parts;
  if (d.svm & CL_DEVICE_SVM_COARSE_GRAIN_BUFFER) parts.push_back("coarse-grain buffer");
  if (d.svm & CL_DEVICE_SVM_FINE_GRAIN_BUFFER) parts.push_back("fine-grain buffer");
  if (d.svm & CL_DEVICE_SVM_FINE_GRAIN_SYSTEM) parts.push_back("fine-grain system");
  if (d.svm & CL_DEVICE_SVM_ATOMICS) parts.push_back("atomics");
  return parts.empty() ? "none" : fmt::format("{}", fmt::join(parts, ", "));
}

struct buffer_counts {
  std::uint64_t host = 0, device = 0;
};

buffer_counts buffers_for(direction d) {
  switch (d) {
    case direction::h2d:
    case direction::d2h:
    case direction::rw: return {1, 1};
    case direction::bidir: return {2, 2};
    case direction::d2d: return {0, 2};
  }
  return {0, 0};
}

}  // namespace

opencl_backend::opencl_backend(platform_desc platform, std::vector<device_caps> devices, mem::kind_options kinds)
    : platform_(std::move(platform)), devices_(std::move(devices)), kinds_(kinds) {
  contexts_.resize(devices_.size());
  build_errors_.resize(devices_.size());
}

opencl_backend::~opencl_backend() = default;

std::string opencl_backend::description() const {
  std::string text = fmt::format("OpenCL platform {} '{}' ({}, {})", platform_.index, platform_.name, platform_.vendor,
                                 platform_.version);
  // A CPU device's "device memory" is host RAM: its numbers are memcpy speeds.
  for (std::size_t i = 0; i < devices_.size(); ++i)
    if (devices_[i].type == "cpu")
      text += fmt::format("; device {} is a CPU: its transfers are copies within host memory, not over a link", i);
  return text;
}

std::vector<device_info> opencl_backend::devices() const {
  std::vector<device_info> out;
  for (std::size_t i = 0; i < devices_.size(); ++i) {
    const device_caps& c = devices_[i];
    device_info d;
    d.index = static_cast<int>(i);
    d.name = c.name;
    d.type = c.type;
    d.memory_bytes = c.global_mem_bytes;
    d.max_alloc_bytes = c.max_alloc_bytes;  // CL_DEVICE_MAX_MEM_ALLOC_SIZE
    for (const auto& kind : opencl_kind_names())
      if (auto why = kind_unavailable_reason(kind, c); !why.empty()) d.unavailable_kinds[kind] = std::move(why);
    d.details["opencl_version"] = c.version;
    d.details["opencl_c_version"] = c.c_version;
    d.details["driver_version"] = c.driver_version;
    d.details["vendor"] = c.vendor;
    d.details["platform"] = fmt::format("{} ({})", platform_.name, platform_.index);
    d.details["max_alloc_bytes"] = std::to_string(c.max_alloc_bytes);
    d.details["profiling_timer_resolution_ns"] = std::to_string(c.timer_resolution_ns);
    d.details["host_unified_memory"] = c.host_unified_memory < 0 ? "unknown" : c.host_unified_memory ? "yes" : "no";
    d.details["compute_units"] = std::to_string(c.compute_units);
    d.details["svm"] = svm_text(c);
    // Where the device sits: the runner places the measuring thread and the
    // host buffers on its CPUs (core/affinity.hpp), as for CUDA.
    if (!c.pci_bus_id.empty()) d.details["pci_bus_id"] = c.pci_bus_id;
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<kind_support> opencl_backend::host_memory_kinds() const {
  std::vector<kind_support> out;
  for (const auto& name : mem::host_kind_names())
    out.push_back({name, true, "", mem::make_host_kind(name, kinds_)->describe()});
  for (const auto& name : opencl_kind_names()) {
    // Listed as available when any device of the platform has it; prepare()
    // skips the devices that lack it.
    std::string reason;
    bool any = false;
    for (const auto& d : devices_) {
      const std::string why = kind_unavailable_reason(name, d);
      if (why.empty()) any = true;
      if (reason.empty()) reason = why;
    }
    out.push_back({name, any, any ? "" : reason, describe_opencl_kind(name, kinds_)});
  }
  mark_overview(out, {"alloc-host-ptr"});
  return out;
}

std::string opencl_backend::pairing_gap(route_kind r, const std::string& kind) const {
  const auto route = opencl_route(r);
  if (!route) return {};
  if (route_needs_kernel_visible_host(*route) && !is_opencl_kind(kind))
    return fmt::format("a kernel cannot reach {} memory: it needs a cl_mem or SVM (alloc-host-ptr, use-host-ptr, svm-*)",
                       kind);
  if (*route == route_id::staged) return skip_reason_of([&] { require_staged_kind(kind, kinds_); });
  return {};
}

std::map<std::string, std::string> opencl_backend::versions() const {
  std::map<std::string, std::string> v{{"platform", platform_.name},
                                       {"platform_vendor", platform_.vendor},
                                       {"platform_version", platform_.version},
                                       {"platform_index", std::to_string(platform_.index)}};
  for (std::size_t i = 0; i < devices_.size(); ++i) {
    v[fmt::format("device{}_driver", i)] = devices_[i].driver_version;
    v[fmt::format("device{}_version", i)] = devices_[i].version;
  }
  return v;
}

device_context& opencl_backend::context_for(int device) {
  auto& slot = contexts_.at(static_cast<std::size_t>(device));
  if (!slot) slot = std::make_unique<device_context>(make_device_context(devices_.at(static_cast<std::size_t>(device))));
  return *slot;
}

const program& opencl_backend::copy_program(int device) {
  const auto i = static_cast<std::size_t>(device);
  if (!build_errors_.at(i).empty()) throw std::runtime_error(build_errors_[i]);
  device_context& dev = context_for(device);
  if (!dev.copy_program) {
    try {
      dev.copy_program = build_program(dev.ctx.get(), dev.caps.id, copy_kernel_source(), "copy.cl");
    } catch (const std::exception& e) {
      build_errors_[i] = e.what();
      throw;
    }
  }
  return dev.copy_program;
}

mem::staged_copier& opencl_backend::copier_for(int device) {
  device_context& dev = context_for(device);
  if (!dev.staged_copier) {
    auto step = make_staged_step(platform_, dev.caps, dev.ctx);
    dev.staged_copier = make_route_copier(*step);
    dev.staged_step = std::move(step);
  }
  return *dev.staged_copier;
}

// The plan (core/plan.hpp) has checked the device, route, direction, the
// kind (devices() lists the kinds each device lacks) and the largest
// allocation; what is left depends on the route and the point's buffers.
std::unique_ptr<transfer> opencl_backend::prepare(const point_spec& p) {
  const auto route = opencl_route(p.route);
  if (!route || p.device < 0 || static_cast<std::size_t>(p.device) >= devices_.size())
    throw std::logic_error(fmt::format("{} was handed an unplanned point: route '{}', device {}", name(), to_string(p.route), p.device));
  const device_caps& caps = devices_[static_cast<std::size_t>(p.device)];
  const bool host_side = p.host_memory != "none";
  if (host_side)
    if (auto why = pairing_gap(p.route, p.host_memory); !why.empty()) throw skip_point(why);
  const buffer_counts counts = buffers_for(p.dir);
  if (counts.device * p.bytes > caps.global_mem_bytes)
    throw skip_point(fmt::format("needs {} device buffers of {} B; the device has {} B (CL_DEVICE_GLOBAL_MEM_SIZE)",
                                 counts.device, p.bytes, caps.global_mem_bytes));
  // On a CPU (or host-unified) device the device buffers are host RAM too.
  const bool device_in_host = caps.type == "cpu" || caps.host_unified_memory == 1;
  const std::uint64_t host_bytes = (counts.host + (device_in_host ? counts.device : 0)) * p.bytes;
  if (const std::uint64_t available = available_memory_bytes(); available && host_bytes > available)
    throw skip_point(fmt::format("needs {} B of host memory; only {} B is available", host_bytes, available));

  device_context& dev = context_for(p.device);
  if (*route == route_id::kernel_host || *route == route_id::kernel_device) copy_program(p.device);
  try {
    // A copier that cannot start or calibrate fails the point with its
    // reason: the device works (the other routes use it).
    if (*route == route_id::staged) return make_staged_transfer(p, dev, kinds_, copier_for(p.device));
    return make_transfer(p, *route, dev, kinds_);
  } catch (const cl_error& e) {
    if (is_out_of_memory(e.code()))
      throw skip_point(fmt::format("the device could not hold this point's buffers ({} device + {} host of {} B): {}",
                                   counts.device, counts.host, p.bytes, e.what()));
    throw;
  } catch (const mem::allocation_error& e) {
    throw skip_point(e.what());
  }
}

backend::peer_copy opencl_backend::prepare_peer(const point_spec& p) {
  const auto n = static_cast<int>(devices_.size());
  if (p.device < 0 || p.device >= n || p.peer < 0 || p.peer >= n)
    throw std::logic_error(fmt::format("{} was handed an unplanned peer copy: {} to {}", name(), p.device, p.peer));
  for (int d : {p.device, p.peer})
    if (p.bytes > devices_[static_cast<std::size_t>(d)].global_mem_bytes)
      throw skip_point(fmt::format("device {} has {} B (CL_DEVICE_GLOBAL_MEM_SIZE), less than {} B", d,
                                   devices_[static_cast<std::size_t>(d)].global_mem_bytes, p.bytes));
  device_context& src = context_for(p.device);
  device_context& dst = context_for(p.peer);
  try {
    if (p.device == p.peer) return {make_peer_transfer(p, src, dst), "local (clEnqueueCopyBuffer on one device)"};
    return {make_peer_transfer(p, src, dst),
            "staged via host (each device has its own OpenCL context; a buffer cannot cross contexts)"};
  } catch (const cl_error& e) {
    if (is_out_of_memory(e.code())) throw skip_point(fmt::format("the devices could not hold {} B: {}", p.bytes, e.what()));
    throw;
  }
}

std::unique_ptr<mem::host_resource> opencl_backend::host_memory(const std::string& kind) const {
  if (!is_opencl_kind(kind)) {
    if (auto r = mem::make_host_kind(kind, kinds_)) return r;
    return backend::host_memory(kind);  // says, in the words every backend uses, that there is no such kind
  }
  std::string why;
  for (const auto& d : devices_) {
    const std::string reason = kind_unavailable_reason(kind, d);
    if (!reason.empty()) {
      if (why.empty()) why = reason;
      continue;
    }
    const bool pinned = documented_pinned(kind, platform_.token, d.type);
    try {
      return std::make_unique<cl_host_resource>(kind, d, pinned, kinds_);
    } catch (const cl_error& e) {
      throw skip_point(fmt::format("{} memory from {}: {}", kind, name(), e.what()));
    }
  }
  throw skip_point(fmt::format("{}: {}", name(), why.empty() ? "the platform has no devices" : why));
}

// ---- registry entry point ---------------------------------------------------

std::vector<backend_entry> make_opencl_backends(const mem::kind_options& kinds) {
  std::vector<backend_entry> out;
  std::vector<platform_desc> platforms;
  try {
    platforms = discover_platforms();
  } catch (const std::exception& e) {
    out.push_back({"opencl", nullptr, fmt::format("the OpenCL platforms could not be listed: {}", e.what())});
    return out;
  }
  if (platforms.empty()) {
    out.push_back({"opencl", nullptr,
                   "no OpenCL platform is installed (clGetPlatformIDs found none; install an ICD such as "
                   "pocl-opencl-icd, or check OCL_ICD_VENDORS / OCL_ICD_FILENAMES)"});
    return out;
  }
  for (auto& p : platforms) {
    const std::string name = "opencl:" + p.token;
    const std::string platform_name = p.name;
    try {
      std::vector<device_caps> devices;
      for (cl_device_id id : device_ids(p.id)) devices.push_back(query_device(id));
      if (devices.empty()) {
        out.push_back({name, nullptr, fmt::format("platform '{}' has no devices", p.name)});
        continue;
      }
      out.push_back({name, std::make_unique<opencl_backend>(std::move(p), std::move(devices), kinds), ""});
    } catch (const std::exception& e) {
      out.push_back({name, nullptr, fmt::format("platform '{}': {}", platform_name, e.what())});
    }
  }
  return out;
}

}  // namespace xfer::opencl
