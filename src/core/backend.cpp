#include <algorithm>
#include <deque>
#include <mutex>
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

const char* to_string(route_family f) {
  switch (f) {
    case route_family::copy: return "copy";
    case route_family::kernel_host: return "kernel-host";
    case route_family::kernel_device: return "kernel-device";
    case route_family::latency: return "latency";
    case route_family::cpu_access: return "cpu-access";
    case route_family::peer: return "peer";
    case route_family::other: return "other";
  }
  return "?";
}

const char* to_string(route_role r) {
  switch (r) {
    case route_role::none: return "";
    case route_role::api_copy_blocking: return "api-copy-blocking";
    case route_role::api_copy_queued: return "api-copy-queued";
    case route_role::staged_copier: return "staged-copier";
    case route_role::driver_batch: return "driver-batch";
    case route_role::cpu_store: return "cpu-store";
    case route_role::cpu_load: return "cpu-load";
    case route_role::cpu_store_round_trip: return "cpu-store-round-trip";
  }
  return "?";
}

namespace {

struct declared_route {
  std::string name;
  route_family family;
  route_role role = route_role::none;
};

// Every route name this process has declared, indexed by route_kind's id. A
// deque: names stay where they are as the table grows, so name() can hand
// out their c_str(). Backends declare at static initialisation and tests
// from any thread: the lock guards the table, not the names.
struct route_table {
  std::mutex lock;
  std::deque<declared_route> routes{
      // In route_kind's order of ids (backend.hpp).
      {"memcpy", route_family::copy},
      {"copy-sync", route_family::copy, route_role::api_copy_blocking},
      {"copy-async", route_family::copy, route_role::api_copy_queued},
      {"kernel-host", route_family::kernel_host},
      {"kernel-device", route_family::kernel_device},
      {"staged", route_family::copy, route_role::staged_copier},
      {"peer", route_family::peer},
  };

  std::optional<std::uint32_t> index_of(std::string_view name) const {
    for (std::size_t i = 0; i < routes.size(); ++i)
      if (routes[i].name == name) return static_cast<std::uint32_t>(i);
    return std::nullopt;
  }
};

route_table& table() {
  static route_table t;
  return t;
}

}  // namespace

route_kind route_kind::declare(std::string_view name, route_family family, route_role role) {
  auto& t = table();
  std::lock_guard g(t.lock);
  if (auto i = t.index_of(name)) {
    auto& r = t.routes[*i];
    if (r.family == route_family::other) {  // read from a file before its backend declared it
      r.family = family;
      r.role = role;
    } else if (family != route_family::other && (r.family != family || r.role != role)) {
      throw std::logic_error(fmt::format("route '{}' declared as {} {} and again as {} {}", name, to_string(r.family),
                                         to_string(r.role), to_string(family), to_string(role)));
    }
    return route_kind(*i);
  }
  t.routes.push_back({std::string(name), family, role});
  return route_kind(static_cast<std::uint32_t>(t.routes.size() - 1));
}

std::optional<route_kind> route_kind::find(std::string_view name) {
  auto& t = table();
  std::lock_guard g(t.lock);
  if (auto i = t.index_of(name)) return route_kind(*i);
  return std::nullopt;
}

route_kind route_kind::named(std::string_view name) { return declare(name, route_family::other); }

const char* route_kind::name() const {
  auto& t = table();
  std::lock_guard g(t.lock);
  return t.routes.at(id_).name.c_str();
}

route_family route_kind::family() const {
  auto& t = table();
  std::lock_guard g(t.lock);
  return t.routes.at(id_).family;
}

route_role route_kind::role() const {
  auto& t = table();
  std::lock_guard g(t.lock);
  return t.routes.at(id_).role;
}

const char* to_string(route_kind r) { return r.name(); }

std::optional<route_kind> parse_route_kind(std::string_view name) { return route_kind::find(name); }

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
