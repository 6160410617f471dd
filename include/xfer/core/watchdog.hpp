#pragma once
// The watchdog every mode runs its points under: a point (or a group of
// devices at once) runs on a thread of its own while the caller waits at most
// its bound; one that outlives the bound is abandoned where it hangs, and so
// is its backend (a thread is still inside it). A stop request is honoured
// within a grace: the point is waited for that long to notice it, then left.
// A caller whose backend was abandoned must never destroy it, and should
// leave the process without waiting for that thread (std::_Exit after
// writing its results).
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>
#include <xfer/core/sampling.hpp>

namespace xfer {

// A generous bound on one point: far more than preparing, sampling (at most
// 4x max_time_s) and verifying it take at 20 MB/s, slower than any real path
// (a 2 GiB point on PoCL with 2 cores took 43 s; its bound is 137 s).
double watchdog_bound(std::uint64_t bytes, double max_time_s);
// The bound on these points run as one (a group at once; one point alone):
// --watchdog where given, else the sum of their derived bounds.
double watchdog_limit(const measure_options& o, const std::vector<point_spec>& points);

// How long a stop request waits for a point to notice it before leaving the
// thread behind (points check between samples and rounds, so this is plenty).
inline constexpr double stop_grace_s = 2.0;

// How a watched job ended.
struct watch_end {
  bool finished = false;  // false: its thread is left behind
  bool stopped = false;   // left behind after a stop request (not at the bound)
  double took_s = 0;      // how long it was waited for
  double quiet_s = 0;     // how long since its last heartbeat (took_s without one)
};

// A job's sign of progress, for work whose length nobody can bound up front
// (a study's point: runs or repeats, each of a known size): the bound then
// counts from the latest beat, so a point fails only when it stops moving.
class heartbeat {
 public:
  heartbeat();
  void beat();             // from the job's thread
  double quiet_s() const;  // since the latest beat (or since made)

 private:
  std::atomic<std::int64_t> last_ns_;  // steady_clock, since its epoch
};

// Runs `job` on a detached thread (stop signals blocked there, as on every
// worker) and waits for it at most `limit_s` (from the latest of `beats`,
// where given), or stop_grace_s after `stop` is set. The job must own what it
// writes, or write into what outlives an abandoned thread; `beats` must outlive
// the call.
watch_end watch(std::function<void()> job, double limit_s, const std::atomic<bool>& stop,
                const heartbeat* beats = nullptr);

// `job`'s result under the watchdog, or nullopt with `end` saying why not.
template <class T>
std::optional<T> run_watched(std::function<T()> job, double limit_s, const std::atomic<bool>& stop, watch_end& end) {
  auto slot = std::make_shared<std::optional<T>>();  // shared: an abandoned thread still writes it
  end = watch([slot, job = std::move(job)] { *slot = job(); }, limit_s, stop);
  if (!end.finished) return std::nullopt;
  return std::move(*slot);
}

// What a thread left behind may still use (a study's thread team, its
// resources), kept for the rest of the process: never destroyed (that could
// free memory the thread writes, or wait on it forever), yet still reachable,
// so a leak checker does not report it.
void keep_until_exit(std::shared_ptr<void> what);

// A failed point's reason when the watchdog left it (devices > 1: a group's).
std::string watchdog_reason(double took_s, std::size_t devices = 1);
// A study's point's reason when it went `quiet_s` without a heartbeat.
std::string stalled_reason(double quiet_s);
// Why a point of `holder` (a backend, a memory provider) is skipped: a thread
// left behind in its earlier point `stuck_at` is still inside it.
std::string still_stuck_reason(const std::string& holder, const std::string& stuck_at);

// Points of one backend measured one after another under the watchdog
// (run_sweep, revisit, the peer matrix). Once a point is left behind, the
// backend's later points are skipped: a thread is still inside it.
class watched_points {
 public:
  watched_points(const measure_options& o, const std::atomic<bool>& stop) : o_(o), stop_(&stop) {}
  // The point's result from `job` on a watched thread, bounded by `limit_s`
  // (unbounded with --watchdog 0, where a stop request still leaves it): failed with the time it took when left behind,
  // skipped when an earlier one was. nullopt when a stop request came while
  // it hung: the caller ends its loop with what was completed.
  std::optional<point_result> run(const point_spec& p, const device_info& device, double limit_s,
                                  std::function<point_result()> job);
  // A point's thread is stuck inside the backend.
  bool abandoned() const { return !stuck_at_.empty(); }

 private:
  measure_options o_;
  const std::atomic<bool>* stop_;
  std::string stuck_at_;  // the point whose thread is stuck
};

}  // namespace xfer
