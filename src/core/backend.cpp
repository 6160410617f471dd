#include <algorithm>
#include <ostream>
#include <stdexcept>
#include <fmt/format.h>
#include <xfer/core/backend.hpp>
#include <xfer/core/errors.hpp>
#include <xfer/mem/kinds.hpp>

namespace xfer {

const char* to_string(direction d) {
  switch (d) {
    case direction::h2d: return "h2d";
    case direction::d2h: return "d2h";
    case direction::bidir: return "bidir";
    case direction::rw: return "rw";
    case direction::d2d: return "d2d";
  }
  return "?";
}

const std::vector<route_kind>& all_route_kinds() {
  using enum route_kind;
  static const std::vector<route_kind> all{memcpy,      memcpy_mt,          copy_sync,           copy_async, map,
                                           kernel_host, kernel_device, kernel_device_read, kernel_device_write, latency,
                                           staged,      batch_any_order,    bo_sync,            user_ptr,   peer,
                                           copy,        cpu_store,          cpu_store_nt,       cpu_load,   cpu_load_nt,
                                           cpu_store_latency, cpu_store_nt_latency};
  return all;
}

const char* to_string(route_kind r) {
  switch (r) {
    case route_kind::memcpy: return "memcpy";
    case route_kind::memcpy_mt: return "memcpy-mt";
    case route_kind::copy_sync: return "copy-sync";
    case route_kind::copy_async: return "copy-async";
    case route_kind::map: return "map";
    case route_kind::kernel_host: return "kernel-host";
    case route_kind::kernel_device: return "kernel-device";
    case route_kind::kernel_device_read: return "kernel-device-read";
    case route_kind::kernel_device_write: return "kernel-device-write";
    case route_kind::latency: return "latency";
    case route_kind::staged: return "staged";
    case route_kind::batch_any_order: return "batch-any-order";
    case route_kind::bo_sync: return "bo-sync";
    case route_kind::user_ptr: return "user-ptr";
    case route_kind::peer: return "peer";
    case route_kind::copy: return "copy";
    case route_kind::cpu_store: return "cpu-store";
    case route_kind::cpu_store_nt: return "cpu-store-nt";
    case route_kind::cpu_load: return "cpu-load";
    case route_kind::cpu_load_nt: return "cpu-load-nt";
    case route_kind::cpu_store_latency: return "cpu-store-latency";
    case route_kind::cpu_store_nt_latency: return "cpu-store-nt-latency";
  }
  return "?";
}

std::optional<route_kind> parse_route_kind(std::string_view name) {
  for (auto r : all_route_kinds())
    if (name == to_string(r)) return r;
  return std::nullopt;
}

std::ostream& operator<<(std::ostream& os, route_kind r) { return os << to_string(r); }
std::ostream& operator<<(std::ostream& os, clock_kind c) { return os << to_string(c); }

const char* to_string(clock_kind c) { return c == clock_kind::event ? "event" : "wall"; }

clock_kind parse_clock_kind(const std::string& name) {
  if (name == "event") return clock_kind::event;
  if (name == "wall") return clock_kind::wall;
  throw std::invalid_argument("unknown timer '" + name + "' (known: event, wall)");
}

const std::vector<direction>& all_directions() {
  static const std::vector<direction> all{direction::h2d, direction::d2h, direction::bidir, direction::rw,
                                          direction::d2d};
  return all;
}

direction parse_direction(const std::string& name) {
  for (direction d : all_directions())
    if (name == to_string(d)) return d;
  throw usage_error(fmt::format("unknown direction '{}' (known: h2d, d2h, bidir, rw, d2d)", name));
}

std::unique_ptr<mem::host_resource> backend::host_memory(const std::string& kind) const {
  if (auto r = mem::make_host_kind(kind)) return r;
  throw skip_point(fmt::format("backend {} has no host memory kind '{}'", name(), kind));
}

std::string backend::pairing_gap(route_kind, const std::string&) const { return {}; }

void mark_overview(std::vector<kind_support>& kinds, std::initializer_list<std::string_view> own) {
  const auto& plain = mem::overview_kind_names();
  for (auto& k : kinds)
    k.overview = std::find(plain.begin(), plain.end(), k.name) != plain.end() ||
                 std::find(own.begin(), own.end(), k.name) != own.end();
}

backend::peer_copy backend::prepare_peer(const point_spec&) {
  throw skip_point(fmt::format("backend {} does not copy between its devices", name()));
}

}  // namespace xfer
