#include "device_context.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <xfer/core/errors.hpp>
#include <xfer/core/interrupt.hpp>
#include <xfer/mem/cuda/block_step.hpp>
#include <xfer/mem/cuda/staged_step.hpp>
#include <xfer/core/staged_route.hpp>
#include <xfer/core/size.hpp>

#include "kernels.hpp"

namespace xfer::cuda {
namespace {

device_attributes attributes_of(api& a, int device) {
  a.make_current(device);
  return a.attributes(device);
}

// Room left for the context, kernels and the allocator's rounding.
constexpr std::uint64_t device_margin = std::uint64_t{256} << 20;

}  // namespace

device_context::device_context(api& api_, int device_) : a(api_), device(device_), attrs(attributes_of(api_, device_)) {
  kernels::preload();
}

void device_context::require_device_memory(std::uint64_t bytes, const std::string& what) {
  std::size_t free = 0, total = 0;
  a.memory_info(free, total);
  if (bytes + device_margin > free)
    throw skip_point(fmt::format("needs {} B of device memory ({}), but device {} has {} B free of {} B ({} kept in reserve)",
                                 bytes, what, device, free, total, format_size(device_margin)));
}

mem::staged_copier& device_context::staged() {
  if (copier_) return *copier_;
  // A step that cannot start or calibrate fails the point with its reason:
  // the device works (the other routes use it), so it is a failure, not a skip.
  auto step = make_staged_step(device, a.name() == "driver" ? allocating_api::driver : allocating_api::runtime);
  copier_ = make_route_copier(*step);
  staged_step_ = std::move(step);
  return *copier_;
}

mem::block_copier& device_context::blocks() {
  if (blocks_) return *blocks_;
  auto step = make_block_step(device);
  blocks_ = std::make_unique<mem::block_copier>(*step);
  block_step_ = std::move(step);
  return *blocks_;
}

event_timer::event_timer(device_context& ctx, const char* part0, const char* part1)
    : ctx_(ctx), lanes_(part0 && part1 ? 2 : 1), names_{part0, part1} {}

void event_timer::start() {
  ctx_.make_current();
  ctx_.a.record(ctx_.start.get(), ctx_.s0.get());
  if (lanes_ == 2) ctx_.a.wait(ctx_.s1.get(), ctx_.start.get());
}

void event_timer::stop() {
  ctx_.a.record(ctx_.stop0.get(), ctx_.s0.get());
  if (lanes_ == 2) ctx_.a.record(ctx_.stop1.get(), ctx_.s1.get());
}

double event_timer::seconds() {
  const event_t stop[2] = {ctx_.stop0.get(), ctx_.stop1.get()};
  for (int j = 0; j < lanes_; ++j) {
    ctx_.a.synchronize_event(stop[j]);
    lane_s_[j] = ctx_.a.elapsed_ms(ctx_.start.get(), stop[j]) / 1e3;
  }
  return lanes_ == 2 ? std::max(lane_s_[0], lane_s_[1]) : lane_s_[0];
}

double event_timer::resolution_s() const { return event_resolution_s; }

void event_timer::add_parts(std::map<std::string, double>& parts) const {
  if (lanes_ != 2) return;
  parts[names_[0]] += lane_s_[0];
  parts[names_[1]] += lane_s_[1];
}

void event_timer::cancel() noexcept {
  for (stream_t s : {ctx_.s0.get(), ctx_.s1.get()}) try {
      ctx_.a.synchronize_stream(s);
    } catch (...) {
    }
}

}  // namespace xfer::cuda
