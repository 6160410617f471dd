// Route batch-any-order: the point's pageable buffer cut into chunks, all of
// them queued in one cudaMemcpyBatchAsync / cuMemcpyBatchAsync (batch_copy.hpp)
// with the any-order source hint, CUDA 12.8's answer to staging pageable
// memory, measured beside staged (libxfer's answer) and copy-sync (the plain
// call) on the same kinds and sizes. The chunk is the staged route's own (the
// device's calibrated chunk with XFER_STAGED_CHUNK_BYTES over it:
// mem::tuning_for's rule), so the two cut a copy alike.
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
    const std::size_t chunk = std::min<std::size_t>(p.bytes, ctx.staged().tuning().chunk_bytes);
    for (std::size_t at = 0; at < p.bytes; at += chunk) {
      dsts_.push_back(dst + at);
      srcs_.push_back(src + at);
      sizes_.push_back(std::min(chunk, p.bytes - at));
    }
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
