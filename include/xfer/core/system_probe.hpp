#pragma once
// Reads the machine's description from /proc and /sys (roots injectable for tests).
#include <filesystem>
#include <xfer/core/result.hpp>

namespace xfer {

system_info probe_system(const std::filesystem::path& proc = "/proc", const std::filesystem::path& sys = "/sys");

// MemAvailable from /proc/meminfo (0 if unknown): cheap enough to ask per point.
std::uint64_t available_memory_bytes(const std::filesystem::path& proc = "/proc");

// Per-direction bandwidth of a PCIe link in GB/s after line encoding
// (8b/10b up to 5 GT/s, 128b/130b above). 0 for an unknown speed.
double pcie_link_gbps(double gts_per_lane, int width);
// PCIe generation for a per-lane rate (2.5 -> 1, ..., 32 -> 5, 64 -> 6); 0 if unknown.
int pcie_generation(double gts_per_lane);

}  // namespace xfer
