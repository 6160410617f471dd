#pragma once
// The CUDA gate: close() queues a one-thread kernel that spins on a flag in
// mapped pinned host memory; open() writes the flag. Work queued behind it on
// the same stream waits, so the timed region holds execution, not enqueueing.
//
// Pitfalls this is built around:
//  - a copy that blocks the host (pageable memory is staged synchronously)
//    must never be queued behind a closed gate: the host would wait for the
//    GPU, which waits for the host. Callers decide; as a safety net the kernel
//    gives up after timeout_ns and timed_out() (gave_way()) reports it, and
//    core's timed_batches falls back to running ungated.
//  - open() must run on every path (core's timed_batches does; gate_guard
//    elsewhere), or the GPU keeps spinning.
#include <cstdint>
#include <string>
#include <xfer/core/timing.hpp>

#include "cuda/api.hpp"

namespace xfer::cuda {

class spin_gate final : public gate {
 public:
  static constexpr std::uint64_t default_timeout_ns = 4'000'000'000;  // far above any sub-batch's enqueue time
  spin_gate(api& a, stream_t s, std::uint64_t timeout_ns = default_timeout_ns);
  ~spin_gate() override;
  spin_gate(const spin_gate&) = delete;
  spin_gate& operator=(const spin_gate&) = delete;

  void close() override;
  void open() override;
  bool is_closed() const noexcept { return closed_; }
  // True when the spin kernel of the last close() gave up waiting (read once
  // that kernel has finished, e.g. after synchronizing the stream).
  bool timed_out() const noexcept;
  bool gave_way() const override { return timed_out(); }
  std::string give_way_rule() const override;

 private:
  struct shared_words {
    std::uint32_t flag;
    std::uint32_t timed_out;
  };
  api& api_;
  stream_t stream_;
  std::uint64_t timeout_ns_;
  shared_words* host_ = nullptr;    // mapped pinned
  shared_words* device_ = nullptr;  // its device address
  std::uint32_t generation_ = 0;
  bool closed_ = false;
};

// Opens the gate when it leaves scope, whatever happened in between.
class gate_guard {
 public:
  gate_guard(gate& g, bool use) : gate_(use ? &g : nullptr) {
    if (gate_) gate_->close();
  }
  ~gate_guard() { release(); }
  void release() noexcept {
    if (gate_) {
      gate_->open();
      gate_ = nullptr;
    }
  }
  gate_guard(const gate_guard&) = delete;
  gate_guard& operator=(const gate_guard&) = delete;

 private:
  gate* gate_;
};

}  // namespace xfer::cuda
