// device_step's default queue lane: the copy's DMAs on a lane of the step's
// own, ordered after the caller's queue by a mark and holding it by a hold.
// Sound only where the device runtime sees the hold as a dependency (OpenCL:
// a barrier on a user event, which no implementation lets a command of
// another queue wait behind); a step whose hold the device cannot see (CUDA's
// cuStreamWaitValue32) queues the DMAs on the caller's queue itself instead.
#include <algorithm>
#include <memory>
#include <mutex>
#include <fmt/format.h>
#include <utility>
#include <xfer/mem/staged/device_step.hpp>

namespace xfer::mem {

namespace {

class held_queue_lane final : public queue_lane {
 public:
  held_queue_lane(std::unique_ptr<queue_mark> mark, std::unique_ptr<queue_hold> hold,
                  std::unique_ptr<staging_lane> lane)
      : mark_(std::move(mark)), hold_(std::move(hold)), lane_(std::move(lane)) {}
  ~held_queue_lane() override { release(); }

  void to_device(const void* staging, device_ref dst, std::size_t offset, std::size_t bytes) override {
    after_mark();
    lane_->to_device(staging, dst, offset, bytes);
  }
  void to_host(void* staging, device_ref src, std::size_t offset, std::size_t bytes) override {
    after_mark();
    lane_->to_host(staging, src, offset, bytes);
  }
  void record(unsigned slot) override { lane_->record(slot); }
  void wait(unsigned slot) override { lane_->wait(slot); }
  void drain() noexcept override {
    release();
    lane_->drain();
  }
  void release() noexcept override { hold_->release(); }

 private:
  // The first DMA waits for the caller's earlier work (the copier queues
  // DMAs one thread at a time: no lock needed).
  void after_mark() {
    if (!mark_) return;
    lane_->wait_for(*mark_);
    mark_.reset();
  }
  std::unique_ptr<queue_mark> mark_;
  std::unique_ptr<queue_hold> hold_;
  std::unique_ptr<staging_lane> lane_;
};

}  // namespace

std::size_t planned_chunk(std::span<const std::size_t> starts, std::span<void* const> staging,
                          std::size_t dev_offset, const void* staging_at, std::size_t offset, std::size_t bytes) {
  const std::size_t at = offset - dev_offset;
  const auto it = std::lower_bound(starts.begin(), starts.end() - 1, at);
  const auto c = static_cast<std::size_t>(it - starts.begin());
  if (offset < dev_offset || it == starts.end() - 1 || *it != at || starts[c + 1] - at != bytes ||
      staging_at != staging[c % staging.size()])
    throw device_step_error(
        fmt::format("no chunk of {} bytes at device offset {} was queued on the caller's queue", bytes, offset));
  return c;
}

std::unique_ptr<queue_lane> device_step::open_queue_lane(void* queue, const queue_plan& plan) {
  // The mark first: the copy waits for the queue's earlier work, never for
  // its own hold.
  auto mark = this->mark(queue);
  auto hold = this->hold(queue);
  return std::make_unique<held_queue_lane>(std::move(mark), std::move(hold),
                                           open_lane(static_cast<unsigned>(plan.staging.size())));
}

}  // namespace xfer::mem
