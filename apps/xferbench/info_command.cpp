#include <fmt/format.h>
#include <xfer/core/size.hpp>
#include <xfer/core/system_probe.hpp>

#include "commands.hpp"

namespace xfer::cli {

int run_info_command(const info_args& a) {
  const system_info s = probe_system();
  if (a.json) {
    fmt::print("{}\n", system_json(s));
    return exit_ok;
  }
  fmt::print("host:        {}\n", s.hostname);
  fmt::print("CPU:         {} ({} logical CPUs)\n", s.cpu_model, s.logical_cpus);
  fmt::print("OS:          {} ({})\n", s.os, s.kernel);
  fmt::print("memory:      {} total, {} available\n", format_capacity(s.memory_bytes), format_capacity(s.memory_available_bytes));
  fmt::print("NUMA nodes:  {}\n", s.numa_nodes);
  fmt::print("huge pages:  transparent huge pages '{}'\n", s.thp.empty() ? "unknown" : s.thp);
  if (s.accelerators.empty()) fmt::print("accelerators: none found on the PCI bus\n");
  for (const auto& l : s.accelerators) {
    fmt::print("accelerator: {} {} device {} (class {})\n", l.address, l.vendor_name, l.device_id, l.class_code);
    if (l.max_gts <= 0) {
      fmt::print("  PCIe link:  not reported by sysfs\n");
      continue;
    }
    fmt::print("  PCIe link:  current Gen{} x{} ({} GT/s), max Gen{} x{} ({} GT/s)\n", l.current_gen, l.current_width,
               l.current_gts, l.max_gen, l.max_width, l.max_gts);
    fmt::print("  theoretical per direction: {:.2f} GB/s at max, {:.2f} GB/s as currently trained\n",
               l.theoretical_gbps, l.current_gbps);
  }
  return exit_ok;
}

}  // namespace xfer::cli
