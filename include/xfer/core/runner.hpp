#pragma once
// The loop over a sweep's points, one device at a time, and the run's budget.
// Sampling itself (measure, measure_options) is core/sampling.hpp's, the
// watchdog core/watchdog.hpp's.
#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <vector>
#include <xfer/core/backend.hpp>
#include <xfer/core/plan.hpp>
#include <xfer/core/result.hpp>
#include <xfer/core/sampling.hpp>
#include <xfer/core/watchdog.hpp>

namespace xfer {

class reporter;

// The default run's whole-run budget (sweep --budget), seconds: with the
// overview's selection it fits the sweep and its report in two minutes on a
// one-GPU machine and on a 2-core one (docs/decisions/0005-default-run.md).
inline constexpr double overview_budget_s = 75;

// A whole run's wall-clock budget, shared by every backend's points in turn:
// each point may sample for what is left of the budget over the points left,
// less what a point has cost beyond its sampling so far (preparing, warming
// up, verifying, releasing). A point that converges early leaves its share to
// the points after it, so the time goes where the uncertainty is.
class run_budget {
 public:
  using clock = std::chrono::steady_clock;
  // The clock the budget reads (tests drive it by hand).
  using clock_fn = std::function<clock::time_point()>;
  // Less than this a point never gets: under it few points reach their target.
  static constexpr double min_point_s = 0.01;
  // The share of a point's time it gets on its first measurement: the rest
  // is left to revisit() for the points that missed their target (most
  // converge in far less than their share and leave it anyway).
  static constexpr double first_pass_share = 0.6;
  run_budget(double total_s, std::size_t points, clock_fn now = clock::now);
  // What a point costs beside its sampling and warm-up: preparing its
  // buffers, checking its data, releasing them: without it a budget named
  // as enough ran over (issue 49; docs/decisions/0005-default-run.md).
  // Where buffers are larger or pinned the budget's shares absorb the
  // difference.
  static constexpr double point_overhead_s = 0.025;
  // The smallest budget that gives `points` points min_point_s each, their
  // warm-up and their overhead.
  static double smallest_for(std::size_t points, double warmup_s);
  // The next point's sampling budget.
  double next_point_s() const;
  // What is left of the whole budget (negative: overspent).
  double left_s() const;
  // After each point of the first pass: whether it ran (skipped points cost
  // nothing), what its sampling took, and what measuring it again would cost
  // (0: it met its target).
  void point_done(bool ran, double sampling_s, double again_s = 0);
  // revisit() starts with `again_s` of second measurements it may pay for;
  // each one done (or passed over) is taken off with again_done. What is
  // left is scaled by what the pass's measurements have taken against their
  // estimate (a second measurement warms up and checks again too).
  void revisit_starts(double again_s);
  void again_done(double again_s);
  // What the pass's second measurements have taken against their estimates
  // (1 before the first; at most 10): revisit() holds each next one to it,
  // so that the pass ends within the budget.
  double again_ratio() const;
  // The seconds the run should still take, first pass and re-measure pass
  // both, for the progress line (issue 50: within 25% of the truth). The
  // first pass's points left at what points have cost so far (sampling and
  // the rest), then the second measurements that the points so far call
  // for, scaled to the whole pass, as far as the budget will pay for them.
  // Where points cost more beside their sampling than the budget holds, that
  // cost is the estimate: the run overruns, and the line says so.
  double expected_left_s() const;

 private:
  double elapsed_s() const;
  clock_fn now_;
  clock::time_point start_;
  double total_s_;
  std::size_t points_, left_, ran_ = 0;
  double sampled_s_ = 0;
  double again_s_ = 0;  // first pass: what its unsettled points would cost again; revisit: what it has left to do
  bool revisiting_ = false;
  double revisit_start_s_ = 0, again_done_s_ = 0;  // revisit: when it started, the estimates of what it has done
};

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
  // Counts a reported point by its status.
  void count(point_status s) {
    switch (s) {
      case point_status::ok: ++ok; break;
      case point_status::skipped: ++skipped; break;
      case point_status::failed: ++failed; break;
    }
  }
};
using progress_fn = std::function<void(std::size_t done, std::size_t total, const point_spec&)>;
// A planned point with a skip reason is reported skipped, never prepared.
// A point measured once that missed its target, held back from the
// reporters so that revisit() can measure it again.
struct unsettled_point {
  backend* impl = nullptr;
  device_info device;
  point_result first;
  double limit_s = 0;  // the first pass's watchdog bound, which the second measurement keeps (0: computed)
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
// not. A second measurement that fails (verification, an error, a hang past
// the first pass's watchdog bound) fails the point: its reason says so and the
// first measurement's figures stay in it.
struct revisit_outcome {
  bool abandoned = false;  // a point hung past the watchdog (its backend is left behind, as run_sweep's)
  std::size_t failed = 0;  // points counted ok by run_sweep that the second measurement failed
};
// `progress` sees each point before it is measured again (done, of all).
revisit_outcome revisit(std::vector<unsettled_point>& points, const measure_options& options, run_budget& budget,
                        reporter& out, const std::atomic<bool>& stop, const progress_fn& progress = {});
// Every point planned to run.
sweep_outcome run_sweep(backend& b, const std::vector<point_spec>& points, const measure_options& options,
                        reporter& out, const std::atomic<bool>& stop, const progress_fn& progress = {});

}  // namespace xfer
