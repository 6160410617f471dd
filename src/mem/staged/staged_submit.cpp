// The staged copier's submission: a copy's arguments checked, then the
// plain API below the handoff, a job for the leader of the copier's lane, or
// a copy queued on the caller's queue (copy_*_on) for the queue line.
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <fmt/format.h>
#include <xfer/mem/staged/staged_copier.hpp>

#include "staged_job.hpp"

namespace xfer::mem {

using detail::staged_job;

// ---- submission ---------------------------------------------------------------

namespace {

bool overlaps(const void* a, const void* b, std::size_t bytes) {
  const auto x = reinterpret_cast<std::uintptr_t>(a), y = reinterpret_cast<std::uintptr_t>(b);
  return x < y + bytes && y < x + bytes;
}

// Checks a copy's arguments; throws staged_error (bad_argument) naming what is wrong.
void check(device_step& step, staged_direction dir, device_ref dev, std::size_t offset, const void* host,
           std::size_t bytes) {
  auto refuse = [&](std::string cause) {
    throw staged_error(staged_error::reason::bad_argument, dir, bytes, 0, std::move(cause));
  };
  // Issue 15 lists a size of 0 among the bad inputs: a copy of nothing is
  // almost always a size computed wrongly, and saying so beats succeeding.
  if (bytes == 0) refuse("a size of 0 bytes");
  if (!host) refuse("the host pointer is null");
  if (!dev.handle) refuse("the device buffer is null");
  if (offset > dev.bytes || bytes > dev.bytes - offset)
    refuse(fmt::format("offset {} + {} bytes is beyond the device buffer's {} bytes", offset, bytes, dev.bytes));
  if (const void* view = step.host_view(dev)) {
    const void* dev_at = static_cast<const unsigned char*>(view) + offset;
    if (overlaps(dev_at, host, bytes)) refuse("the source and the destination overlap");
  }
}

}  // namespace

staged_completion staged_copier::submit(detail::staged_line& line, std::shared_ptr<staged_job> job) {
  {
    std::lock_guard lock(line.mutex);
    if (line.closing)
      throw staged_error(staged_error::reason::closed, job->dir, job->bytes, 0, "the copier is being destroyed");
    line.queue.push_back(job);
    line.length.fetch_add(1);
  }
  line.queued.wake();
  return staged_completion(std::move(job));
}

staged_completion staged_copier::copy_to_device_async(device_ref dst, std::size_t dst_offset, const void* src,
                                                      std::size_t bytes) {
  return copy_to_device_async(dst, dst_offset, src, bytes, nullptr);
}

staged_completion staged_copier::copy_to_host_async(void* dst, device_ref src, std::size_t src_offset,
                                                    std::size_t bytes) {
  return copy_to_host_async(dst, src, src_offset, bytes, nullptr);
}

namespace {

// Runs the step's call on the caller's queue; a queue the step cannot use
// is the caller's mistake (bad_argument), any other failure the device's.
template <class F>
auto on_queue(staged_direction dir, std::size_t bytes, const char* doing, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const foreign_queue_error& e) {
    throw staged_error(staged_error::reason::bad_argument, dir, bytes, 0, fmt::format("{}: {}", doing, e.what()));
  } catch (const std::exception& e) {
    throw staged_error(staged_error::reason::device, dir, bytes, 0, fmt::format("{}: {}", doing, e.what()));
  }
}

// The caller's queue marked on the calling thread (null: none).
std::unique_ptr<queue_mark> mark_of(device_step& step, staged_direction dir, std::size_t bytes, void* queue) {
  if (!queue) return nullptr;
  return on_queue(dir, bytes, "ordering after the queue", [&] { return step.mark(queue); });
}

}  // namespace

// Both directions: the arguments checked, then a copy on the caller's
// queue, or the caller's queue marked and the plain API below the handoff
// or a job for the leader.
staged_completion staged_copier::start(staged_direction dir, device_ref dev, std::size_t dev_offset, void* host,
                                       std::size_t bytes, void* after_queue, bool on_queue_form) {
  const bool to_device = dir == staged_direction::to_device;
  check(step_, dir, dev, dev_offset, host, bytes);
  if (on_queue_form && !after_queue)
    throw staged_error(staged_error::reason::bad_argument, dir, bytes, 0,
                       "the caller's queue is null (CUDA's legacy default stream is CU_STREAM_LEGACY, 0x1)");
  auto make_job = [&] {
    auto job = std::make_shared<staged_job>();
    job->trace.note(detail::staged_trace::submitted);
    job->dir = dir;
    job->dev = dev;
    job->dev_offset = dev_offset;
    if (to_device)
      job->src = host;
    else
      job->dst = host;
    job->bytes = bytes;
    return job;
  };
  if (on_queue_form) return start_on_queue(make_job(), after_queue);
  auto after = mark_of(step_, dir, bytes, after_queue);
  if (bytes < tuning_.handoff(to_device)) {
    try {
      if (after) after->wait();
      if (to_device)
        step_.plain_to_device(dev, dev_offset, host, bytes);
      else
        step_.plain_to_host(host, dev, dev_offset, bytes);
    } catch (const std::exception& e) {
      throw staged_error(staged_error::reason::device, dir, bytes, 0, fmt::format("plain copy: {}", e.what()));
    }
    return {};
  }
  auto job = make_job();
  job->after = std::move(after);
  return submit(*line_, std::move(job));
}

// copy_*_on: cut the copy, take its staging ring and queue every chunk's DMA
// on the caller's queue now (the step's queue_lane), then hand the job to
// the queue line's leader, which opens the gates. Under queue_mutex_, so
// the order of the copies on a queue is their order on the line: a copy's
// gates never wait for a copy queued after it.
staged_completion staged_copier::start_on_queue(std::shared_ptr<staged_job> job, void* queue) {
  std::lock_guard lock(queue_mutex_);
  if (!queue_line_) {
    queue_line_ = std::make_unique<detail::staged_line>();
    // A team of its own whatever the budget (staged_copier.hpp, queue_line_).
    open_line(*queue_line_, true);
  }
  // The whole last-level cache: the budget's share is for copies that
  // enter it while they stage, and this ring is held from the call on.
  cut(*job, last_level_cache_bytes());
  if (!take_staging(*job, queue_pool_)) {
    const auto& f = *job->error;
    throw staged_error(f.why, job->dir, job->bytes, 0, f.cause);
  }
  try {
    const queue_plan plan{job->dir, job->dev, job->dev_offset, job->starts, job->staging};
    job->queue = on_queue(job->dir, job->bytes, "queueing on the caller's queue",
                          [&] { return step_.open_queue_lane(queue, plan); });
    return submit(*queue_line_, job);
  } catch (...) {
    // Nothing was queued, or the queue runs what was to its end before the
    // ring goes back.
    if (job->queue) job->queue->drain();
    job->queue.reset();
    give_staging(*job, queue_pool_);
    throw;
  }
}

staged_completion staged_copier::copy_to_device_async(device_ref dst, std::size_t dst_offset, const void* src,
                                                      std::size_t bytes, void* after_queue) {
  // The source is only read: the job keeps it as const (staged_job::src).
  return start(staged_direction::to_device, dst, dst_offset, const_cast<void*>(src), bytes, after_queue);
}

staged_completion staged_copier::copy_to_host_async(void* dst, device_ref src, std::size_t src_offset,
                                                    std::size_t bytes, void* after_queue) {
  return start(staged_direction::to_host, src, src_offset, dst, bytes, after_queue);
}

staged_completion staged_copier::copy_to_device_on(device_ref dst, std::size_t dst_offset, const void* src,
                                                   std::size_t bytes, void* queue) {
  return start(staged_direction::to_device, dst, dst_offset, const_cast<void*>(src), bytes, queue, true);
}

staged_completion staged_copier::copy_to_host_on(void* dst, device_ref src, std::size_t src_offset, std::size_t bytes,
                                                 void* queue) {
  return start(staged_direction::to_host, src, src_offset, dst, bytes, queue, true);
}

void staged_copier::copy_to_device(device_ref dst, std::size_t dst_offset, const void* src, std::size_t bytes) {
  copy_to_device_async(dst, dst_offset, src, bytes).wait();
}

void staged_copier::copy_to_host(void* dst, device_ref src, std::size_t src_offset, std::size_t bytes) {
  copy_to_host_async(dst, src, src_offset, bytes).wait();
}

}  // namespace xfer::mem
