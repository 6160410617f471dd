#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <set>
#include <stdexcept>
#include <xfer/core/block_route.hpp>
#include <xfer/core/errors.hpp>
#include <xfer/core/plan.hpp>
#include <xfer/core/runner.hpp>
#include <xfer/core/size.hpp>
#include <xfer/core/sweep.hpp>

namespace xfer {
namespace {

// The names of `wanted` that `known` has; empty when `wanted` is.
std::vector<std::string> keep_known(const std::vector<std::string>& wanted, const std::set<std::string>& known) {
  std::vector<std::string> out;
  for (const auto& w : wanted)
    if (known.count(w)) out.push_back(w);
  return out;
}

template <class T>
bool contains(const std::vector<T>& v, const T& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

bool all_cpu(const backend& b) {
  const auto devices = b.devices();
  return !devices.empty() &&
         std::all_of(devices.begin(), devices.end(), [](const device_info& d) { return d.type == "cpu"; });
}

// The default run's policy on stand-ins, the host reference among them (make_plan).
void leave_out_cpu_stand_ins(std::vector<backend*>& chosen, std::vector<std::pair<std::string, std::string>>& left_out) {
  const auto accelerator = std::find_if(chosen.begin(), chosen.end(), [](const backend* b) { return !all_cpu(*b); });
  if (accelerator == chosen.end()) return;
  const std::string with = (*accelerator)->name();
  std::vector<backend*> kept;
  for (auto* b : chosen) {
    if (all_cpu(*b))
      left_out.emplace_back(b->name(), fmt::format("a CPU device, left out of the default run beside {}'s "
                                                   "accelerator (--backend {} measures it)",
                                                   with, b->name()));
    else
      kept.push_back(b);
  }
  chosen = std::move(kept);
}

}  // namespace

bool backend_matches(const std::string& selector, const std::string& name) {
  if (selector == name) return true;
  const auto colon = name.find(':');
  return colon != std::string::npos && name.compare(0, colon, selector) == 0;
}

std::vector<backend*> select_backends(std::vector<backend_entry>& entries, const std::vector<std::string>& names) {
  std::vector<backend*> chosen;
  if (names.empty()) {
    for (auto& e : entries)
      if (e.impl) chosen.push_back(e.impl.get());
    return chosen;
  }
  std::vector<std::string> known;
  for (const auto& e : entries) known.push_back(e.name);
  for (const auto& sel : without_repeats(names)) {
    std::vector<backend_entry*> matches;
    for (auto& e : entries)
      if (backend_matches(sel, e.name)) matches.push_back(&e);
    if (matches.empty()) throw usage_error(fmt::format("unknown backend '{}' (known: {})", sel, fmt::join(known, ", ")));
    if (std::none_of(matches.begin(), matches.end(), [](auto* e) { return e->impl != nullptr; }))
      throw std::runtime_error(fmt::format("backend {} is unavailable: {}", matches[0]->name, matches[0]->reason));
    for (auto* e : matches)
      if (e->impl && !contains(chosen, e->impl.get())) chosen.push_back(e->impl.get());
  }
  // Registry order, whatever order they were named in.
  std::vector<backend*> ordered;
  for (auto& e : entries)
    if (contains(chosen, e.impl.get())) ordered.push_back(e.impl.get());
  return ordered;
}

device_info find_device(const backend& b, int index) {
  const auto devices = b.devices();
  for (const auto& d : devices)
    if (d.index == index) return d;
  throw usage_error(fmt::format("--device {}: backend {} has no device {} (it has {})", index, b.name(), index,
                                devices.size()));
}

void check_host_devices(int host_devices, const std::vector<std::string>& backends) {
  if (host_devices == 1 || backends.empty()) return;
  if (std::any_of(backends.begin(), backends.end(), [](const std::string& b) { return backend_matches(b, "host"); }))
    return;
  throw usage_error(fmt::format("--host-devices {} shapes the host backend, which -b {} does not select", host_devices,
                                fmt::join(backends, ",")));
}

const std::vector<direction>& overview_directions() {
  static const std::vector<direction> dirs{direction::h2d, direction::d2h};
  return dirs;
}

std::size_t plan::size() const {
  std::size_t n = 0;
  for (const auto& b : backends) n += b.points.size();
  return n;
}

std::size_t plan::runnable() const {
  std::size_t n = 0;
  for (const auto& b : backends)
    n += static_cast<std::size_t>(
        std::count_if(b.points.begin(), b.points.end(), [](const planned_point& p) { return p.skip_reason.empty(); }));
  return n;
}

std::string unavailable_reason(const point_spec& p, const std::vector<kind_support>& kinds,
                               const std::vector<device_info>& devices) {
  for (const auto& k : kinds)
    if (k.name == p.host_memory && !k.available) return k.reason;
  const auto dev = std::find_if(devices.begin(), devices.end(), [&](const device_info& d) { return d.index == p.device; });
  if (dev == devices.end()) return "";
  if (const auto k = dev->unavailable_kinds.find(p.host_memory); k != dev->unavailable_kinds.end()) return k->second;
  if (p.bytes == 0) return "0 bytes: nothing to move";
  if (dev->max_alloc_bytes && p.bytes > dev->max_alloc_bytes)
    return fmt::format("{} ({} B) exceeds the largest allocation device {} ({}) offers, {} B", format_size(p.bytes),
                       p.bytes, dev->index, dev->name, dev->max_alloc_bytes);
  return "";
}

std::vector<planned_point> check_points(const backend& b, std::vector<point_spec> points) {
  const auto kinds = b.host_memory_kinds();
  const auto devices = b.devices();
  std::vector<planned_point> out;
  out.reserve(points.size());
  for (auto& p : points) {
    auto why = unavailable_reason(p, kinds, devices);
    // A pairing that cannot exist reaches here only when both were named.
    if (why.empty() && p.host_memory != "none") why = b.pairing_gap(p.route, p.host_memory);
    out.push_back({std::move(p), std::move(why)});
  }
  return out;
}

plan make_plan(std::vector<backend_entry>& entries, const selection& s) {
  if (s.sizes.empty()) throw usage_error("no transfer sizes given");
  if (!s.block_sizes.empty()) check_block_selection(s.sizes, s.block_sizes, s.block_list.get());
  plan out;
  auto chosen = select_backends(entries, s.backends);
  if (s.backends.empty()) leave_out_cpu_stand_ins(chosen, out.left_out);
  for (const auto& e : entries)
    if (!e.impl && (s.backends.empty() || std::any_of(s.backends.begin(), s.backends.end(), [&](const std::string& n) {
                      return backend_matches(n, e.name);
                    })))
      out.unavailable.emplace_back(e.name, e.reason);

  // A name must be known to at least one chosen backend; each backend then
  // runs the ones it knows.
  std::set<std::string> all_routes, all_kinds;
  for (auto* b : chosen) {
    for (const auto& r : b->routes()) all_routes.insert(to_string(r.name));
    for (const auto& k : b->host_memory_kinds()) all_kinds.insert(k.name);
  }
  for (const auto& r : s.routes)
    if (!all_routes.count(r))
      throw usage_error(fmt::format("unknown route '{}' (known: {})", r, fmt::join(all_routes, ", ")));
  for (const auto& k : s.host_memory)
    if (!all_kinds.count(k))
      throw usage_error(fmt::format("unknown host memory kind '{}' (known: {})", k, fmt::join(all_kinds, ", ")));

  std::set<direction> dirs_covered;
  for (auto* b : chosen) {
    const auto routes = b->routes();
    const auto kinds = b->host_memory_kinds();
    std::set<std::string> route_names, kind_names;
    for (const auto& r : routes) route_names.insert(to_string(r.name));
    for (const auto& k : kinds) kind_names.insert(k.name);
    // A block run measures the backends with block routes; the rest have
    // none of the workload's points (and a plain run none of those routes).
    const bool blocks = !s.block_sizes.empty();
    if (blocks && std::none_of(routes.begin(), routes.end(), [](const route_info& r) { return r.block_workload; }))
      continue;
    sweep_spec spec;
    spec.devices = s.devices;
    spec.block_sizes = s.block_sizes;
    spec.block_list = s.block_list;
    spec.routes = keep_known(s.routes, route_names);
    spec.host_memory = keep_known(s.host_memory, kind_names);
    spec.sizes = s.sizes;
    spec.sizes_given = s.sizes_given;
    spec.pairs_named = !s.routes.empty() && !s.host_memory.empty();
    if ((!s.routes.empty() && spec.routes.empty()) || (!s.host_memory.empty() && spec.host_memory.empty())) continue;
    if (s.host_memory.empty() && !s.full)
      for (const auto& k : kinds)
        if (k.overview) spec.host_memory.push_back(k.name);
    // Directions: those some selected route of this backend moves. The
    // overview's are a default: routes that move neither (a device-to-device
    // route named alone) keep their own (expand: empty = what they move).
    const bool overview_dirs = s.directions.empty() && !s.full;
    const auto& wanted_dirs = overview_dirs ? overview_directions() : s.directions;
    for (direction d : without_repeats(wanted_dirs))
      for (const auto& r : routes)
        if (r.block_workload == blocks && (spec.routes.empty() || contains(spec.routes, std::string(to_string(r.name)))) && contains(r.directions, d)) {
          spec.directions.push_back(d);
          dirs_covered.insert(d);
          break;
        }
    if (!s.directions.empty() && spec.directions.empty()) continue;

    out.backends.push_back({b, check_points(*b, expand(*b, spec))});
  }
  for (direction d : s.directions)
    if (!dirs_covered.count(d))
      throw usage_error(fmt::format("no selected backend and route moves data {}", to_string(d)));
  if (out.size() == 0) throw usage_error("the selection leaves no point to measure");
  return out;
}

}  // namespace xfer

namespace xfer {

void check_sizes_fit(const std::vector<std::uint64_t>& sizes, std::uint64_t memory_bytes) {
  for (auto s : sizes)
    if (memory_bytes && s > memory_bytes)
      throw usage_error(fmt::format("size {} ({} B) is larger than this machine's memory ({} B)", format_size(s), s,
                                    memory_bytes));
}

mem::kind_options parse_kind_options(std::string_view alignment, std::size_t unaligned_offset) {
  const mem::kind_options k{.alignment = parse_size(alignment), .unaligned_offset = unaligned_offset};
  try {
    mem::make_host_kind("aligned", k);
  } catch (const std::invalid_argument& e) {
    throw usage_error(fmt::format("--alignment {}: {}", alignment, e.what()));
  }
  try {
    mem::make_host_kind("pageable-unaligned", k);
  } catch (const std::invalid_argument& e) {
    throw usage_error(fmt::format("--unaligned-offset {}: {}", unaligned_offset, e.what()));
  }
  return k;
}

double run_budget_for(std::optional<double> budget, bool max_time_given, bool quick, bool overview) {
  if (!budget) return overview && !max_time_given ? overview_budget_s : 0;
  if (max_time_given)
    throw usage_error("--budget and --max-time both set the sampling time: give one (--budget for the whole run, "
                      "--max-time per point)");
  if (quick) throw usage_error("--budget and --quick both set the sampling time: give one");
  if (!(*budget > 0 && *budget <= 86400))
    throw usage_error(fmt::format("--budget {} is out of range (0, 86400] seconds", *budget));
  return *budget;
}

void check_budget_fits(const plan& p, const measure_options& options) {
  if (options.run_budget_s <= 0) return;
  const double smallest = run_budget::smallest_for(p.runnable(), options.warmup_s);
  if (options.run_budget_s < smallest)
    throw usage_error(fmt::format("--budget {:g} s is too small for the {} points selected: give at least {:g} s "
                                  "({:g} s of sampling, the warm-up and {:g} s of preparing and checking a point), or "
                                  "select fewer points",
                                  options.run_budget_s, p.runnable(), smallest, run_budget::min_point_s,
                                  run_budget::point_overhead_s));
}

}  // namespace xfer
