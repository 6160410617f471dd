#pragma once
// Timers, gates and the one timed-batch loop every backend times its samples
// with (host, OpenCL, CUDA): the backend supplies the gate, the timer's marks
// and the enqueue of one repetition; the loop owns the order of the steps,
// the split into sub-batches and what happens when a gate cannot hold.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <xfer/core/backend.hpp>

namespace xfer {

// Seconds of the steady clock since t0.
inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Runs f and returns the seconds it took by the steady clock. f must finish
// its work (synchronize, clFinish) before it returns for the time to mean that.
template <class F>
double time_call(F&& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return seconds_since(t0);
}

// Marks an interval on whatever executes the work (a device stream, or the
// host itself). seconds() waits for the interval to complete.
class interval_timer {
 public:
  virtual ~interval_timer() = default;
  virtual void start() = 0;
  virtual void stop() = 0;
  virtual double seconds() = 0;
  virtual double resolution_s() const = 0;
  virtual clock_kind kind() const = 0;
  // After seconds(): adds this interval's named parts (a lane per direction,
  // queued-to-end) into `parts`; the loop sums them over sub-batches.
  virtual void add_parts(std::map<std::string, double>& /*parts*/) const {}
  // An enqueue threw between start() and stop(), and the gate is open again:
  // wait for what was queued, so the caller may free the buffers it uses.
  virtual void cancel() noexcept {}
};

class wall_timer : public interval_timer {
 public:
  using clock = std::chrono::steady_clock;
  void start() override { t0_ = clock::now(); }
  void stop() override { t1_ = clock::now(); }
  double seconds() override { return std::chrono::duration<double>(t1_ - t0_).count(); }
  double resolution_s() const override;
  clock_kind kind() const override { return clock_kind::wall; }

 private:
  clock::time_point t0_{}, t1_{};
};

// A gate holds at most this many commands per queue: a batch longer than that
// runs as sub-batches, each behind the gate, their times summed. Bounded so a
// driver's submission queue never fills while the gate holds it shut (a CUDA
// stream's launch queue holds about a thousand entries; a host that fills it
// behind a closed gate blocks for good).
inline constexpr std::size_t max_ops_behind_gate = 256;

// Holds a queue closed while work is enqueued, so the timed region holds only
// execution (a spin kernel on CUDA, a user event on OpenCL). Work run directly
// on the host needs none: no_gate.
//
// A gate must never hold the host itself: some enqueues block the calling
// thread until the command has run (a driver staging pageable memory), and
// behind a closed gate that is a deadlock. Every gate therefore gives way on
// its own after a bound (the spin kernel's timeout, the user event's
// watchdog) and says so through gave_way(): see timed_batches for what follows.
class gate {
 public:
  virtual ~gate() = default;
  virtual void close() = 0;
  virtual void open() = 0;
  // Read once the sub-batch has finished (after the timer's seconds()): the
  // gate opened by itself during the last close/open cycle.
  virtual bool gave_way() const { return false; }
  // How it gives way, for the result ("the spin kernel gives up after 4 s").
  virtual std::string give_way_rule() const { return {}; }
  // Commands per queue it holds at once (max_ops_behind_gate; no_gate: any).
  virtual std::size_t capacity() const { return max_ops_behind_gate; }
};

class no_gate final : public gate {
 public:
  void close() override {}
  void open() override {}
  std::size_t capacity() const override { return std::numeric_limits<std::size_t>::max(); }
};

// One timed batch: the primary timer's and the wall clock's seconds. Wall time
// runs from the first enqueue to completion, so wall - primary is what the API
// costs on top of the work itself.
struct batch_time {
  double seconds = 0;
  double wall_seconds = 0;
};

// The timed-batch loop. run(timer, reps, enqueue_one) times `reps`
// repetitions as one sample:
//
//   for each sub-batch of n repetitions (at most gate.capacity() / ops_per_rep):
//     gate.close(); wall start; timer.start();
//     enqueue_one(i, n) for i in [0, n);
//     timer.stop(); gate.open();
//     timer.seconds() (waits for the work); wall stop; timer.add_parts(parts)
//
// and returns the sums: seconds, wall_seconds and parts. enqueue_one(i, n)
// gets the repetition's index in its sub-batch and the sub-batch's length
// (the first and last commands carry the timer's marks on OpenCL).
//
// The gate opens on every path: an exception from enqueue_one opens it, calls
// timer.cancel() and propagates.
//
// When a gate cannot hold (it gave way: an enqueue blocked the host behind it
// until the gate's bound opened it), that sub-batch's time is the gate's bound,
// not the work: it is discarded and run again ungated, and every later batch
// of this loop runs ungated (one sub-batch, no split). The point then reports
// the fallback: every sample from then on carries sample::gate_fallback, which
// the runner copies into the point's result (JSON "gate_fallback"). Its event
// times include the gaps enqueueing leaves on the device. A backend that knows
// in advance that a gate cannot hold for some memory (learned from an earlier
// point) calls fall_back(why) before the first batch: the same record, without
// waiting out the bound again.
//
// A route that is ungated by design (blocking calls, or the host doing the
// work) passes no_gate: that is no fallback and is not recorded.
class timed_batches {
 public:
  // ops_per_rep: commands one repetition queues on its busiest queue.
  explicit timed_batches(gate& g, std::size_t ops_per_rep = 1)
      : gate_(&g), ops_per_rep_(ops_per_rep ? ops_per_rep : 1) {}

  template <class Enqueue>
  sample run(interval_timer& timer, std::size_t reps, Enqueue&& enqueue_one);

  // Runs ungated from now on, and says why in every later sample.
  void fall_back(std::string why);
  const std::string& fallback() const noexcept { return fallback_; }

 private:
  template <class Enqueue>
  batch_time one(gate& g, interval_timer& timer, std::size_t n, Enqueue& enqueue_one);
  std::size_t reps_per_sub_batch() const;
  void gave_way(std::size_t reps);  // records the fallback after the gate gave way

  gate* gate_;
  no_gate open_;  // what runs after a fallback
  std::size_t ops_per_rep_;
  std::string fallback_;
};

template <class Enqueue>
batch_time timed_batches::one(gate& g, interval_timer& timer, std::size_t n, Enqueue& enqueue_one) {
  wall_timer wall;
  g.close();
  try {
    wall.start();
    timer.start();
    for (std::size_t i = 0; i < n; ++i) enqueue_one(i, n);
    timer.stop();
  } catch (...) {
    g.open();
    timer.cancel();
    throw;
  }
  g.open();
  const double t = timer.seconds();
  wall.stop();
  return {t, wall.seconds()};
}

template <class Enqueue>
sample timed_batches::run(interval_timer& timer, std::size_t reps, Enqueue&& enqueue_one) {
  sample s;
  for (std::size_t done = 0; done < reps;) {
    gate& g = fallback_.empty() ? *gate_ : open_;
    const std::size_t n = fallback_.empty() ? std::min(reps - done, reps_per_sub_batch()) : reps - done;
    batch_time t = one(g, timer, n, enqueue_one);
    if (&g == gate_ && g.gave_way()) {
      gave_way(n);
      t = one(open_, timer, n, enqueue_one);
    }
    s.seconds += t.seconds;
    s.wall_seconds += t.wall_seconds;
    timer.add_parts(s.parts);
    done += n;
  }
  s.gate_fallback = fallback_;
  return s;
}

}  // namespace xfer
