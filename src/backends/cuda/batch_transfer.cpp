// Route batch-any-order: the point's pageable buffer cut into chunks, all of
// them queued in one cudaMemcpyBatchAsync / cuMemcpyBatchAsync (batch_copy.hpp)
// with the any-order source hint, CUDA 12.8's answer to staging pageable
// memory, measured beside staged (libxfer's answer) and copy-sync (the plain
// call) on the same kinds and sizes. The chunk is the staged copier's default
// (8 MiB, the feasibility probe's; XFER_STAGED_CHUNK_BYTES overrides both),
// so the two cut a copy alike.
#include <algorithm>
#include <chrono>
#include <fmt/format.h>
#include <xfer/core/errors.hpp>
#include <xfer/core/pattern.hpp>
#include <xfer/core/staged_route.hpp>
#include <xfer/core/timing.hpp>
#include <xfer/mem/staged/tuning.hpp>

#include "batch_copy.hpp"
#include "cuda_transfer.hpp"

namespace xfer::cuda {
namespace {

class batch_transfer final : public cuda_transfer {
 public:
  batch_transfer(device_context& ctx, const point_spec& p, std::unique_ptr<mem::host_resource> kind,
                 std::unique_ptr<batch_copy> batch)
      : cuda_transfer(ctx, p, std::move(kind)), batch_(std::move(batch)), loop_(no_gate_) {
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

    auto* dst = static_cast<std::byte*>(p.dir == direction::h2d ? dev_.data() : host_.data());
    auto* src = static_cast<const std::byte*>(p.dir == direction::h2d ? host_.data() : dev_.data());
    const std::size_t chunk = std::min<std::size_t>(p.bytes, mem::tuning_from_environment().chunk_bytes);
    for (std::size_t at = 0; at < p.bytes; at += chunk) {
      dsts_.push_back(dst + at);
      srcs_.push_back(src + at);
      sizes_.push_back(std::min(chunk, p.bytes - at));
    }
  }

  // Batches queued back to back on one stream (each runs in stream order
  // after the one before), timed by the wall clock up to the device going
  // idle, as copy-sync and staged are: what a program waiting for its data sees.
  sample run(std::size_t reps) override {
    ctx_.make_current();  // the runner may sample on another thread than prepare's
    synced_wall_timer timer(ctx_.a);
    try {
      return loop_.run(timer, reps, [&](std::size_t, std::size_t) {
        batch_->copy(dsts_.data(), srcs_.data(), sizes_.data(), sizes_.size(), ctx_.s0.get());
      });
    } catch (const api_error& e) {
      if (!batch_->unsupported(e.code())) throw;
      ctx_.a.synchronize_stream(ctx_.s0.get());
      throw skip_point(fmt::format("{} is not supported here: {}", batch_->call(), e.what()));
    }
  }

  void verify() override {
    poison_sample();
    run(1);
    check_sample();
  }
  void poison_sample() override {
    if (spec_.dir == direction::h2d)
      poison_device(dev_.data());
    else
      poison(host_.data(), spec_.bytes);
  }
  void check_sample() override {
    if (spec_.dir == direction::h2d)
      check_device(dev_.data(), seed_h2d, "batch-any-order h2d destination");
    else
      check_host(host_.data(), seed_d2h, "batch-any-order d2h destination");
  }

  clock_kind timer_kind() const override { return clock_kind::wall; }
  double timer_resolution_s() const override { return wall_timer().resolution_s(); }
  std::uint64_t bytes_per_rep() const override { return spec_.bytes; }

 private:
  std::unique_ptr<batch_copy> batch_;
  no_gate no_gate_;
  timed_batches loop_;
  mem::buffer host_;
  device_buffer dev_;
  std::vector<void*> dsts_;
  std::vector<const void*> srcs_;
  std::vector<std::size_t> sizes_;
};

}  // namespace

std::unique_ptr<batch_copy> require_batch_copy(api& a, const mem::host_resource* kind) {
  if (!kind) throw skip_point("this route needs a host memory kind");
  // The any-order hint is for memory allocated outside CUDA (the header's
  // words: "host pointers allocated outside CUDA (ex., via malloc)"); pinned
  // and managed kinds have copy-async.
  require_pageable_for_staged(*kind);
  std::string why;
  auto batch = make_batch_copy(a, why);
  if (!batch) throw skip_point(why);
  return batch;
}

std::unique_ptr<transfer> make_batch_transfer(device_context& ctx, const point_spec& p,
                                              std::unique_ptr<mem::host_resource> kind,
                                              std::unique_ptr<batch_copy> batch) {
  return std::make_unique<batch_transfer>(ctx, p, std::move(kind), std::move(batch));
}

}  // namespace xfer::cuda
