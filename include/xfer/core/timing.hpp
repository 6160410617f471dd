#pragma once
// Timers and gates: the pieces a backend combines to time a batch of K
// transfers without counting the time spent enqueueing them.
#include <chrono>
#include <cstddef>
#include <string_view>

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
  virtual std::string_view kind() const = 0;  // "event" | "wall"
};

class wall_timer final : public interval_timer {
 public:
  using clock = std::chrono::steady_clock;
  void start() override { t0_ = clock::now(); }
  void stop() override { t1_ = clock::now(); }
  double seconds() override { return std::chrono::duration<double>(t1_ - t0_).count(); }
  double resolution_s() const override;
  std::string_view kind() const override { return "wall"; }

 private:
  clock::time_point t0_{}, t1_{};
};

// Holds a queue closed while work is enqueued, so the timed region holds only
// execution (a spin kernel on CUDA, a user event on OpenCL). Work run directly
// on the host needs none: no_gate.
class gate {
 public:
  virtual ~gate() = default;
  virtual void close() = 0;
  virtual void open() = 0;
};

class no_gate final : public gate {
 public:
  void close() override {}
  void open() override {}
};

// One timed batch: the primary timer's and the wall clock's seconds for `reps`
// repetitions. Wall time runs from the first enqueue to completion, so
// wall - primary is what the API costs on top of the work itself.
struct batch_time {
  double seconds = 0;
  double wall_seconds = 0;
};

template <class Enqueue>
batch_time time_gated_batch(gate& g, interval_timer& timer, std::size_t reps, Enqueue&& enqueue_one) {
  wall_timer wall;
  g.close();
  wall.start();
  timer.start();
  for (std::size_t i = 0; i < reps; ++i) enqueue_one(i);
  timer.stop();
  g.open();
  const double t = timer.seconds();
  wall.stop();
  return {t, wall.seconds()};
}

}  // namespace xfer
