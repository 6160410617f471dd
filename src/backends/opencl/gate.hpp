#pragma once
// The OpenCL halves of the core's timing protocol (xfer/core/timing.hpp): a
// gate made of a user event, and a timer made of the profiling timestamps of
// a batch's first and last commands.
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <map>
#include <string>
#include <mutex>
#include <thread>
#include <vector>
#include <xfer/core/timing.hpp>

#include "opencl/cl.hpp"

namespace xfer::opencl {

// Holds commands back while closed: the first command of each queue waits on
// a user event that open() completes. Some drivers block inside a non-blocking
// enqueue until the command can run (NVIDIA stages pageable memory that way);
// behind a closed gate that would deadlock, so a watchdog opens the gate if it
// stays closed longer than `deadline`, and forced() (gave_way()) says it did:
// core's timed_batches then falls back to running ungated.
class user_event_gate final : public gate {
 public:
  user_event_gate(context ctx, std::chrono::milliseconds deadline);
  ~user_event_gate() override;
  user_event_gate(const user_event_gate&) = delete;
  user_event_gate& operator=(const user_event_gate&) = delete;

  void close() override;
  void open() override;
  // The event to wait on; null while open.
  cl_event wait_event() const noexcept { return event_.get(); }
  // The watchdog opened the gate during the last close/open cycle.
  bool forced() const;
  bool gave_way() const override { return forced(); }
  std::string give_way_rule() const override;

 private:
  void complete_locked();  // sets the user event complete once
  void watch();

  context ctx_;
  std::chrono::milliseconds deadline_;
  opencl::event event_;
  mutable std::mutex m_;
  std::condition_variable cv_;
  bool closed_ = false, completed_ = true, forced_ = false, quit_ = false;
  std::chrono::steady_clock::time_point closed_at_{};
  std::thread watchdog_;  // started by the first close()
};

// Device time of one batch on up to two queues ("lanes"): from the earliest
// START of a lane's first command to the latest END of a lane's last one. The
// gate holds the first commands, so enqueue overhead is not in the span.
// Parts: "queued_to_end", and each lane's span under its name where the lanes
// are named (bidir: "h2d", "d2h").
class event_span_timer final : public interval_timer {
 public:
  event_span_timer(std::vector<cl_command_queue> lanes, double resolution_s, std::vector<std::string> lane_names = {});
  void start() override;  // forgets the previous batch
  void stop() override;   // submits what was enqueued (clFlush), so it runs as soon as the gate opens
  double seconds() override;  // waits for the batch
  double resolution_s() const override { return resolution_s_; }
  clock_kind kind() const override { return clock_kind::event; }
  void add_parts(std::map<std::string, double>& parts) const override;
  void cancel() noexcept override;  // clFinish on every lane

  void first(std::size_t lane, event e) { lanes_.at(lane).first = std::move(e); }
  void last(std::size_t lane, event e) { lanes_.at(lane).last = std::move(e); }
  // After seconds(): one lane's own span, and QUEUED of the first command to
  // END of the last (what the device clock saw of enqueue plus execution).
  double lane_seconds(std::size_t lane) const { return lanes_.at(lane).span_s; }
  double queued_to_end_s() const { return queued_to_end_s_; }

 private:
  struct lane {
    cl_command_queue queue;
    event first, last;
    double span_s = 0;
  };
  std::vector<lane> lanes_;
  std::vector<std::string> names_;
  double resolution_s_;
  double queued_to_end_s_ = 0;
};

}  // namespace xfer::opencl
