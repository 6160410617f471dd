#pragma once
// Per-device state a backend keeps between points: streams, events, the gate,
// what the device is, and which host kinds proved unsafe behind a gate.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <set>
#include <stdexcept>
#include <string>
#include <xfer/core/backend.hpp>

#include "api.hpp"
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
  // Host kinds whose async copies blocked the host behind a closed gate: they run ungated from then on.
  std::set<std::string> ungated_kinds;

  // Makes this device current for the calling thread (cheap; done per batch).
  void make_current() { a.make_current(device); }
  // skip_point unless `bytes` of device memory (what the point needs in all)
  // fit in what is free, keeping a margin for the context and kernels.
  void require_device_memory(std::uint64_t bytes, const std::string& what);
};

// The gate's spin kernel gave up: something in the batch blocked the host.
struct gate_timeout : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A stream's launch queue holds about a thousand entries; a host that fills it
// behind a closed gate blocks for good. Sub-batches stay far below that.
inline constexpr std::size_t max_ops_behind_gate = 256;

// Times `reps` repetitions of enqueue(rep) on the context's streams with
// device events: sub-batches of at most max_ops_behind_gate / ops_per_rep
// repetitions, each behind the gate when `gated`, their times summed. With two
// lanes, s1 starts with s0 (it waits on the start event) and each lane's time
// is reported as a part; seconds is the longer lane. wall_seconds runs from
// the first enqueue of each sub-batch to its completion.
struct lanes {
  int count = 1;
  const char* part0 = nullptr;  // part names when count == 2
  const char* part1 = nullptr;
};
sample run_timed(device_context& ctx, std::size_t reps, std::size_t ops_per_rep, bool gated, lanes l,
                 const std::function<void(std::size_t)>& enqueue);

// Event timestamps are 0.5 us apart (CUDA's documented event resolution).
inline constexpr double event_resolution_s = 0.5e-6;

}  // namespace xfer::cuda
