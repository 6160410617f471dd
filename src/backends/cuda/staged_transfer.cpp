// Route staged: libxfer's staged copier (xfer/mem/staged/staged_copier.hpp)
// moving the point's host memory through a ring of pinned staging buffers,
// CPU threads and the copy engine overlapped. Measured beside copy-sync and
// copy-async on the pageable kinds, which are what it is for: below the
// copier's handoff size it hands the copy to the plain API, so at small sizes
// it should equal copy-sync (issue 15: never slower).
#include <fmt/format.h>
#include <xfer/core/errors.hpp>
#include <xfer/core/pattern.hpp>
#include <xfer/core/staged_route.hpp>
#include <xfer/core/timing.hpp>
#include <xfer/mem/staged/staged_copier.hpp>

#include "cuda_transfer.hpp"

namespace xfer::cuda {
namespace {

class staged_transfer final : public cuda_transfer {
 public:
  staged_transfer(device_context& ctx, const point_spec& p, std::unique_ptr<mem::host_resource> kind)
      : cuda_transfer(ctx, p, std::move(kind)), loop_(no_gate_) {
    ctx_.require_device_memory(p.bytes, "one device buffer");
    require_host_memory(1);
    copier_ = &ctx_.staged();  // first use: the copier starts (and calibrates once per machine and device)
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

  // Blocking copies one after another, timed by the wall clock up to the
  // device going idle, as copy-sync is.
  sample run(std::size_t reps) override {
    const std::size_t n = spec_.bytes;
    const mem::device_ref dev{dev_.data(), n};
    synced_wall_timer timer(ctx_.a);
    return loop_.run(timer, reps, [&](std::size_t, std::size_t) {
      if (spec_.dir == direction::h2d)
        copier_->copy_to_device(dev, 0, host_.data(), n);
      else
        copier_->copy_to_host(host_.data(), dev, 0, n);
    });
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
      check_device(dev_.data(), seed_h2d, "staged h2d destination");
    else
      check_host(host_.data(), seed_d2h, "staged d2h destination");
  }

  clock_kind timer_kind() const override { return clock_kind::wall; }
  double timer_resolution_s() const override { return wall_timer().resolution_s(); }
  std::uint64_t bytes_per_rep() const override { return spec_.bytes; }

 private:
  no_gate no_gate_;
  timed_batches loop_;
  mem::staged_copier* copier_ = nullptr;
  mem::buffer host_;
  device_buffer dev_;
};

}  // namespace

std::unique_ptr<transfer> make_staged_transfer(device_context& ctx, const point_spec& p,
                                               std::unique_ptr<mem::host_resource> kind) {
  if (!kind) throw skip_point("this route needs a host memory kind");
  require_pageable_for_staged(*kind);
  return std::make_unique<staged_transfer>(ctx, p, std::move(kind));
}

}  // namespace xfer::cuda
