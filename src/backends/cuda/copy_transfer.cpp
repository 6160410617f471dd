// Routes copy-sync and copy-async: the copy engine driven through the API.
#include <chrono>
#include <fmt/format.h>
#include <xfer/core/errors.hpp>
#include <xfer/core/pattern.hpp>
#include <xfer/core/timing.hpp>

#include "cuda_transfer.hpp"

namespace xfer::cuda {
namespace {

using clock = std::chrono::steady_clock;

class copy_transfer final : public cuda_transfer {
 public:
  copy_transfer(device_context& ctx, const point_spec& p, std::unique_ptr<mem::host_resource> kind, bool async)
      : cuda_transfer(ctx, p, std::move(kind)), async_(async) {
    const direction d = p.dir;
    const bool two = d == direction::bidir || d == direction::d2d;
    const std::uint64_t host_buffers = d == direction::d2d ? 0 : (d == direction::bidir ? 2 : 1);
    std::uint64_t device_bytes = (two ? 2 : 1) * p.bytes;
    if (kind_ && !kind_->props().pinned && kind_->props().device_accessible)
      device_bytes += host_buffers * p.bytes;  // managed host buffers live in device memory too
    ctx_.require_device_memory(device_bytes, two ? "two device buffers" : "one device buffer");
    if (host_buffers) require_host_memory(host_buffers);

    // Behind a closed gate only copies that never block the host: page-locked
    // host memory and device memory. A copy from pageable memory is staged by
    // the host thread (synchronously), so it would wait for the gate that
    // waits for it; managed memory kept on the host behaves the same (seen on
    // a GPU machine: cudaMemcpyAsync from it blocked until the gate's timeout).
    // Those kinds run ungated, and their event time then includes the gaps the
    // staging leaves on the device.
    // The gate may still fail to hold for a kind that looked safe: the loop
    // then falls back (core/timing.hpp), and later points of the kind start
    // ungated with the same record instead of waiting out the gate again.
    const bool gated = async_ && (d == direction::d2d || (kind_ && kind_->props().pinned));
    const std::size_t ops_per_rep = d == direction::rw ? 2 : 1;
    loop_ = std::make_unique<timed_batches>(gated ? static_cast<gate&>(ctx_.gate) : no_gate_, ops_per_rep);
    if (gated && kind_)
      if (auto it = ctx_.ungated_kinds.find(std::string(kind_->kind())); it != ctx_.ungated_kinds.end())
        loop_->fall_back(it->second);

    const auto t0 = clock::now();
    if (host_buffers >= 1) host_a_ = host_buffer();
    if (host_buffers == 2) host_b_ = host_buffer();
    dev_a_ = device_buf();
    if (two) dev_b_ = device_buf();
    costs_.alloc_s = seconds_since(t0);

    const auto t1 = clock::now();
    switch (d) {
      case direction::h2d:
      case direction::rw: fill_pattern(host_a_.data(), p.bytes, seed_h2d); break;
      case direction::d2h: fill_device(dev_a_.data(), seed_d2h); break;
      case direction::bidir:
        fill_pattern(host_a_.data(), p.bytes, seed_h2d);
        fill_device(dev_b_.data(), seed_d2h);
        break;
      case direction::d2d: fill_device(dev_a_.data(), seed_d2h); break;
    }
    costs_.touch_s = seconds_since(t1);
  }

  sample run(std::size_t reps) override { return async_ ? run_async(reps) : run_sync(reps); }

  // Core verifies (src/core/verify.cpp) the places of the direction.
  std::span<const sample_destination> places() const override { return sample_destinations(spec_.dir); }
  // rw: the write (0), then the read-back (1), each through the route's own call.
  void run_step(std::size_t k) override {
    if (k == 0)
      copy_once(dev_a_.data(), host_a_.data(), up());
    else
      copy_once(host_a_.data(), dev_a_.data(), down());
  }

  clock_kind timer_kind() const override { return async_ ? clock_kind::event : clock_kind::wall; }
  double timer_resolution_s() const override { return async_ ? event_resolution_s : wall_timer().resolution_s(); }
  std::uint64_t bytes_per_rep() const override {
    return spec_.dir == direction::bidir || spec_.dir == direction::rw ? 2 * spec_.bytes : spec_.bytes;
  }

 private:
  // Blocking calls, one after another, timed by the wall clock up to the
  // device going idle (synced_wall_timer).
  sample run_sync(std::size_t reps) {
    api& a = ctx_.a;
    const std::size_t n = spec_.bytes;
    ctx_.make_current();
    synced_wall_timer timer(a);
    return loop_->run(timer, reps, [&](std::size_t, std::size_t) {
      switch (spec_.dir) {
        case direction::h2d: a.copy(dev_a_.data(), host_a_.data(), n, up()); break;
        case direction::d2h: a.copy(host_a_.data(), dev_a_.data(), n, down()); break;
        case direction::rw:
          a.copy(dev_a_.data(), host_a_.data(), n, up());
          a.copy(host_a_.data(), dev_a_.data(), n, down());
          break;
        case direction::d2d: a.copy(dev_b_.data(), dev_a_.data(), n, copy_kind::d2d); break;
        case direction::bidir: throw skip_point("copy-sync has no bidir: blocking calls cannot overlap");
      }
    });
  }

  sample run_async(std::size_t reps) {
    api& a = ctx_.a;
    const std::size_t n = spec_.bytes;
    const stream_t s0 = ctx_.s0.get(), s1 = ctx_.s1.get();
    const bool bidir = spec_.dir == direction::bidir;
    ctx_.make_current();
    event_timer timer(ctx_, bidir ? "h2d" : nullptr, bidir ? "d2h" : nullptr);
    sample s = loop_->run(timer, reps, [&](std::size_t, std::size_t) {
      switch (spec_.dir) {
        case direction::h2d: a.copy_async(dev_a_.data(), host_a_.data(), n, up(), s0); break;
        case direction::d2h: a.copy_async(host_a_.data(), dev_a_.data(), n, down(), s0); break;
        case direction::rw:
          a.copy_async(dev_a_.data(), host_a_.data(), n, up(), s0);
          a.copy_async(host_a_.data(), dev_a_.data(), n, down(), s0);
          break;
        case direction::bidir:
          a.copy_async(dev_a_.data(), host_a_.data(), n, up(), s0);
          a.copy_async(host_b_.data(), dev_b_.data(), n, down(), s1);
          break;
        case direction::d2d: a.copy_async(dev_b_.data(), dev_a_.data(), n, copy_kind::d2d, s0); break;
      }
    });
    // The copies of this kind blocked the host behind the gate: later points start ungated.
    if (!s.gate_fallback.empty() && kind_)
      ctx_.ungated_kinds.emplace(std::string(kind_->kind()),
                                 fmt::format("an earlier point's gate could not hold for host memory '{}', so this "
                                             "point ran ungated from the start; that point's record: {}",
                                             kind_->kind(), s.gate_fallback));
    return s;
  }

  void* place_ptr(const sample_destination& d) override {
    if (d.on_device) return d.buffer ? dev_b_.data() : dev_a_.data();
    return d.buffer ? host_b_.data() : host_a_.data();
  }

  // One copy through the route's own call, waited for.
  void copy_once(void* dst, const void* src, copy_kind k) {
    if (async_) {
      ctx_.a.copy_async(dst, src, spec_.bytes, k, ctx_.s0.get());
      ctx_.a.synchronize_stream(ctx_.s0.get());
    } else {
      ctx_.a.copy(dst, src, spec_.bytes, k);
      ctx_.a.synchronize();
    }
  }

  bool async_;
  no_gate no_gate_;  // copy-sync, and the kinds whose copies block the host
  std::unique_ptr<timed_batches> loop_;
  mem::buffer host_a_, host_b_;
  device_buffer dev_a_, dev_b_;
};

}  // namespace

std::unique_ptr<transfer> make_copy_transfer(device_context& ctx, const point_spec& p,
                                             std::unique_ptr<mem::host_resource> kind, bool async) {
  if (!async && p.dir == direction::bidir) throw skip_point("copy-sync has no bidir: blocking calls cannot overlap");
  if (p.dir != direction::d2d && !kind) throw skip_point("this route needs a host memory kind");
  return std::make_unique<copy_transfer>(ctx, p, std::move(kind), async);
}

}  // namespace xfer::cuda
