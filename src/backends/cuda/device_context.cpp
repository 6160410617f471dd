#include "device_context.hpp"

#include <algorithm>
#include <chrono>
#include <fmt/format.h>
#include <xfer/core/errors.hpp>
#include <xfer/core/size.hpp>

#include "kernels.hpp"

namespace xfer::cuda {
namespace {

using clock = std::chrono::steady_clock;

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

sample run_timed(device_context& ctx, std::size_t reps, std::size_t ops_per_rep, bool gated, lanes l,
                 const std::function<void(std::size_t)>& enqueue) {
  api& a = ctx.a;
  const stream_t s[2] = {ctx.s0.get(), ctx.s1.get()};
  const event_t stop[2] = {ctx.stop0.get(), ctx.stop1.get()};
  const std::size_t per_batch = std::max<std::size_t>(1, max_ops_behind_gate / std::max<std::size_t>(1, ops_per_rep));
  double lane_ms[2] = {0, 0};
  double wall_s = 0;
  ctx.make_current();
  for (std::size_t done = 0; done < reps;) {
    const std::size_t k = std::min(per_batch, reps - done);
    const auto w0 = clock::now();
    try {
      gate_guard guard(ctx.gate, gated);
      a.record(ctx.start.get(), s[0]);
      if (l.count == 2) a.wait(s[1], ctx.start.get());
      for (std::size_t i = 0; i < k; ++i) enqueue(done + i);
      for (int j = 0; j < l.count; ++j) a.record(stop[j], s[j]);
      guard.release();
      for (int j = 0; j < l.count; ++j) a.synchronize_event(stop[j]);
    } catch (...) {
      // The guard has opened the gate; let what was queued drain before the
      // caller frees the buffers it reads.
      for (int j = 0; j < 2; ++j) try {
          a.synchronize_stream(s[j]);
        } catch (...) {
        }
      throw;
    }
    wall_s += std::chrono::duration<double>(clock::now() - w0).count();
    if (gated && ctx.gate.timed_out())
      throw gate_timeout(fmt::format(
          "the gate's spin kernel gave up after {} s: a call in the batch blocked the host while the gate was closed",
          spin_gate::default_timeout_ns / 1e9));
    for (int j = 0; j < l.count; ++j) lane_ms[j] += a.elapsed_ms(ctx.start.get(), stop[j]);
    done += k;
  }
  sample out;
  out.seconds = std::max(lane_ms[0], l.count == 2 ? lane_ms[1] : 0.0) / 1e3;
  out.wall_seconds = wall_s;
  if (l.count == 2) {
    out.parts[l.part0] = lane_ms[0] / 1e3;
    out.parts[l.part1] = lane_ms[1] / 1e3;
  }
  return out;
}

}  // namespace xfer::cuda
