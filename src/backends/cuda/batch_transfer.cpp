// Route batch-any-order: the point's pageable buffer cut into chunks, all of
// them queued in one cudaMemcpyBatchAsync / cuMemcpyBatchAsync (batch_copy.hpp)
// with the any-order source hint, CUDA 12.8's answer to staging pageable
// memory, measured beside staged (libxfer's answer) and copy-sync (the plain
// call) on the same kinds and sizes. The chunks are where the staged route's
// copier cuts the same copy (mem::staged_copier::chunk_starts: its tuning,
// the copy's size and direction), so the two cut a copy alike.
#include <algorithm>
#include <fmt/format.h>
#include <vector>
#include <xfer/core/errors.hpp>
#include <xfer/core/staged_route.hpp>

#include "batch_copy.hpp"
#include "wall_copy_transfer.hpp"

namespace xfer::cuda {
namespace {

// Batches queued back to back on one stream (each runs in stream order after
// the one before), timed as copy-sync and staged are.
class batch_transfer final : public wall_copy_transfer {
 public:
  batch_transfer(device_context& ctx, const point_spec& p, std::unique_ptr<mem::host_resource> kind,
                 std::unique_ptr<batch_copy> batch)
      : wall_copy_transfer(ctx, p, std::move(kind)), batch_(std::move(batch)) {
    auto* dst = static_cast<std::byte*>(p.dir == direction::h2d ? dev_.data() : host_.data());
    auto* src = static_cast<const std::byte*>(p.dir == direction::h2d ? host_.data() : dev_.data());
    const auto starts = ctx.staged().chunk_starts(
        p.bytes, p.dir == direction::h2d ? mem::staged_direction::to_device : mem::staged_direction::to_host);
    for (std::size_t i = 0; i + 1 < starts.size(); ++i) {
      dsts_.push_back(dst + starts[i]);
      srcs_.push_back(src + starts[i]);
      sizes_.push_back(starts[i + 1] - starts[i]);
    }
  }

  // The staged copier's settings decided the cut: the point names them.
  std::optional<settings_ref> settings_used() const override { return staged_route_settings(ctx_.staged()); }
  std::string note() const override {
    return fmt::format("{} chunks in one batch, cut as the staged copier cuts this copy", sizes_.size());
  }

  sample run(std::size_t reps) override {
    try {
      return wall_copy_transfer::run(reps);
    } catch (const api_error& e) {
      if (!batch_->unsupported(e.code())) throw;
      ctx_.a.synchronize_stream(ctx_.s0.get());
      throw skip_point(fmt::format("{} is not supported here: {}", batch_->call(), e.what()));
    }
  }

 private:
  void copy_once() override {
    batch_->copy(dsts_.data(), srcs_.data(), sizes_.data(), sizes_.size(), ctx_.s0.get());
  }
  std::unique_ptr<batch_copy> batch_;
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
