#pragma once
// The CPU-side study (seed 004): for each memory kind, op, method, thread
// count and size, the first run on a freshly allocated buffer, then N steady
// runs; each kind's break-even reuse count against regular memory; and
// whether write combining is really in effect here.
#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>
#include <xfer/core/result.hpp>  // point_status: ok, skipped, failed
#include <xfer/core/stats.hpp>
#include <xfer/core/study.hpp>
#include <xfer/cpu/break_even.hpp>
#include <xfer/cpu/cpu_ops.hpp>
#include <xfer/cpu/memory_kinds.hpp>
#include <xfer/cpu/wc_check.hpp>

namespace xfer::cpu {

struct study_config {
  std::vector<op> ops{op::write, op::read, op::fill};
  std::vector<method> methods{method::memcpy, method::nontemporal, method::ntload};
  std::vector<std::uint64_t> sizes{std::uint64_t{32} << 20};  // the seed's 32 MB array
  std::size_t runs = 20;                                      // steady runs after the first
  std::vector<unsigned> threads{1};
  // A steady sample repeats the op until it lasts this long, so tiny sizes are
  // not lost in the clock's resolution; samples are reported per run.
  double min_sample_s = 1e-3;
  // The write-combining check: plain single-thread reads of this size.
  std::uint64_t wc_probe_bytes = std::uint64_t{16} << 20;
  std::size_t wc_probe_runs = 5;
};

struct cpu_point {
  std::string kind, provider;
  op operation = op::write;
  method how = method::memcpy;
  unsigned threads = 1;
  std::uint64_t bytes = 0;
  point_status status = point_status::ok;
  std::string reason;  // skipped/failed: why
  std::string impl;    // the instructions used ("memcpy", "avx", "sse4.1", ...)
  // First use, never mixed into the samples. Negative: not measured.
  double alloc_s = -1;  // allocating the kind's buffer
  double touch_s = -1;  // read only: filling it with data before the first read
  double first_s = -1;  // the first run on the fresh buffer
  std::size_t reps_per_sample = 0;
  std::vector<double> samples_s;  // steady, one per sample, per run
  summary stats;
  double ci_rel = 0;  // relative half-width of the median's 95% CI
  bool verified = false;
  // Against the baseline kind at the same op/method/threads/size; empty for
  // the baseline itself or when the baseline was not measured.
  std::optional<break_even> vs_baseline;
  // The steady medians differ by less than their confidence intervals: the
  // break-even's direction is not established by this run.
  bool break_even_within_noise = false;

  // Allocation, filling (reads) and the first run: what a fresh buffer costs.
  double first_use_s() const;
  double gbps() const;        // bytes / median steady run, 1e9 B/s
  double first_gbps() const;  // bytes / first run
};

struct wc_report {
  std::string kind, provider;
  bool checked = false;
  double regular_read_gbps = 0, wc_read_gbps = 0;
  wc_verdict verdict;
  std::string text;  // the verdict, or why it could not be checked
};

struct study_result {
  std::vector<kind_info> kinds;
  std::vector<cpu_point> points;
  std::vector<wc_report> write_combining;
  bool interrupted = false;
};

struct planned_point {
  std::size_t kind_index = 0;
  op operation = op::write;
  method how = method::memcpy;
  unsigned threads = 1;
  std::uint64_t bytes = 0;
};

// The points in run order: size, op, method, threads, then kind (baseline
// first), so each kind's row follows the baseline it is compared with.
std::vector<planned_point> plan_points(const study_config& config, const std::vector<kind_slot>& kinds);

struct study_hooks {
  std::function<void(std::size_t done, std::size_t total, const cpu_point& next)> on_progress;
  std::function<void(const cpu_point&)> on_point;
  const std::atomic<bool>* stop = nullptr;  // set (SIGINT, SIGTERM, SIGHUP): finish with the points completed
  // Runs each point under its watchdog (the session's, study_context::watched);
  // null: in place.
  study_context* watch = nullptr;
};

// Runs every planned point, then the write-combining check. Never throws for
// a point: a kind that cannot run is skipped, a point that breaks is failed.
// A point the watchdog left behind is failed with its reason, and the run goes
// on: its thread is stuck in its own buffers (kept), and its thread team is
// retired. Where the kind came from a device API rather than plain memory (the
// thread may be stuck inside the driver), that provider's later points of such
// kinds are skipped with the reason, as a sweep skips a backend left behind.
study_result run_study(const study_config& config, std::vector<kind_slot>& kinds, const study_hooks& hooks = {});

// The write-combining check alone, for every available kind with the
// write_combined property (empty when none is selected).
std::vector<wc_report> check_write_combining(const study_config& config, std::vector<kind_slot>& kinds,
                                             const std::atomic<bool>* stop = nullptr);

}  // namespace xfer::cpu
