#pragma once
// Per-device state a backend keeps between points: streams, events, the gate,
// what the device is, and which host kinds proved unsafe behind a gate; and
// the timers the transfers hand to core's timed-batch loop (core/timing.hpp).
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <xfer/mem/blocks/block_copier.hpp>
#include <xfer/mem/staged/device_step.hpp>
#include <xfer/mem/staged/staged_copier.hpp>
#include <xfer/core/backend.hpp>
#include <xfer/core/timing.hpp>

#include "cuda/api.hpp"
#include "spin_gate.hpp"

namespace xfer::cuda {

class device_context {
 public:
  device_context(api& a, int device);
  api& a;
  const int device;
  const device_attributes attrs;
  stream s0{a}, s1{a};
  event start{a}, stop0{a}, stop1{a};
  spin_gate gate{a, s0.get()};  // after the streams: destroyed (and opened) before them
  // Host kinds whose async copies blocked the host behind a closed gate, with
  // the fallback recorded then: later points of them run ungated from the start.
  std::map<std::string, std::string> ungated_kinds;

  // libxfer's staged copier for this device (route staged), made on first
  // use with its tuning: the one cached for this machine and device, else a
  // short calibration (under 2 s), kept for later runs.
  mem::staged_copier& staged();
  // libxfer's block copier for this device (the block routes, cuda-rt
  // only: its step is the runtime API's), made on first use; it calibrates
  // each block size class once, kept for later runs as its cache says.
  mem::block_copier& blocks();

  // Makes this device current for the calling thread (cheap; done per batch).
  void make_current() { a.make_current(device); }
  // skip_point unless `bytes` of device memory (what the point needs in all)
  // fit in what is free, keeping a margin for the context and kernels.
  void require_device_memory(std::uint64_t bytes, const std::string& what);

 private:
  std::unique_ptr<mem::device_step> staged_step_;
  std::unique_ptr<mem::staged_copier> copier_;  // after the step: destroyed first
  std::unique_ptr<mem::block_step> block_step_;
  std::unique_ptr<mem::block_copier> blocks_;  // after the step: destroyed first
};

// Device time of one batch on one or two streams ("lanes") by CUDA events:
// start() records the start event on s0 (behind the gate's spin kernel) and,
// with two lanes, makes s1 wait for it, so both lanes start together; stop()
// records a stop event on each lane. seconds() waits for them and is the
// longer lane; with two lanes each lane's time is a part (part0, part1).
class event_timer final : public interval_timer {
 public:
  explicit event_timer(device_context& ctx, const char* part0 = nullptr, const char* part1 = nullptr);
  void start() override;
  void stop() override;
  double seconds() override;
  double resolution_s() const override;
  clock_kind kind() const override { return clock_kind::event; }
  void add_parts(std::map<std::string, double>& parts) const override;
  void cancel() noexcept override;  // lets both streams drain

 private:
  device_context& ctx_;
  int lanes_;
  const char* names_[2];
  double lane_s_[2] = {0, 0};
};

// copy-sync's clock: the wall, stopped once the device is idle (a blocking
// copy may return before its DMA ends: pageable h2d, and d2d).
class synced_wall_timer final : public wall_timer {
 public:
  explicit synced_wall_timer(api& a) : a_(a) {}
  void stop() override {
    a_.synchronize();
    wall_timer::stop();
  }

 private:
  api& a_;
};

// Event timestamps are 0.5 us apart (CUDA's documented event resolution).
inline constexpr double event_resolution_s = 0.5e-6;

}  // namespace xfer::cuda
