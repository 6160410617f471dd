#include <xfer/core/describe.hpp>

#include <ctime>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <xfer/config.hpp>
#include <xfer/core/catalogue.hpp>
#include <xfer/core/size.hpp>

namespace xfer {

std::string system_text(const system_info& s) {
  std::string t;
  t += fmt::format("host:        {}\n", s.hostname);
  t += fmt::format("CPU:         {} ({} logical CPUs, {} physical cores of those this process may use)\n",
                   s.cpu_model, s.logical_cpus, s.physical_cores);
  t += fmt::format("OS:          {} ({})\n", s.os, s.kernel);
  t += fmt::format("memory:      {} total, {} available\n", format_capacity(s.memory_bytes),
                   format_capacity(s.memory_available_bytes));
  t += fmt::format("NUMA nodes:  {}\n", s.numa_nodes);
  t += fmt::format("huge pages:  transparent huge pages '{}'\n", s.thp.empty() ? "unknown" : s.thp);
  if (s.accelerators.empty()) t += "accelerators: none found on the PCI bus\n";
  for (const auto& l : s.accelerators) {
    t += fmt::format("accelerator: {} {} device {} (class {})\n", l.address, l.vendor_name, l.device_id, l.class_code);
    if (l.max_gts <= 0) {
      t += "  PCIe link:  not reported by sysfs\n";
      continue;
    }
    t += fmt::format("  PCIe link:  current Gen{} x{} ({} GT/s), max Gen{} x{} ({} GT/s)\n", l.current_gen,
                     l.current_width, l.current_gts, l.max_gen, l.max_width, l.max_gts);
    t += fmt::format("  theoretical per direction: {:.2f} GB/s at max, {:.2f} GB/s as currently trained\n",
                     l.theoretical_gbps, l.current_gbps);
  }
  return t;
}

std::string backends_text(const std::vector<backend_entry>& entries) {
  std::string t;
  for (const auto& e : entries) {
    if (!e.impl) {
      t += fmt::format("{}: unavailable: {}\n\n", e.name, e.reason);
      continue;
    }
    const backend& b = *e.impl;
    t += fmt::format("{}: {}\n", b.name(), b.description());
    for (const auto& [k, v] : b.versions()) t += fmt::format("  {}: {}\n", k, v);
    t += "  devices:\n";
    for (const auto& d : b.devices()) {
      t += fmt::format("    {}: {} ({}", d.index, d.name, d.type);
      if (d.memory_bytes) t += fmt::format(", {} memory", format_capacity(d.memory_bytes));
      if (d.max_alloc_bytes) t += fmt::format(", max allocation {}", format_capacity(d.max_alloc_bytes));
      t += ")\n";
      for (const auto& [k, v] : d.details) t += fmt::format("       {}: {}\n", k, v);
    }
    t += "  routes:\n";
    for (const auto& r : b.routes()) {
      std::vector<std::string> dirs;
      for (direction d : r.directions) dirs.push_back(to_string(d));
      t += fmt::format("    {:<14} [{}] {}\n", to_string(r.name), fmt::join(dirs, ","), r.description);
    }
    t += "  host memory kinds:\n";
    for (const auto& k : b.host_memory_kinds()) {
      if (k.available)
        t += fmt::format("    {:<20} {}\n", k.name, k.description);
      else
        t += fmt::format("    {:<20} unavailable: {}\n", k.name, k.reason);
    }
    t += "\n";
  }
  return t;
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

run_context make_context(const system_info& sys, const std::vector<std::string>& argv) {
  run_context c;
  c.tool_version = XFER_VERSION;
  c.started_at = utc_now();
  c.system = sys;
  c.config = value::object{{"argv", argv}};
  c.catalogue = make_catalogue();
  return c;
}

std::string add_backend(run_context& c, const backend& b) {
  c.system.backend_versions[b.name()] = b.versions();
  add_routes(c.catalogue, b);
  return b.name();
}

}  // namespace xfer
