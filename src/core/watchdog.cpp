#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <fmt/format.h>
#include <limits>
#include <mutex>
#include <thread>
#include <xfer/core/interrupt.hpp>
#include <xfer/core/timing.hpp>
#include <xfer/core/watchdog.hpp>

namespace xfer {
namespace {

using clock = std::chrono::steady_clock;

// What the watched thread and the waiting one share; owned by both, so an
// abandoned thread finishes into memory that stays valid.
struct watched_job {
  std::mutex m;
  std::condition_variable done_cv;
  bool done = false;
};

}  // namespace

double watchdog_bound(std::uint64_t bytes, double max_time_s) {
  return 30.0 + 40.0 * max_time_s + static_cast<double>(bytes) / 20e6;
}

double watchdog_limit(const measure_options& o, const std::vector<point_spec>& points) {
  if (o.watchdog_s > 0) return o.watchdog_s;
  double limit = 0;
  for (const auto& p : points) limit += watchdog_bound(p.bytes, o.max_time_s);
  return limit;
}

namespace {
std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now().time_since_epoch()).count();
}
}  // namespace

heartbeat::heartbeat() : last_ns_(now_ns()) {}

void heartbeat::beat() { last_ns_.store(now_ns(), std::memory_order_relaxed); }

double heartbeat::quiet_s() const {
  return static_cast<double>(now_ns() - last_ns_.load(std::memory_order_relaxed)) * 1e-9;
}

watch_end watch(std::function<void()> job, double limit_s, const std::atomic<bool>& stop, const heartbeat* beats) {
  auto state = std::make_shared<watched_job>();
  std::thread([state, job = std::move(job)] {
    block_stop_signals_in_this_thread();
    job();
    const std::lock_guard lock(state->m);
    state->done = true;
    state->done_cv.notify_all();
  }).detach();
  watch_end end;
  const auto t0 = clock::now();
  std::optional<clock::time_point> stopped_at;
  std::unique_lock lock(state->m);
  while (!state->done_cv.wait_for(lock, std::chrono::milliseconds(50), [&] { return state->done; })) {
    end.took_s = seconds_since(t0);
    end.quiet_s = beats ? std::min(beats->quiet_s(), end.took_s) : end.took_s;
    if (stop.load() && !stopped_at) stopped_at = clock::now();
    end.stopped = stopped_at && seconds_since(*stopped_at) >= stop_grace_s;
    if (end.quiet_s >= limit_s || end.stopped) return end;
  }
  end.took_s = seconds_since(t0);
  end.quiet_s = beats ? std::min(beats->quiet_s(), end.took_s) : end.took_s;
  end.finished = true;
  return end;
}

std::string watchdog_reason(double took_s, std::size_t devices) {
  if (devices > 1)
    return fmt::format("no result after {:.1f} s, the watchdog's bound for this group of {} devices (--watchdog): a "
                       "transfer never returned; its thread is left behind",
                       took_s, devices);
  return fmt::format("no result after {:.1f} s, the watchdog's bound for this point (--watchdog): the transfer never "
                     "returned; its thread is left behind",
                     took_s);
}

void keep_until_exit(std::shared_ptr<void> what) {
  static std::mutex m;
  static auto* kept = new std::vector<std::shared_ptr<void>>;  // never destroyed, not even at exit
  const std::lock_guard lock(m);
  kept->push_back(std::move(what));
}

std::string still_stuck_reason(const std::string& holder, const std::string& stuck_at) {
  return fmt::format("not run: {} is still stuck in an earlier point ({})", holder, stuck_at);
}

std::string stalled_reason(double quiet_s) {
  return fmt::format("no progress for {:.1f} s, the watchdog's bound for this point (--watchdog): it never returned; "
                     "its thread is left behind",
                     quiet_s);
}

std::optional<point_result> watched_points::run(const point_spec& p, const device_info& device, double limit_s,
                                                std::function<point_result()> job) {
  if (abandoned())
    return unrun(p, device, point_status::skipped, still_stuck_reason(p.backend, stuck_at_));
  // --watchdog 0 lifts the bound, not the thread: a stop request must still
  // end the run within the grace while a point hangs.
  const double limit = o_.watchdog_s == 0 ? std::numeric_limits<double>::infinity() : limit_s;
  watch_end end;
  auto r = run_watched<point_result>(std::move(job), limit, *stop_, end);
  if (r) return r;
  stuck_at_ = fmt::format("{} {} {} {} B", to_string(p.route), to_string(p.dir), p.host_memory, p.bytes);
  if (end.stopped || stop_->load()) return std::nullopt;  // interrupted while stuck: what was completed is the result
  return unrun(p, device, point_status::failed, watchdog_reason(end.took_s));
}

}  // namespace xfer
