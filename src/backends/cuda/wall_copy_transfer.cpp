#include "wall_copy_transfer.hpp"

#include <chrono>
#include <xfer/core/pattern.hpp>

namespace xfer::cuda {

wall_copy_transfer::wall_copy_transfer(device_context& ctx, const point_spec& p,
                                       std::unique_ptr<mem::host_resource> kind)
    : cuda_transfer(ctx, p, std::move(kind)), loop_(no_gate_) {
  ctx_.require_device_memory(p.bytes, "one device buffer");
  require_host_memory(1);
  const auto t0 = std::chrono::steady_clock::now();
  host_ = host_buffer();
  dev_ = device_buf();
  costs_.alloc_s = seconds_since(t0);
  const auto t1 = std::chrono::steady_clock::now();
  if (p.dir == direction::h2d)
    fill_pattern(host_.data(), p.bytes, seed_h2d);
  else
    fill_device(dev_.data(), seed_d2h);
  costs_.touch_s = seconds_since(t1);
}

sample wall_copy_transfer::run(std::size_t reps) {
  ctx_.make_current();  // the runner may sample on another thread than the constructor's
  synced_wall_timer timer(ctx_.a);
  return loop_.run(timer, reps, [&](std::size_t, std::size_t) { copy_once(); });
}

// Core verifies (src/core/verify.cpp) the one place of h2d or d2h.
std::span<const sample_destination> wall_copy_transfer::places() const { return sample_destinations(spec_.dir); }

void* wall_copy_transfer::place_ptr(const sample_destination& d) { return d.on_device ? dev_.data() : host_.data(); }

}  // namespace xfer::cuda
