#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <xfer/core/block_route.hpp>
#include <xfer/core/errors.hpp>
#include <xfer/core/size.hpp>
#include <xfer/core/sweep.hpp>

namespace xfer {
namespace {

template <class T, class Name>
std::vector<std::string> names_of(const std::vector<T>& items, Name name) {
  std::vector<std::string> out;
  for (const auto& i : items) out.push_back(name(i));
  return out;
}

bool contains(const std::vector<direction>& v, direction d) { return std::find(v.begin(), v.end(), d) != v.end(); }

std::vector<std::string> block_route_names(const std::vector<route_info>& routes) {
  std::vector<std::string> out;
  for (const auto& r : routes)
    if (r.block_workload) out.push_back(to_string(r.name));
  return out;
}

}  // namespace

std::vector<std::uint64_t> default_sizes(size_grid grid) {
  if (grid == size_grid::dense) return pow2_range(default_min_size, default_max_size);
  std::vector<std::uint64_t> sizes;
  for (std::uint64_t s = 1; s <= (16ull << 20); s *= 16) sizes.push_back(s);
  if (grid == size_grid::overview) sizes.push_back(64ull << 20);
  return sizes;
}

std::vector<point_spec> expand(const backend& b, const sweep_spec& spec) {
  const auto routes = b.routes();
  const auto kinds = b.host_memory_kinds();
  const auto devices = b.devices();

  // A plain sweep never meets a block route, and a block sweep nothing else.
  const bool blocks = !spec.block_sizes.empty();
  std::vector<route_info> chosen_routes;
  if (spec.routes.empty()) {
    for (const auto& r : routes)
      if (r.block_workload == blocks) chosen_routes.push_back(r);
  } else {
    for (const auto& name : without_repeats(spec.routes)) {
      auto it = std::find_if(routes.begin(), routes.end(), [&](const route_info& r) { return to_string(r.name) == name; });
      if (it == routes.end())
        throw usage_error(fmt::format("backend {} has no route '{}' (known: {})", b.name(), name,
                                      fmt::join(names_of(routes, [](auto& r) { return std::string(to_string(r.name)); }), ", ")));
      if (it->block_workload != blocks)
        throw usage_error(blocks ? fmt::format("route '{}' moves no block list (--blocks measures the block routes: {})",
                                               name, fmt::join(block_route_names(routes), ", "))
                                 : fmt::format("route '{}' moves a block list: give --blocks (or --block-sizes)", name));
      chosen_routes.push_back(*it);
    }
  }
  if (chosen_routes.empty())
    throw usage_error(fmt::format("backend {} has no route {}", b.name(), blocks ? "for the block workload" : "to sweep"));

  std::vector<std::string> chosen_kinds;
  if (spec.host_memory.empty()) {
    for (const auto& k : kinds) chosen_kinds.push_back(k.name);
  } else {
    for (const auto& name : without_repeats(spec.host_memory)) {
      if (std::none_of(kinds.begin(), kinds.end(), [&](const kind_support& k) { return k.name == name; }))
        throw usage_error(fmt::format("backend {} has no host memory kind '{}' (known: {})", b.name(), name,
                                      fmt::join(names_of(kinds, [](auto& k) { return k.name; }), ", ")));
      chosen_kinds.push_back(name);
    }
  }

  std::vector<int> chosen_devices;
  if (spec.devices.empty()) {
    for (const auto& d : devices) chosen_devices.push_back(d.index);
  } else {
    for (int d : without_repeats(spec.devices)) {
      if (std::none_of(devices.begin(), devices.end(), [&](const device_info& i) { return i.index == d; }))
        throw usage_error(fmt::format("backend {} has no device {} (it has {})", b.name(), d, devices.size()));
      chosen_devices.push_back(d);
    }
  }

  // No directions asked for: every direction some chosen route moves.
  std::vector<direction> dirs = without_repeats(spec.directions);
  if (dirs.empty())
    for (direction d : all_directions())
      if (std::any_of(chosen_routes.begin(), chosen_routes.end(),
                      [&](const route_info& r) { return contains(r.directions, d); }))
        dirs.push_back(d);
  for (direction d : dirs) {
    if (std::none_of(chosen_routes.begin(), chosen_routes.end(),
                     [&](const route_info& r) { return contains(r.directions, d); }))
      throw usage_error(fmt::format("no selected route of backend {} moves data {}", b.name(), to_string(d)));
  }
  if (spec.sizes.empty()) throw usage_error("no transfer sizes given");
  const auto sizes = without_repeats(spec.sizes);

  std::vector<point_spec> points;
  for (int dev : chosen_devices) {
    for (const auto& route : chosen_routes) {
      // Device-to-device copies touch no host memory: they run once, as "none".
      const std::vector<std::string> none{"none"};
      for (direction d : dirs) {
        if (!contains(route.directions, d)) continue;
        const bool host_side = route.uses_host_memory && d != direction::d2d;
        const auto& route_sizes = !spec.sizes_given && !route.default_sizes.empty() ? route.default_sizes : sizes;
        for (const auto& kind : host_side ? chosen_kinds : none) {
          if (host_side && !spec.pairs_named && !b.pairing_gap(route.name, kind).empty()) continue;
          for (auto bytes : route_sizes) {
            if (!spec.sizes_given && bytes < route.min_bytes) continue;
            if (!blocks) {
              points.push_back({b.name(), dev, route.name, d, kind, bytes});
              continue;
            }
            // The contiguous baseline is one block of the whole array,
            // measured once per total whatever the block sizes.
            const bool whole = route.name == block_routes::contiguous;
            for (auto block : whole ? std::vector<std::uint64_t>{bytes} : without_repeats(spec.block_sizes)) {
              point_spec p{b.name(), dev, route.name, d, kind, bytes};
              p.block_bytes = block;
              p.block_list = spec.block_list;
              points.push_back(std::move(p));
            }
          }
        }
      }
    }
  }
  return points;
}

}  // namespace xfer
