#pragma once
// The process's memory as the kernel counts it, for the fragmentation study.
#include <cstdint>
#include <filesystem>

namespace xfer::alloc_study {

struct memory_snapshot {
  std::uint64_t rss_bytes = 0;        // VmRSS: resident now
  std::uint64_t peak_rss_bytes = 0;   // VmHWM: resident high-water mark
  std::uint64_t virtual_bytes = 0;    // VmSize: address space reserved
  std::uint64_t committed_bytes = 0;  // Committed_AS (whole system): the commit charge
};

memory_snapshot read_memory(const std::filesystem::path& proc = "/proc");
// Resets VmHWM to the current RSS (Linux >= 4.0); false where refused.
bool reset_peak_rss();

}  // namespace xfer::alloc_study
