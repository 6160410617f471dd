#pragma once
// `xferbench app vadd`: runs a backend's vector-add application once per
// strategy and size (several times, keeping every sample), and tabulates it
// the way seed 000 does: phases as rows, strategies as columns, each
// strategy's delta against a baseline, and two bottom lines (accelerator
// against CPU, whole program and algorithm only).
#include <array>
#include <atomic>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>
#include <xfer/core/app.hpp>

namespace xfer::app_study {

inline constexpr const char* schema = "xferbench/app/v1";

struct options {
  std::vector<std::string> strategies;  // empty: every strategy the backend offers
  std::vector<std::size_t> sizes{std::size_t{24} << 20};  // elements (uint32)
  std::size_t repeats = 3;
  std::string baseline = "pageable-unaligned";
};

struct run_result {
  std::string backend, device, strategy;
  std::size_t n = 0;
  bool ok = true;  // false: skipped or failed (reason says which and why)
  std::string reason;
  bool verified = false;
  std::array<std::vector<double>, vadd_phase_count> samples;  // per phase, per repeat; empty: not applicable
  double median(vadd_phase p) const;                          // -1 when not applicable
};

// Seed 000's bottom lines, from per-phase medians (negative = the
// accelerator is slower than the CPU): the CPU loop minus everything the
// accelerator path spent, and minus the algorithm's part only (transfers,
// launch and kernel). NaN when the run offloaded nothing.
struct bottom_lines {
  double program_s;
  double algorithm_s;
};
bottom_lines bottom(const run_result& r);

std::vector<run_result> run(vadd_app& app, const std::string& backend, const std::string& device,
                            const options& o, const std::atomic<bool>& stop);

// The seed's table for one size: Markdown, times in ms, deltas against the
// baseline strategy where it ran.
std::string render_table(const std::vector<run_result>& results, std::size_t n, const std::string& baseline);
// Per strategy, the smallest size whose algorithm-only line is >= 0 (the
// accelerator at least matches the CPU), or a note that none did.
std::string render_crossover(const std::vector<run_result>& results);

nlohmann::json to_json(const run_result& r);

}  // namespace xfer::app_study
