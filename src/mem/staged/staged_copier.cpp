#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <exception>
#include <optional>
#include <string>
#include <vector>
#include <fmt/format.h>
#include <xfer/mem/staged/staged_copier.hpp>

namespace xfer::mem {

namespace detail {

// One copy, from submission to completion. The chunk counter is the only
// thing the threads share while they work (each claims the next chunk with
// one atomic add): no lock and no wake-up per chunk.
struct staged_job {
  staged_direction dir{};
  device_ref dev;
  std::size_t dev_offset = 0;
  const void* src = nullptr;  // to_device
  void* dst = nullptr;        // to_host
  std::size_t bytes = 0;
  std::size_t chunk = 0, chunks = 0;
  unsigned threads = 0, slots_per_thread = 0;
  std::vector<void*> staging;  // thread t owns [t * slots_per_thread, (t + 1) * slots_per_thread)

  std::atomic<std::size_t> next{0};
  std::atomic<bool> abort{false};

  // A failure is kept as data, and each wait() throws an exception of its
  // own made from it: an exception object shared between threads (one
  // exception_ptr rethrown in several) would be read by one thread while the
  // last owner frees it in another.
  struct failure {
    staged_error::reason why;
    std::size_t at;
    std::string cause;
  };

  std::mutex mutex;  // guards what follows
  std::condition_variable finished_cv;
  bool finished = false;
  std::optional<failure> error;

  // The first failure wins; the others it caused (an aborted neighbour)
  // would only repeat it.
  void fail(staged_error::reason why, std::size_t at, std::string cause) {
    {
      std::lock_guard lock(mutex);
      if (!error) error = failure{why, at, std::move(cause)};
    }
    abort.store(true, std::memory_order_relaxed);
  }
  void fail_device(std::size_t at, std::exception_ptr e) {
    std::string cause;
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& x) {
      cause = x.what();
    } catch (...) {
      cause = "unknown exception";
    }
    fail(staged_error::reason::device, at, std::move(cause));
  }
  void complete() {
    {
      std::lock_guard lock(mutex);
      finished = true;
    }
    finished_cv.notify_all();
  }
};

}  // namespace detail

using detail::staged_job;

// ---- completion -------------------------------------------------------------

void staged_completion::wait() const {
  if (!job_) return;
  std::optional<detail::staged_job::failure> f;
  {
    std::unique_lock lock(job_->mutex);
    job_->finished_cv.wait(lock, [&] { return job_->finished; });
    f = job_->error;  // a copy: the exception below is this thread's alone
  }
  if (f) throw staged_error(f->why, job_->dir, job_->bytes, f->at, std::move(f->cause));
}

bool staged_completion::ready() const {
  if (!job_) return true;
  std::lock_guard lock(job_->mutex);
  return job_->finished;
}

std::size_t staged_completion::bytes() const noexcept { return job_ ? job_->bytes : 0; }

// ---- copier -----------------------------------------------------------------

namespace {

staged_tuning pick_tuning(device_step& step, const staged_copier_options& o) {
  staged_tuning t = o.tuning ? *o.tuning : tuning_for(step);
  t.validate();
  return t;
}

std::size_t default_cache(const staged_tuning& t, const staged_copier_options& o) {
  if (o.max_cached_staging_bytes) return *o.max_cached_staging_bytes;
  // One ring, its blocks rounded up to their pool class.
  return caching_pool::class_size(t.chunk_bytes) * t.ring_depth;
}

std::size_t staging_alignment(host_resource& r) {
  // A page: what DMA engines and registration work in; less only where the
  // resource cannot give that much.
  return std::min<std::size_t>(4096, r.max_alignment());
}

}  // namespace

staged_copier::staged_copier(device_step& step, staged_copier_options options)
    : step_(step), tuning_(pick_tuning(step, options)), pool_(step.staging_memory(), default_cache(tuning_, options)) {
  const unsigned threads = tuning_.effective_threads();
  try {
    for (unsigned i = 0; i < threads; ++i) lanes_.push_back(step_.open_lane(tuning_.slots_per_thread()));
  } catch (const std::exception& e) {
    throw staged_error(staged_error::reason::device, staged_direction::to_device, 0, 0,
                       fmt::format("opening a {} lane: {}", step_.name(), e.what()));
  }
  team_ = std::make_unique<thread_team>(threads, options.thread_start);
  leader_ = std::thread([this, start = options.thread_start] {
    if (start) start();
    leader_loop();
  });
}

staged_copier::~staged_copier() {
  {
    std::lock_guard lock(mutex_);
    closing_ = true;
  }
  queued_.notify_all();
  leader_.join();  // the leader finishes the queue first
  team_.reset();
  lanes_.clear();
}

void staged_copier::leader_loop() {
  for (;;) {
    std::shared_ptr<staged_job> job;
    {
      std::unique_lock lock(mutex_);
      queued_.wait(lock, [&] { return closing_ || !queue_.empty(); });
      if (queue_.empty()) return;  // closing, and nothing left to do
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    run_job(*job);
    job->complete();
  }
}

void staged_copier::run_job(staged_job& job) {
  host_resource& up = step_.staging_memory();
  const std::size_t align = staging_alignment(up);
  job.chunk = tuning_.chunk_bytes;
  job.chunks = (job.bytes + job.chunk - 1) / job.chunk;
  job.threads = static_cast<unsigned>(std::min<std::size_t>(tuning_.effective_threads(), job.chunks));
  job.slots_per_thread = tuning_.slots_per_thread();
  const std::size_t slots = std::size_t{job.threads} * job.slots_per_thread;
  // Every slot is a whole chunk whatever the copy's size, so every copy
  // asks the pool for the same class and reuses the same cached blocks.
  auto release = [&] {
    for (void* p : job.staging) pool_.deallocate(p, job.chunk, align);
    job.staging.clear();
  };
  try {
    job.staging.reserve(slots);
    for (std::size_t i = 0; i < slots; ++i) job.staging.push_back(pool_.allocate(job.chunk, align));
  } catch (const std::exception& e) {
    release();
    job.fail(staged_error::reason::staging, 0,
             fmt::format("no pinned staging memory ({} buffers of {} bytes from {}): {}", slots, job.chunk, up.kind(),
                         e.what()));
    return;
  }
  team_->run([&](unsigned t) {
    if (t < job.threads) work(job, t);
  });
  release();
}

void staged_copier::work(staged_job& job, unsigned t) {
  if (job.dir == staged_direction::to_device)
    work_to_device(job, t);
  else
    work_to_host(job, t);
}

// Each thread owns its lane and its slots: it fills a slot, queues the
// slot's DMA, and moves to its next slot, waiting only when that slot's
// previous DMA has not finished yet.
void staged_copier::work_to_device(staged_job& job, unsigned t) {
  staging_lane& lane = *lanes_[t];
  void** slot = &job.staging[std::size_t{t} * job.slots_per_thread];
  const unsigned n = job.slots_per_thread;
  std::vector<std::size_t> at(n, SIZE_MAX);  // the copy offset each slot holds (SIZE_MAX: idle)
  const auto* src = static_cast<const unsigned char*>(job.src);
  std::size_t offset = 0;  // where a failure is reported
  try {
    for (unsigned k = 0;; ++k) {
      if (job.abort.load(std::memory_order_relaxed)) break;
      const std::size_t c = job.next.fetch_add(1, std::memory_order_relaxed);
      if (c >= job.chunks) break;
      const unsigned s = k % n;
      if (at[s] != SIZE_MAX) {
        offset = at[s];
        lane.wait(s);
        at[s] = SIZE_MAX;
      }
      offset = c * job.chunk;
      const std::size_t len = std::min(job.chunk, job.bytes - offset);
      std::memcpy(slot[s], src + offset, len);
      lane.to_device(slot[s], job.dev, job.dev_offset + offset, len);
      lane.record(s);
      at[s] = offset;
    }
    for (unsigned s = 0; s < n; ++s)
      if (at[s] != SIZE_MAX) {
        offset = at[s];
        lane.wait(s);
        at[s] = SIZE_MAX;
      }
  } catch (...) {
    job.fail_device(offset, std::current_exception());
    lane.drain();  // no DMA may still read a slot that goes back to the pool
  }
}

// Each thread keeps all its slots in flight: it queues DMAs into its free
// slots, then waits for the oldest, copies it out, and queues the next chunk
// into it, so the device fills slots while the thread empties others.
void staged_copier::work_to_host(staged_job& job, unsigned t) {
  staging_lane& lane = *lanes_[t];
  void** slot = &job.staging[std::size_t{t} * job.slots_per_thread];
  const unsigned n = job.slots_per_thread;
  std::vector<std::size_t> at(n);
  auto* dst = static_cast<unsigned char*>(job.dst);
  std::size_t issued = 0, retired = 0, offset = 0;
  bool claimed_all = false;
  try {
    for (;;) {
      while (!claimed_all && issued - retired < n && !job.abort.load(std::memory_order_relaxed)) {
        const std::size_t c = job.next.fetch_add(1, std::memory_order_relaxed);
        if (c >= job.chunks) {
          claimed_all = true;
          break;
        }
        const unsigned s = static_cast<unsigned>(issued % n);
        offset = c * job.chunk;
        lane.to_host(slot[s], job.dev, job.dev_offset + offset, std::min(job.chunk, job.bytes - offset));
        lane.record(s);
        at[s] = offset;
        ++issued;
      }
      if (issued == retired) break;
      if (job.abort.load(std::memory_order_relaxed)) {
        lane.drain();  // another thread failed: what is in flight is not wanted
        break;
      }
      const unsigned s = static_cast<unsigned>(retired % n);
      offset = at[s];
      lane.wait(s);
      std::memcpy(dst + offset, slot[s], std::min(job.chunk, job.bytes - offset));
      ++retired;
    }
  } catch (...) {
    job.fail_device(offset, std::current_exception());
    lane.drain();
  }
}

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

staged_completion staged_copier::submit(std::shared_ptr<staged_job> job) {
  {
    std::lock_guard lock(mutex_);
    if (closing_)
      throw staged_error(staged_error::reason::closed, job->dir, job->bytes, 0, "the copier is being destroyed");
    queue_.push_back(job);
  }
  queued_.notify_one();
  return staged_completion(std::move(job));
}

staged_completion staged_copier::copy_to_device_async(device_ref dst, std::size_t dst_offset, const void* src,
                                                      std::size_t bytes) {
  if (bytes == 0) return {};
  check(step_, staged_direction::to_device, dst, dst_offset, src, bytes);
  if (bytes < tuning_.handoff_bytes) {
    try {
      step_.plain_to_device(dst, dst_offset, src, bytes);
    } catch (const std::exception& e) {
      throw staged_error(staged_error::reason::device, staged_direction::to_device, bytes, 0,
                         fmt::format("plain copy: {}", e.what()));
    }
    return {};
  }
  auto job = std::make_shared<staged_job>();
  job->dir = staged_direction::to_device;
  job->dev = dst;
  job->dev_offset = dst_offset;
  job->src = src;
  job->bytes = bytes;
  return submit(std::move(job));
}

staged_completion staged_copier::copy_to_host_async(void* dst, device_ref src, std::size_t src_offset,
                                                    std::size_t bytes) {
  if (bytes == 0) return {};
  check(step_, staged_direction::to_host, src, src_offset, dst, bytes);
  if (bytes < tuning_.handoff_bytes) {
    try {
      step_.plain_to_host(dst, src, src_offset, bytes);
    } catch (const std::exception& e) {
      throw staged_error(staged_error::reason::device, staged_direction::to_host, bytes, 0,
                         fmt::format("plain copy: {}", e.what()));
    }
    return {};
  }
  auto job = std::make_shared<staged_job>();
  job->dir = staged_direction::to_host;
  job->dev = src;
  job->dev_offset = src_offset;
  job->dst = dst;
  job->bytes = bytes;
  return submit(std::move(job));
}

void staged_copier::copy_to_device(device_ref dst, std::size_t dst_offset, const void* src, std::size_t bytes) {
  copy_to_device_async(dst, dst_offset, src, bytes).wait();
}

void staged_copier::copy_to_host(void* dst, device_ref src, std::size_t src_offset, std::size_t bytes) {
  copy_to_host_async(dst, src, src_offset, bytes).wait();
}

}  // namespace xfer::mem
