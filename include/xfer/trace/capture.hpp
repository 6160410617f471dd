#pragma once
// What libxfer_cupti.so captured in one process (src/trace/cupti_injection.cpp
// writes the lines): each copy and memset joined with the API call that asked
// for it, and how much of it ran beside a kernel.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace xfer::trace {

// A raw file that is not what the injection library writes: names the file and the line.
struct capture_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct transfer {
  int pid = 0;
  std::string op;           // memcpy | memset
  std::string call;         // the API function (cudaMemcpy, cuMemcpyHtoD_v2); "" when no record of it came
  bool async = false;       // as the driver ran it (CUPTI's async flag)
  std::string direction;    // h2d | d2h | d2d | h2h | p2p | set | unknown
  std::string host_memory;  // the host side's kind: pageable | pinned | managed; device for d2d and device memsets
  std::uint64_t bytes = 0;
  unsigned device = 0, stream = 0;
  std::uint64_t start_ns = 0, end_ns = 0;  // CUPTI's clock
  std::optional<double> host_s;            // how long the call held the CPU
  double overlap_s = 0;                    // of the device time, the time a kernel ran on the same device

  double device_s() const { return end_ns > start_ns ? static_cast<double>(end_ns - start_ns) * 1e-9 : 0.0; }
  // What the program paid: a synchronous call holds the CPU for all of it
  // (host_s); an asynchronous one costs its time on the device.
  double cost_s() const { return !async && host_s ? *host_s : device_s(); }
  // Host memory on one side: what pinning, the staged copier or a block copy could change.
  bool crosses_link() const { return direction == "h2d" || direction == "d2h"; }
};

struct process_capture {
  int pid = 0, ppid = 0;
  std::vector<std::string> argv;
  std::uint64_t clock_ns = 0;      // CUPTI's clock when capture began
  std::uint64_t end_clock_ns = 0;  // and when it stopped (0: it never stopped cleanly)
  bool complete = false;       // stopped cleanly (its last buffers flushed)
  std::string error;           // CUPTI refused to start, and why
  std::uint64_t dropped = 0;   // records CUPTI could not keep
  std::vector<transfer> transfers;  // in start order
};

// One raw file (cupti-PID.jsonl). A last line cut short (a process killed
// mid-write) is left out, and the capture is not complete; any other line
// that is not a record throws capture_error naming the file and line.
process_capture read_capture(const std::filesystem::path& file);

// The call as the program wrote it: CUPTI's versioned name without its
// "_vNNNN" suffix (cudaMemcpy_v3020 -> cudaMemcpy, cuMemcpyHtoD_v2 -> cuMemcpyHtoD).
std::string call_name(std::string cupti_name);
// Every cupti-*.jsonl in `dir`, by pid.
std::vector<process_capture> read_captures(const std::filesystem::path& dir);

}  // namespace xfer::trace
