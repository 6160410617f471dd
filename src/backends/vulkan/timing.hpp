#pragma once
// The Vulkan halves of the core's timing protocol (xfer/core/timing.hpp): a
// gate made of a timeline semaphore the host signals, and a timer made of
// timestamp queries written around each lane's command buffer.
//
// A batch is recorded into one command buffer per lane (recording is host
// work and never reaches the device), submitted when the timer stops, and
// the submission waits on the gate's semaphore: the device starts only when
// the gate opens, so the timestamps hold execution alone, and the wall clock
// beside them holds recording and submission too.
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>
#include <xfer/core/timing.hpp>

#include "device.hpp"

namespace xfer::vulkan {

class timeline_gate final : public gate {
 public:
  explicit timeline_gate(const device_context& dev);
  ~timeline_gate() override;
  timeline_gate(const timeline_gate&) = delete;
  timeline_gate& operator=(const timeline_gate&) = delete;

  void close() override;
  void open() override;
  // The value a submission made while closed waits for; 0 while open.
  std::uint64_t pending() const noexcept { return pending_; }
  VkSemaphore semaphore() const noexcept { return sem_; }

 private:
  VkDevice dev_;
  VkSemaphore sem_ = VK_NULL_HANDLE;
  std::uint64_t value_ = 0, pending_ = 0;
};

// One lane: a queue with its own command buffer, fence and pair of queries.
// Timestamps where the queue family writes them, else the wall clock from
// start() to the lanes' completion.
class batch_timer final : public interval_timer {
 public:
  batch_timer(const device_context& dev, std::vector<queue_ref> lanes, const timeline_gate* g,
              std::vector<std::string> lane_names = {});
  ~batch_timer() override;
  batch_timer(const batch_timer&) = delete;
  batch_timer& operator=(const batch_timer&) = delete;

  void start() override;   // begins each lane's command buffer with its first timestamp
  void stop() override;    // closes them and submits, behind the gate where it is closed
  double seconds() override;  // waits for the lanes
  double resolution_s() const override;
  clock_kind kind() const override { return timestamps_ ? clock_kind::event : clock_kind::wall; }
  void add_parts(std::map<std::string, double>& parts) const override;
  void cancel() noexcept override;

  // The command buffer of a lane, between start() and stop().
  VkCommandBuffer cmd(std::size_t lane) const { return lanes_.at(lane).cb; }
  std::size_t lanes() const noexcept { return lanes_.size(); }

 private:
  struct lane {
    queue_ref q;
    VkCommandBuffer cb = VK_NULL_HANDLE;
    VkFence fence = VK_NULL_HANDLE;
    VkQueryPool queries = VK_NULL_HANDLE;
    bool submitted = false, recording = false;
    double span_s = 0;
  };
  void destroy() noexcept;
  const device_context& dev_;
  const timeline_gate* gate_;
  std::vector<lane> lanes_;
  std::vector<std::string> names_;
  bool timestamps_ = true;
  std::chrono::steady_clock::time_point t0_{};
};

}  // namespace xfer::vulkan
