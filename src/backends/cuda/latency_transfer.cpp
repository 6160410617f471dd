// Route latency: one device thread follows a ring of indices through host
// memory the device addresses directly (pinned or managed), each load waiting for the one before (a pointer chase), so the
// time per step is the round trip of one read across the link.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <fmt/format.h>
#include <numeric>
#include <stdexcept>
#include <xfer/core/timing.hpp>
#include <xfer/core/errors.hpp>

#include "cuda_transfer.hpp"
#include "kernels.hpp"
#include "cuda/resources.hpp"

namespace xfer::cuda {
namespace {

using clock = std::chrono::steady_clock;

// One link per 64-byte line: consecutive steps never share a cache line.
constexpr std::size_t slot_elements = 16;
// Verification walks this many steps on both sides and compares.
constexpr std::uint64_t verify_steps = 4096;

// A step coprime with the slot count, near the golden section, so the ring is
// a single cycle through every slot and consecutive steps land far apart.
std::uint64_t ring_step(std::uint64_t slots) {
  if (slots <= 1) return 0;
  std::uint64_t step = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(slots * 0.6180339887498949));
  while (std::gcd(step, slots) != 1) ++step;
  return step;
}

class latency_transfer final : public cuda_transfer {
 public:
  latency_transfer(device_context& ctx, const point_spec& p, std::unique_ptr<mem::host_resource> kind)
      : cuda_transfer(ctx, p, std::move(kind)) {
    require_host_memory(1);
    const std::uint64_t elements = p.bytes / sizeof(std::uint32_t);
    slots_ = std::max<std::uint64_t>(1, elements / slot_elements);
    if (slots_ * slot_elements > std::uint64_t{1} << 32)
      throw skip_point(fmt::format("latency indexes its ring with 32 bits: {} B is too large", p.bytes));

    const auto t0 = clock::now();
    host_ = host_buffer();
    ring_ = static_cast<const std::uint32_t*>(device_view(*kind_, ctx_.a, host_.data()));
    state_ = device_buffer(ctx_.a, sizeof(kernels::chase_state));
    costs_.alloc_s = seconds_since(t0);

    const auto t1 = clock::now();
    auto* ring = static_cast<std::uint32_t*>(host_.data());
    const std::uint64_t step = ring_step(slots_);
    for (std::uint64_t s = 0; s < slots_; ++s)
      ring[s * slot_elements] = static_cast<std::uint32_t>(((s + step) % slots_) * slot_elements);
    costs_.touch_s = seconds_since(t1);
    ctx_.a.fill_device(state_.data(), 0, sizeof(kernels::chase_state));
  }

  // One repetition is one dependent access; the chase goes on from where the
  // last batch stopped. All of it is one launch, so the loop times one
  // "repetition" of its own. Steps are counted where they are launched (a
  // launch the loop runs again after its gate gave way walks on too).
  sample run(std::size_t reps) override {
    ctx_.make_current();
    event_timer timer(ctx_);
    return loop_.run(timer, 1, [&](std::size_t, std::size_t) {
      kernels::chase(ctx_.s0.get(), ring_, reps, static_cast<kernels::chase_state*>(state_.data()));
      steps_ += reps;
    });
  }

  // Not core's pattern check (src/core/verify.cpp): a pointer chase moves
  // no buffer, it walks one, so the three are this route's own. The device's
  // walk must match the same walk done by the host.
  void verify() override {
    const std::uint64_t steps = std::min<std::uint64_t>(slots_, verify_steps);
    ctx_.a.fill_device(state_.data(), 0, sizeof(kernels::chase_state));
    steps_ = 0;
    run(steps);
    kernels::chase_state got{};
    ctx_.a.copy(&got, state_.data(), sizeof got, copy_kind::d2h);
    const auto* ring = static_cast<const std::uint32_t*>(host_.data());
    std::uint64_t index = 0, sum = 0;
    for (std::uint64_t i = 0; i < steps_; ++i) {
      index = ring[index];
      sum += index;
    }
    if (got.index != index || got.sum != sum)
      throw verification_error(fmt::format(
          "pointer chase over {} B: after {} steps the device is at element {} (sum {}), the host at {} (sum {})",
          spec_.bytes, steps_, got.index, got.sum, index, sum));
  }

  // A sample's chase goes on from where the last one stopped: remember where
  // that is, and check after the sample that the device walked the same
  // steps from there as the host does.
  void poison_sample() override {
    ctx_.a.copy(&armed_, state_.data(), sizeof armed_, copy_kind::d2h);
    steps_ = 0;
  }

  void check_sample() override {
    kernels::chase_state got{};
    ctx_.a.copy(&got, state_.data(), sizeof got, copy_kind::d2h);
    const auto* ring = static_cast<const std::uint32_t*>(host_.data());
    std::uint64_t index = armed_.index, sum = armed_.sum;
    for (std::size_t i = 0; i < steps_; ++i) {
      index = ring[index];
      sum += index;
    }
    if (got.index != index || got.sum != sum)
      throw verification_error(fmt::format("pointer chase over {} B: after {} more steps from element {} the device "
                                           "is at element {}, the host at {}",
                                           spec_.bytes, steps_, armed_.index, got.index, index));
  }

  clock_kind timer_kind() const override { return clock_kind::event; }
  double timer_resolution_s() const override { return event_resolution_s; }
  std::uint64_t bytes_per_rep() const override { return sizeof(std::uint32_t); }

 private:
  void* place_ptr(const sample_destination&) override {
    throw std::logic_error("latency has no places: it checks its walk itself");
  }

  std::uint64_t slots_ = 1;
  mem::buffer host_;
  const std::uint32_t* ring_ = nullptr;
  device_buffer state_;
  kernels::chase_state armed_{};  // where the chase stood before the sample
  std::size_t steps_ = 0;          // steps launched since armed_ (or since verify() reset the chase)
  timed_batches loop_{ctx_.gate};
};

}  // namespace

std::unique_ptr<transfer> make_latency_transfer(device_context& ctx, const point_spec& p,
                                                std::unique_ptr<mem::host_resource> kind) {
  if (!kind) throw skip_point("latency needs a host memory kind");
  if (const std::string gap = device_access_gap(*kind, ctx.attrs); !gap.empty())
    throw skip_point(fmt::format("latency chases through host memory the device can address: {}", gap));
  if (p.bytes < sizeof(std::uint32_t))
    throw skip_point(fmt::format("latency needs at least {} B (one 32-bit index); {} B given", sizeof(std::uint32_t),
                                 p.bytes));
  return std::make_unique<latency_transfer>(ctx, p, std::move(kind));
}

}  // namespace xfer::cuda
