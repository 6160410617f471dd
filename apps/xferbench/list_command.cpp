#include <fmt/format.h>
#include <fmt/ranges.h>
#include <xfer/backends/registry.hpp>
#include <xfer/core/size.hpp>

#include "commands.hpp"

namespace xfer::cli {

int run_list_command(const list_args& a) {
  backend_options opts;
  opts.threads = a.threads;
  opts.host_devices = a.host_devices;
  for (const auto& e : make_backends(opts)) {
    if (!e.impl) {
      fmt::print("{}: unavailable: {}\n\n", e.name, e.reason);
      continue;
    }
    const backend& b = *e.impl;
    fmt::print("{}: {}\n", b.name(), b.description());
    for (const auto& [k, v] : b.versions()) fmt::print("  {}: {}\n", k, v);
    fmt::print("  devices:\n");
    for (const auto& d : b.devices()) {
      fmt::print("    {}: {} ({}", d.index, d.name, d.type);
      if (d.memory_bytes) fmt::print(", {} memory", format_capacity(d.memory_bytes));
      if (d.max_alloc_bytes) fmt::print(", max allocation {}", format_capacity(d.max_alloc_bytes));
      fmt::print(")\n");
      for (const auto& [k, v] : d.details) fmt::print("       {}: {}\n", k, v);
    }
    fmt::print("  routes:\n");
    for (const auto& r : b.routes()) {
      std::vector<std::string> dirs;
      for (direction d : r.directions) dirs.push_back(to_string(d));
      fmt::print("    {:<14} [{}] {}\n", to_string(r.name), fmt::join(dirs, ","), r.description);
    }
    fmt::print("  host memory kinds:\n");
    for (const auto& k : b.host_memory_kinds()) {
      if (k.available)
        fmt::print("    {:<20} {}\n", k.name, k.description);
      else
        fmt::print("    {:<20} unavailable: {}\n", k.name, k.reason);
    }
    fmt::print("\n");
  }
  return exit_ok;
}

}  // namespace xfer::cli
