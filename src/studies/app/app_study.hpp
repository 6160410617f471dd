#pragma once
// `xferbench app vadd`: runs a backend's vector-add application once per
// strategy and size (several times, keeping every sample), and tabulates it
// the way seed 000 does: phases as rows, strategies as columns, each
// strategy's delta against a baseline, and two bottom lines (accelerator
// against CPU, whole program and algorithm only).
#include <array>
#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>
#include <xfer/app/vadd.hpp>
#include <xfer/core/study.hpp>

namespace xfer::app_study {

// v2: the bottom lines are named for their sign (accelerator_saves_s) and
// each run carries the verdict in words, with the catalogue (docs/result-schema.md).
inline constexpr const char* schema = "xferbench/app/v2";
// The strategy the others are compared with unless one is named: the seed's
// plain program (000: a malloc'ed, unaligned buffer).
inline constexpr const char* default_baseline = "pageable-unaligned";

struct options {
  std::vector<std::string> strategies;  // empty: every strategy the backend offers
  std::vector<std::size_t> sizes{std::size_t{24} << 20};  // elements (uint32)
  std::size_t repeats = 3;
  // Empty: default_baseline, compared with where it is measured. One given
  // must be among `strategies` where those are given: a baseline not
  // measured left the tables without their deltas, without a word.
  std::string baseline;

  // Throws usage_error naming the bad value: repeats out of 1..1000, a size
  // whose four vectors exceed `available_bytes` (0: unknown, not checked).
  void check(std::uint64_t available_bytes) const;
};

struct run_result {
  std::string backend, device, strategy;
  std::size_t n = 0;
  point_status status = point_status::ok;
  std::string reason;  // skipped or failed: why
  bool ok() const { return status == point_status::ok; }
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

// Who won one run, whole program against the CPU's loop, repeat by repeat:
// "accelerator" or "cpu" where every repeat agrees, "unclear" where the
// repeats disagree, "" where nothing was offloaded (or the run did not run).
// `text` says it in words whose sign cannot be misread; the console and the
// report print it as it is.
struct verdict {
  std::string winner;
  double saves_s = 0;  // median of the CPU's time minus the accelerated program's: > 0 the accelerator won
  std::string text;
};
verdict judge(const run_result& r);

// Every strategy at every size on one app. `progress`, when given, hears of
// each run before it starts. `watch`, when given, runs each strategy and size
// under its watchdog (study_context::watched): one left behind is failed with
// the reason and the app's later ones skipped (its thread is still inside the
// backend), as a sweep skips a backend left behind; `app` and `stop` must then
// outlive the process's run (session::finish leaves it without destroying them).
using progress_fn = std::function<void(std::size_t done, std::size_t total, const std::string& what)>;
std::vector<run_result> run(vadd_app& app, const std::string& backend, const std::string& device,
                            const options& o, const std::atomic<bool>& stop, const progress_fn& progress = {},
                            study_context* watch = nullptr);

// The seed's table for one size: Markdown, times in ms, deltas against the
// baseline strategy where it ran.
std::string render_table(const std::vector<run_result>& results, std::size_t n, const std::string& baseline);
// Per strategy, the smallest size whose algorithm-only line is >= 0 (the
// accelerator at least matches the CPU), or a note that none did.
std::string render_crossover(const std::vector<run_result>& results);

// One entry of the result file's "results".
value to_value(const run_result& r);

// A backend's vadd, found by the caller (xfer/backends/vadd_registry.hpp).
struct target {
  std::string backend, device;
  std::unique_ptr<vadd_app> app;
};

// The study through the session: each run a record of "results", each
// backend's tables (one per size, then the crossover) on the console.
class vadd_study final : public study {
 public:
  // usage_error when there is no target, a strategy or the baseline is one
  // no target's app knows (a typo, not a skip), or a baseline given is not
  // among the strategies given.
  vadd_study(options o, std::vector<target> targets);
  study_info info() const override;
  void run(study_context& context) override;

 private:
  options options_;
  std::vector<target> targets_;
};

}  // namespace xfer::app_study
