#pragma once
// The trace file (schema xferbench-trace/1, docs/trace.md) and the console's
// bill: what `xferbench trace` writes, from what it captured and priced.
#include <optional>
#include <string>
#include <vector>
#include <xfer/trace/bill.hpp>

namespace xfer::trace {

inline constexpr const char* trace_schema = "xferbench-trace/1";
// Transfers kept one by one in the file; the bill counts them all.
inline constexpr std::size_t max_listed_transfers = 100000;

// How the program ran, as the tracer saw it.
struct program_run {
  std::vector<std::string> command;
  std::string state = "complete";  // complete | interrupted | no_cuda | not_traced
  std::optional<int> exit_code, signal;
  std::string text;  // the outcome in words
  double wall_s = 0;
  std::string started_at;
};

// `system_json`: the system section as a result file writes it (core's system_json).
std::string trace_json(const program_run& run, const std::vector<process_capture>& processes,
                       const machine_curves& machine, const bill& b, const std::string& system_json,
                       const std::string& tool_version);

// The console's bill: the program's transfers in a few lines, the largest
// groups, and the top three fixes with what each saves.
std::string bill_text(const program_run& run, const machine_curves& machine, const bill& b);

}  // namespace xfer::trace
