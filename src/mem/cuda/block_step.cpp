// The CUDA block step (xfer/mem/cuda/block_step.hpp), runtime API. Streams,
// events, copies and memory go through the api strategy (api.hpp); the two
// calls it lacks (pointer attributes, the batched copy) are made here.
#include <xfer/mem/cuda/block_step.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <vector>
#include <stdexcept>
#include <string>
#include <fmt/format.h>

#include "api.hpp"
#include "block_kernels.hpp"
#include "resources.hpp"

namespace xfer::cuda {
namespace {

using mem::as_step_error;

void check(cudaError_t e, const char* call, const std::string& context) {
  if (e == cudaSuccess) return;
  (void)cudaGetLastError();  // not sticky: clear it for the next call
  throw api_error(call, int(e), fmt::format("{}: {}", cudaGetErrorName(e), cudaGetErrorString(e)), context);
}

class cuda_block_step;

// One block copy's queue: the caller's stream, or the step's own. It holds
// the step's lock from open to destruction: the index buffers are the
// step's, one copy's at a time.
class cuda_block_queue final : public mem::block_queue {
 public:
  cuda_block_queue(cuda_block_step& s, stream_t stream);
  ~cuda_block_queue() override;
  void copy(void* dst, const void* src, std::size_t bytes) override;
  void copy_batch(void* const* dsts, const void* const* srcs, std::size_t bytes, std::size_t count) override;
  void copy_blocks(void* dst, const void* src, std::size_t block_bytes, const std::int64_t* src_index,
                   const std::int64_t* dst_index, std::size_t count) override;
  std::size_t mark() override;
  void wait(std::size_t mark) override;
  void finish() override;

 private:
  // Whatever was queued since the last finish (or the open), the only
  // work the queue's end must wait for.
  void queued() noexcept { pending_ = true; }

  cuda_block_step& step_;
  std::unique_lock<std::mutex> lock_;
  stream_t stream_;
  std::size_t marks_ = 0;  // the step's mark events this queue has used
  bool pending_ = false;
};

class cuda_block_step final : public mem::block_step {
 public:
  explicit cuda_block_step(int device) : api_(make_runtime_api()), device_(device) {
    const int n = api_->device_count();
    if (device < 0 || device >= n)
      throw std::runtime_error(fmt::format("CUDA device {} does not exist ({} device{})", device, n, n == 1 ? "" : "s"));
    api_->make_current(device_);
    const auto attrs = api_->attributes(device);
    key_ = fmt::format("{} {}", attrs.pci_bus_id, attrs.name);
    driver_ = fmt::format("CUDA driver {}", api_->driver_version());
    multiprocessors_ = attrs.multiprocessors;
    if (CUDART_VERSION < 12080)
      batch_why_ = fmt::format("cudaMemcpyBatchAsync needs CUDA 12.8 or later; this build's CUDA headers are {}",
                               CUDART_VERSION);
    else if (const int driver = api_->driver_version(); driver < 12080)
      batch_why_ = fmt::format("cudaMemcpyBatchAsync needs a CUDA 12.8 driver or later; this driver is {}", driver);
    stream_ = api_->create_stream();
    for (stream_t& side : batch_side_) side = api_->create_stream();
    for (event_t& e : batch_events_) e = api_->create_event();
    done_ = api_->create_event();
  }
  ~cuda_block_step() override {
    release_indices();
    api_->destroy_stream(stream_);
    for (stream_t side : batch_side_) api_->destroy_stream(side);
    for (event_t e : batch_events_) api_->destroy_event(e);
    api_->destroy_event(done_);
    for (event_t e : mark_events_) api_->destroy_event(e);
  }

  // The batch way's copies are cut into this many parts, one on the queue's
  // stream and the others on streams of the step's, so that one part's
  // DMA setup hides behind another's bytes: a batch cut over several
  // streams comes nearer one contiguous copy than one batch on one stream,
  // and eight parts matched or beat four
  // (docs/decisions/0003-block-copier-probe-and-ways.md).
  static constexpr std::size_t batch_parts = 8;
  stream_t batch_side(std::size_t i) const noexcept { return batch_side_[i]; }
  // Event 0 forks the side streams from the queue's stream; event i > 0
  // joins side stream i - 1 back into it.
  event_t batch_event(std::size_t i) const noexcept { return batch_events_[i]; }

  std::string_view name() const noexcept override { return "cuda-runtime"; }
  std::string device_key() const override { return key_; }
  std::string driver() const override { return driver_; }
  mem::host_resource& staging_memory() override { return pinned_; }
  std::string batch_unavailable() const override { return batch_why_; }

  // The range's first byte decides: CUDA pins and maps whole allocations,
  // and an array is one allocation (or a slice of one).
  mem::host_access access(const void* host, std::size_t) override {
    return as_step_error("asking CUDA about host memory", [&] {
      api_->make_current(device_);
      cudaPointerAttributes a{};
      check(cudaPointerGetAttributes(&a, host), "cudaPointerGetAttributes", "host array");
      if (a.type == cudaMemoryTypeHost) return mem::host_access{mem::host_block_kind::pinned, a.devicePointer};
      // Managed memory: device code reaches it, DMA does not see it pinned.
      if (a.type == cudaMemoryTypeManaged) return mem::host_access{mem::host_block_kind::pageable, a.devicePointer};
      return mem::host_access{};
    });
  }

  std::unique_ptr<mem::block_queue> open_queue(void* after_queue) override {
    return as_step_error("opening a CUDA block queue", [&] {
      api_->make_current(device_);
      return std::make_unique<cuda_block_queue>(*this, after_queue ? after_queue : stream_);
    });
  }
  mem::device_ref allocate(std::size_t bytes) override {
    return as_step_error("device allocation", [&] {
      api_->make_current(device_);
      return mem::device_ref{api_->device_alloc(bytes ? bytes : 1), bytes};
    });
  }
  void deallocate(mem::device_ref d) noexcept override {
    if (!d.handle) return;
    try {
      api_->make_current(device_);
    } catch (...) {
      // Freeing on whatever context is current is the best left to do.
    }
    api_->device_free(d.handle);
  }

  api& cuda() noexcept { return *api_; }
  int multiprocessors() const noexcept { return multiprocessors_; }
  std::mutex& queue_mutex() noexcept { return queue_mutex_; }
  // Device memory holding one kernel's index arrays (2 x count), filled on
  // `stream` from pinned memory; valid until the queue's lock is released.
  // Each kernel of a queue gets space of its own after the last one's (the
  // earlier transfers may not have run yet); where the space runs out, the
  // stream is waited for and the space starts again, larger. A queue of
  // several kernels that ran out (the pack way's scatter per group: 16 bytes
  // a pair each) waited mid-copy, the CPU's packing of the next group with
  // it: the space then doubles, so a copy of the same shape fits next time.
  const std::int64_t* device_indices(const std::int64_t* src, const std::int64_t* dst, std::size_t count,
                                     stream_t stream) {
    const std::size_t bytes = 2 * count * sizeof(std::int64_t);
    if (index_used_ + bytes > index_bytes_) {
      api_->synchronize_stream(stream);
      const std::size_t wanted = std::max(bytes, index_used_ > 0 ? 2 * index_bytes_ : 0);
      if (wanted > index_bytes_) {
        release_indices();
        const std::size_t grown = std::max(wanted, std::size_t{1} << 16);
        pinned_indices_ = api_->host_alloc(grown, {});
        device_indices_ = api_->device_alloc(grown);
        index_bytes_ = grown;
      }
      index_used_ = 0;
    }
    auto* h = reinterpret_cast<std::int64_t*>(static_cast<unsigned char*>(pinned_indices_) + index_used_);
    auto* d = reinterpret_cast<std::int64_t*>(static_cast<unsigned char*>(device_indices_) + index_used_);
    index_used_ += bytes;
    // A null array is the identity: the kernel takes null, nothing copied.
    if (src) std::memcpy(h, src, count * sizeof(std::int64_t));
    if (dst) std::memcpy(h + count, dst, count * sizeof(std::int64_t));
    api_->copy_async(d, h, bytes, copy_kind::h2d, stream);
    return d;
  }
  // A new queue's kernels start at the front of the index space (the last
  // queue finished before releasing the lock).
  void reset_indices() noexcept { index_used_ = 0; }
  // The events a queue waits on, made once for the step, not per copy:
  // making and destroying them, and waiting a second time at the queue's
  // end, cost 9 to 23 us a block copy; made once, closing the queue costs
  // under 1 us (docs/blocks.md). Used only under the queue lock.
  event_t done_event() const noexcept { return done_; }
  event_t mark_event(std::size_t i) {
    while (mark_events_.size() <= i) {
      mark_events_.reserve(mark_events_.size() + 1);  // so the push cannot throw and leak the event
      mark_events_.push_back(api_->create_event());
    }
    return mark_events_[i];
  }

 private:
  void release_indices() noexcept {
    if (pinned_indices_) api_->host_free(pinned_indices_);
    if (device_indices_) api_->device_free(device_indices_);
    pinned_indices_ = device_indices_ = nullptr;
    index_bytes_ = index_used_ = 0;
  }
  std::unique_ptr<api> api_;
  int device_;
  std::string key_, batch_why_, driver_;
  int multiprocessors_ = 1;
  stream_t stream_ = nullptr;
  stream_t batch_side_[batch_parts - 1] = {};
  event_t batch_events_[batch_parts] = {};
  event_t done_ = nullptr;
  std::vector<event_t> mark_events_;
  std::mutex queue_mutex_;
  void* pinned_indices_ = nullptr;
  void* device_indices_ = nullptr;
  std::size_t index_bytes_ = 0, index_used_ = 0;
  // Staging pinned the fast way, as the staged step's (huge pages faulted
  // in, then registered).
  fast_pinned_resource pinned_{*api_};
};

cuda_block_queue::cuda_block_queue(cuda_block_step& s, stream_t stream)
    : step_(s), lock_(s.queue_mutex()), stream_(stream) {
  step_.reset_indices();
}

cuda_block_queue::~cuda_block_queue() {
  // Nothing queued may outlive the queue's hold on the index buffers; what
  // the last finish waited for has ended already.
  if (!pending_) return;
  try {
    step_.cuda().record(step_.done_event(), stream_);
    step_.cuda().synchronize_event(step_.done_event());
  } catch (...) {
  }
}

std::size_t cuda_block_queue::mark() {
  return as_step_error("marking a block copy's part", [&] {
    const event_t e = step_.mark_event(marks_);
    step_.cuda().record(e, stream_);
    return marks_++;
  });
}

void cuda_block_queue::wait(std::size_t m) {
  as_step_error("waiting for a block copy's part", [&] {
    if (m >= marks_) throw std::out_of_range(fmt::format("mark {} of a queue that made {}", m, marks_));
    step_.cuda().synchronize_event(step_.mark_event(m));
  });
}

void cuda_block_queue::copy(void* dst, const void* src, std::size_t bytes) {
  as_step_error("cudaMemcpyAsync of a block", [&] {
    queued();
    step_.cuda().copy_async(dst, src, bytes, copy_kind::unified, stream_);
  });
}

void cuda_block_queue::copy_batch(void* const* dsts, const void* const* srcs, std::size_t bytes, std::size_t count) {
  as_step_error("cudaMemcpyBatchAsync", [&] {
#if CUDART_VERSION >= 12080
    // One attribute for every copy: the source any order (pageable sources
    // then need no staging in stream order), the driver's own pick of path.
    std::vector<std::size_t> sizes(count, bytes);
    cudaMemcpyAttributes attr{};
    attr.srcAccessOrder = cudaMemcpySrcAccessOrderAny;
    std::size_t first = 0;
    // Parts of at least one copy each, the first on the queue's stream; the
    // side streams start after what is queued there and the queue's stream
    // waits for them, so to the caller it stays one copy on one stream.
    const std::size_t per = (count + cuda_block_step::batch_parts - 1) / cuda_block_step::batch_parts;
    const std::size_t parts = (count + per - 1) / per;
    api& cuda = step_.cuda();
    queued();
    if (parts > 1) cuda.record(step_.batch_event(0), stream_);
    std::size_t forked = 0;  // side streams that wait for the fork
    try {
      for (std::size_t k = 0; k < parts; ++k) {
        const std::size_t b = k * per, n = std::min(per, count - b);
        const stream_t s = k == 0 ? stream_ : step_.batch_side(k - 1);
        if (k > 0) {
          cuda.wait(s, step_.batch_event(0));
          ++forked;
        }
#if CUDART_VERSION >= 13000
        check(cudaMemcpyBatchAsync(dsts + b, srcs + b, sizes.data() + b, n, &attr, &first, 1, static_cast<cudaStream_t>(s)),
              "cudaMemcpyBatchAsync", fmt::format("{} copies of {} bytes", n, bytes));
#else
        std::size_t failed = 0;
        check(cudaMemcpyBatchAsync(const_cast<void**>(dsts + b), const_cast<void**>(srcs + b), sizes.data() + b, n,
                                   &attr, &first, 1, &failed, static_cast<cudaStream_t>(s)),
              "cudaMemcpyBatchAsync", fmt::format("{} copies of {} bytes", n, bytes));
#endif
      }
    } catch (...) {
      // The queue's end waits only for its own stream: an earlier part's
      // DMA on a side stream must end before the caller may free its
      // arrays, so the error path waits for every forked side stream.
      for (std::size_t k = 0; k < forked; ++k) {
        try {
          cuda.synchronize_stream(step_.batch_side(k));
        } catch (...) {
          // The first error is the one to report.
        }
      }
      throw;
    }
    for (std::size_t k = 1; k < parts; ++k) {
      cuda.record(step_.batch_event(k), step_.batch_side(k - 1));
      cuda.wait(stream_, step_.batch_event(k));
    }
#else
    (void)dsts, (void)srcs, (void)bytes, (void)count;
    throw std::runtime_error(step_.batch_unavailable());
#endif
  });
}

void cuda_block_queue::copy_blocks(void* dst, const void* src, std::size_t block_bytes, const std::int64_t* src_index,
                                   const std::int64_t* dst_index, std::size_t count) {
  as_step_error("the block gather/scatter kernel", [&] {
    queued();
    const std::int64_t* d = step_.device_indices(src_index, dst_index, count, stream_);
    block_kernels::copy_blocks(stream_, dst, src, block_bytes, src_index ? d : nullptr, dst_index ? d + count : nullptr,
                               count, step_.multiprocessors());
  });
}

void cuda_block_queue::finish() {
  as_step_error("waiting for the block copy", [&] {
    step_.cuda().record(step_.done_event(), stream_);
    step_.cuda().synchronize_event(step_.done_event());
    pending_ = false;
  });
}

}  // namespace

std::unique_ptr<mem::block_step> make_block_step(int device) { return std::make_unique<cuda_block_step>(device); }

}  // namespace xfer::cuda
