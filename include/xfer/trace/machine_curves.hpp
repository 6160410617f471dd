#pragma once
// This machine's measured curves (seconds per transfer against bytes), from a
// sweep's result file: what the bill prices a program's transfers with.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace xfer::trace {

struct curve {
  std::string backend, route, host_memory, direction;
  std::uint64_t block_bytes = 0;  // block routes: the block size; the points' bytes are the totals
  std::vector<std::pair<std::uint64_t, double>> points;  // (bytes, median seconds), bytes ascending
  std::string label() const;
};

struct machine_curves {
  std::string source = "none";  // file | measured | none
  std::string path;             // the sweep file read
  std::string device;           // the device its points ran on
  std::string text;             // where the curves came from, or why there are none
  std::vector<curve> curves;

  // Seconds for one transfer of `bytes` on (route, host memory, direction):
  // interpolated on log-log axes between the two measured sizes around it;
  // none outside the measured sizes (never extrapolated) or with no such curve.
  std::optional<double> seconds(const std::string& route, const std::string& host_memory, const std::string& direction,
                                std::uint64_t bytes, std::uint64_t block_bytes = 0) const;
  const curve* find(const std::string& route, const std::string& host_memory, const std::string& direction,
                    std::uint64_t block_bytes = 0) const;
};

// The ok CUDA points of `device_index` in a sweep result file (the runtime
// backend's where it ran, else the driver's). Throws std::invalid_argument
// naming the file for one that is not a result file.
machine_curves curves_from_sweep(const std::filesystem::path& file, unsigned device_index);

}  // namespace xfer::trace
