#include "vulkan_backend.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <xfer/config.hpp>
#include <xfer/core/errors.hpp>
#include <xfer/core/system_probe.hpp>
#include <xfer/mem/error.hpp>

#include "host_resource.hpp"
#include "memory.hpp"
#include "routes.hpp"
#include "store_latency.hpp"
#include "vulkan_backends.hpp"

namespace xfer::vulkan {

vulkan_backend::vulkan_backend(std::shared_ptr<instance> inst, device_caps caps, std::string token,
                               mem::kind_options kinds)
    : inst_(std::move(inst)), caps_(std::move(caps)), token_(std::move(token)), kinds_(kinds) {}

vulkan_backend::~vulkan_backend() = default;

std::string vulkan_backend::description() const {
  std::string text = fmt::format("Vulkan {} device {} '{}' ({} {})", version_text(caps_.api_version), caps_.index,
                                 caps_.name, caps_.driver_name, caps_.driver_info);
  // lavapipe: every memory type is host RAM, so its numbers are memcpy speeds.
  if (caps_.type == "cpu")
    text += "; a CPU device: its transfers are copies within host memory, and its device-local-host-visible memory is "
            "ordinary host memory, not a BAR";
  return text;
}

std::vector<device_info> vulkan_backend::devices() const {
  device_info d;
  d.index = 0;
  d.name = caps_.name;
  d.type = caps_.type;
  d.memory_bytes = caps_.device_local_bytes();
  d.max_alloc_bytes = caps_.max_alloc_bytes;
  for (const auto& kind : vulkan_kind_names())
    if (auto why = kind_unavailable_reason(kind, caps_); !why.empty()) d.unavailable_kinds[kind] = std::move(why);
  d.details["vulkan_api_version"] = version_text(caps_.api_version);
  d.details["driver_name"] = caps_.driver_name;
  d.details["driver_info"] = caps_.driver_info;
  d.details["driver_version"] = caps_.driver_version;
  d.details["physical_device_index"] = std::to_string(caps_.index);
  d.details["timestamp_period_ns"] = fmt::format("{}", caps_.timestamp_period_ns);
  d.details["import_alignment_bytes"] = caps_.host_import ? std::to_string(caps_.import_alignment) : "no import";
  std::string types;
  for (std::uint32_t i = 0; i < caps_.memory.memoryTypeCount; ++i) {
    const auto& t = caps_.memory.memoryTypes[i];
    types += fmt::format("{}{}: {} (heap {}, {} B)", i ? "; " : "", i, memory_flags_text(t.propertyFlags), t.heapIndex,
                         caps_.memory.memoryHeaps[t.heapIndex].size);
  }
  d.details["memory_types"] = types;
  std::string fams;
  for (const auto& f : caps_.families)
    fams += fmt::format("{}{}: flags 0x{:x}, {} queues, {} timestamp bits", f.index ? "; " : "", f.index, f.flags,
                        f.count, f.timestamp_bits);
  d.details["queue_families"] = fams;
  if (!caps_.pci_bus_id.empty()) d.details["pci_bus_id"] = caps_.pci_bus_id;
  return {d};
}

std::vector<route_info> vulkan_backend::routes() const { return route_table(); }

std::vector<kind_support> vulkan_backend::host_memory_kinds() const {
  std::vector<kind_support> out;
  for (const auto& name : mem::host_kind_names())
    out.push_back({name, true, "",
                   mem::make_host_kind(name, kinds_)->describe() +
                       "; staged by the application through a host-coherent buffer"});
  for (const auto& name : vulkan_kind_names()) {
    const std::string why = kind_unavailable_reason(name, caps_);
    out.push_back({name, why.empty(), why, describe_kind(name)});
  }
  mark_overview(out, {"host-coherent", "device-local-host-visible"});
  return out;
}

std::string vulkan_backend::pairing_gap(route_kind route, const std::string& kind) const {
  return route_kind_gap(route, kind);
}

std::map<std::string, std::string> vulkan_backend::versions() const {
  return {{"vulkan_instance", version_text(inst_->api_version())},
          {"vulkan_device", version_text(caps_.api_version)},
          {"vulkan_driver", fmt::format("{} {} ({})", caps_.driver_name, caps_.driver_info, caps_.driver_version)}};
}

device_context& vulkan_backend::context() const {
  if (!ctx_) ctx_ = std::make_unique<device_context>(inst_, caps_);
  return *ctx_;
}

std::unique_ptr<transfer> vulkan_backend::prepare(const point_spec& p) {
  if (!vulkan_route(p.route) || p.device != 0)
    throw std::logic_error(fmt::format("{} was handed an unplanned point: route '{}', device {}", name(),
                                       to_string(p.route), p.device));
  if (p.host_memory != "none")
    if (auto why = kind_unavailable_reason(p.host_memory, caps_); !why.empty()) throw skip_point(why);
  require_route(p, caps_);
  const std::uint64_t device_buffers = p.dir == direction::bidir || p.dir == direction::d2d ? 2 : 1;
  if (device_buffers * p.bytes > caps_.device_local_bytes())
    throw skip_point(fmt::format("needs {} device buffers of {} B; the largest device-local heap has {} B",
                                 device_buffers, p.bytes, caps_.device_local_bytes()));
  const std::uint64_t host_buffers = p.host_memory == "none" || p.dir == direction::d2d ? 0 : p.dir == direction::bidir ? 2 : 1;
  const std::uint64_t host_bytes = (host_buffers * 2 + (caps_.type == "cpu" ? device_buffers : 0)) * p.bytes;
  if (const std::uint64_t available = available_memory_bytes(); available && host_bytes > available)
    throw skip_point(fmt::format("needs about {} B of host memory; only {} B is available", host_bytes, available));
  device_context& dev = context();
  // Each shader's pipeline once, on the first point that needs it; one that
  // failed fails its later points with the same reason, untried.
  const auto ensure = [&](std::unique_ptr<compute_pipeline>& pipe, std::string& error,
                          std::span<const std::uint32_t> spirv, const char* what, std::uint32_t push_bytes) {
    if (pipe) return;
    if (!error.empty()) throw std::runtime_error(error);
    try {
      pipe = std::make_unique<compute_pipeline>(dev, spirv, what, push_bytes);
    } catch (const std::exception& e) {
      error = fmt::format("the compute pipeline ({}) could not be made: {}", what, e.what());
      throw std::runtime_error(error);
    }
  };
  if (p.route == route_kind::kernel_host) ensure(pipe_, pipe_error_, copy_shader_spirv(), "shaders/copy.comp", 8);
  if (p.route == own_routes::cpu_store_latency || p.route == own_routes::cpu_store_nt_latency)
    ensure(poll_pipe_, poll_pipe_error_, poll_shader_spirv(), "shaders/poll.comp", 20);
  try {
    return make_transfer(p, dev, kinds_, pipe_.get(), poll_pipe_.get());
  } catch (const vk_error& e) {
    if (is_out_of_memory(e.code()))
      throw skip_point(fmt::format("the device could not hold this point's buffers of {} B: {}", p.bytes, e.what()));
    throw;
  } catch (const mem::allocation_error& e) {
    throw skip_point(e.what());
  }
}

std::unique_ptr<mem::host_resource> vulkan_backend::host_memory(const std::string& kind) const {
  const auto cls = kind_class(kind);
  if (!cls) {
    if (auto r = mem::make_host_kind(kind, kinds_)) return r;
    if (kind == "imported")
      throw skip_point(fmt::format("{}: imported memory is the CPU's own page-aligned memory ('aligned')", name()));
    return backend::host_memory(kind);
  }
  if (auto why = kind_unavailable_reason(kind, caps_); !why.empty()) throw skip_point(fmt::format("{}: {}", name(), why));
  try {
    return std::make_unique<vk_host_resource>(kind, context(), *cls);
  } catch (const vk_error& e) {
    throw skip_point(fmt::format("{} memory from {}: {}", kind, name(), e.what()));
  }
}

// ---- registry entry point ----

std::vector<backend_entry> make_vulkan_backends(const mem::kind_options& kinds) {
  std::vector<backend_entry> out;
  std::shared_ptr<instance> inst;
  std::vector<device_caps> devices;
  try {
    inst = shared_instance();
    devices = discover_devices(*inst);
  } catch (const std::exception& e) {
    out.push_back({"vulkan", nullptr, e.what()});
    return out;
  }
  if (devices.empty()) {
    out.push_back({"vulkan", nullptr,
                   "the Vulkan loader found no device (install a driver: mesa-vulkan-drivers for lavapipe, or name "
                   "its ICD file in VK_DRIVER_FILES)"});
    return out;
  }
  const auto tokens = device_tokens(devices);
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const std::string name = "vulkan:" + tokens[i];
    if (devices[i].api_version < VK_API_VERSION_1_2 || !devices[i].timeline_semaphores) {
      out.push_back({name, nullptr,
                     fmt::format("device '{}' is Vulkan {}{}; the backend needs 1.2 with timeline semaphores (its gate)",
                                 devices[i].name, version_text(devices[i].api_version),
                                 devices[i].timeline_semaphores ? "" : " without timeline semaphores")});
      continue;
    }
    out.push_back({name, std::make_unique<vulkan_backend>(inst, std::move(devices[i]), tokens[i], kinds), ""});
  }
  return out;
}

}  // namespace xfer::vulkan
