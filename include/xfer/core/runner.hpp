#pragma once
// Adaptive sampling of one point, and the loop over a sweep's points.
#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <vector>
#include <xfer/core/backend.hpp>
#include <xfer/core/plan.hpp>
#include <xfer/core/result.hpp>

namespace xfer {

class reporter;

// The defaults of `xferbench sweep` live here and nowhere else.
struct measure_options {
  double target_ci = 0.01;        // stop when the median's CI half-width is within this fraction
  // Per-point time budget for sampling; a point on course to converge may
  // take up to four times it (measure()). Short, because most points
  // converge in far less and the default run measures thousands.
  double max_time_s = 0.05;
  double warmup_s = 0.005;        // warm-up time (at least one repetition)
  double min_sample_s = 100e-6;   // a sample lasts at least this long...
  double min_sample_ticks = 100;  // ...and at least this many timer ticks
  std::size_t min_samples = 8;
  std::size_t max_samples = 2000;
  // Time lent to noisy points: sampling time that earlier points of the same
  // sweep left unused (they converged early) goes to later points that need
  // more, up to this many times max_time_s each, so the sweep as a whole stays
  // near points x max_time_s while its noisy points get what the quiet ones
  // did not use. 0: no lending.
  double lend_cap_x = 20;
  bool verify = true;
  // Checking samples (poisoning the destination, then reading it back on the
  // CPU) may take at most this share of the sampling time; the first sample
  // is always checked. A 64 MiB check on one core takes about as long as the
  // copy over PCIe: checking every sample halved the samples of large points.
  double check_share = 0.25;
  // Run each device point's thread on the CPUs local to the device, with its
  // memory from the device's NUMA node (core/affinity.hpp).
  bool affinity = true;
  // The watchdog's bound on one point, preparation included: negative derives
  // it from the point (watchdog_bound), 0 turns the watchdog off.
  double watchdog_s = -1;
  // The whole run's wall-clock target in seconds (sweep --budget): each
  // point's sampling time then comes from run_budget, not max_time_s. 0: off.
  double run_budget_s = 0;

  // --quick: a coarse look in seconds (5% target, 10 ms a point).
  static measure_options quick() {
    measure_options o;
    o.target_ci = 0.05;
    o.max_time_s = 0.01;
    o.warmup_s = 0.0005;
    return o;
  }
};

// The default run's whole-run budget (sweep --budget), seconds: with the
// overview's selection it fits the sweep and its report in two minutes on an
// H100 machine and on a 2-core one (docs/results/default-run/).
inline constexpr double overview_budget_s = 75;

// A whole run's wall-clock budget, shared by every backend's points in turn:
// each point may sample for what is left of the budget over the points left,
// less what a point has cost beyond its sampling so far (preparing, warming
// up, verifying, releasing). A point that converges early leaves its share to
// the points after it, so the time goes where the uncertainty is.
class run_budget {
 public:
  // Less than this a point never gets: under it few points reach their target.
  static constexpr double min_point_s = 0.01;
  // The share of a point's time it gets on its first measurement: the rest
  // is left to revisit() for the points that missed their target (most
  // converge in far less than their share and leave it anyway).
  static constexpr double first_pass_share = 0.6;
  run_budget(double total_s, std::size_t points);
  // The smallest budget that gives `points` points min_point_s each and their warm-up.
  static double smallest_for(std::size_t points, double warmup_s);
  // The next point's sampling budget.
  double next_point_s() const;
  // What is left of the whole budget (negative: overspent).
  double left_s() const;
  // After each point: whether it ran (skipped points cost nothing) and what its sampling took.
  void point_done(bool ran, double sampling_s);

 private:
  std::chrono::steady_clock::time_point start_;
  double total_s_;
  std::size_t left_, ran_ = 0;
  double sampled_s_ = 0;
};

// A generous bound on one point: far more than preparing, sampling (at most
// 4x max_time_s) and verifying it take at 20 MB/s, slower than any real path
// (a 2 GiB point on PoCL with 2 cores took 43 s; its bound is 137 s).
double watchdog_bound(std::uint64_t bytes, double max_time_s);

// Measures a prepared transfer. Never throws for the transfer's own failures:
// those become a failed point. Stops early (status failed, reason
// "interrupted") when `stop` is set.
point_result measure(transfer& t, const point_spec& spec, const device_info& device, const measure_options& options,
                     const std::atomic<bool>& stop);

// Runs every point in order through its backend, reporting each as it
// completes. Returns the number of failed points. Stops between points when
// `stop` is set; returns what it completed.
//
// With the watchdog on, each point runs on a thread of its own while this one
// waits: a point still running past its bound is recorded as failed with the
// time it took, the thread is abandoned where it hangs, and so is the backend
// (its other points are skipped: a thread is still inside it). A stop request
// during a stuck point returns at once with what was completed. A caller whose
// backend was abandoned must never destroy it, and should leave the process
// without waiting for that thread (std::_Exit after writing its results).
struct sweep_outcome {
  std::size_t ok = 0, skipped = 0, failed = 0;
  bool interrupted = false;
  bool abandoned = false;  // a point's thread is stuck inside the backend
};
using progress_fn = std::function<void(std::size_t done, std::size_t total, const point_spec&)>;
// A planned point with a skip reason is reported skipped, never prepared.
// A point measured once that missed its target, held back from the
// reporters so that revisit() can measure it again.
struct unsettled_point {
  backend* impl = nullptr;
  device_info device;
  point_result first;
};

// With `budget`, each point's sampling time comes from it (lending is off).
// With `unsettled`, an ok point that did not converge is appended there
// instead of being reported (it is counted ok all the same).
sweep_outcome run_sweep(backend& b, const std::vector<planned_point>& points, const measure_options& options,
                        reporter& out, const std::atomic<bool>& stop, const progress_fn& progress = {},
                        run_budget* budget = nullptr, std::vector<unsettled_point>* unsettled = nullptr);

// The whole run's last step: what the budget has left goes to the points that
// missed their target, those nearest to it first (the time each would need,
// from its interval's width and the samples it took, as its width shrinks as
// one over the root of the samples). Each is prepared again with fresh
// buffers and measured again; the two measurements' samples are one point
// (stopped_by says "measured again"), so a point whose preparation decides
// its speed stays as uncertain as it is. Every point is reported, revisited or
// not. Returns true when a point hung past the watchdog (its backend is left
// behind, as run_sweep's outcome.abandoned).
bool revisit(std::vector<unsettled_point>& points, const measure_options& options, run_budget& budget, reporter& out,
             const std::atomic<bool>& stop);
// Every point planned to run.
sweep_outcome run_sweep(backend& b, const std::vector<point_spec>& points, const measure_options& options,
                        reporter& out, const std::atomic<bool>& stop, const progress_fn& progress = {});

}  // namespace xfer
