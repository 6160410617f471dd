#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <exception>
#include <optional>
#include <string>
#include <vector>
#include <fmt/format.h>
#include <xfer/mem/staged/staged_copier.hpp>

#include <xfer/mem/nontemporal.hpp>

namespace xfer::mem {

namespace detail {

// XFER_STAGED_TRACE=<file>: each copy appends one line when it is gone,
// saying when each of its stages began, in microseconds after its
// submission. For finding where a copy's time goes beyond its bytes (issue
// 15: a 64 MiB copy took about 0.5 ms longer than its chunks need); off,
// it costs one branch per stage.
struct staged_trace {
  enum mark : unsigned { submitted, picked_up, staging_ready, first_piece, first_dma, pieces_done, dmas_done,
                         completed, caller_woke, marks };
  static const char* file() {
    static const char* f = std::getenv("XFER_STAGED_TRACE");
    return f && *f ? f : nullptr;
  }
  const bool on = file() != nullptr;
  std::array<std::atomic<std::int64_t>, marks> at{};
  // The first time a stage is reached counts (several threads may reach it).
  void note(mark m) noexcept {
    if (!on) return;
    const std::int64_t now = std::chrono::steady_clock::now().time_since_epoch().count();
    std::int64_t none = 0;
    at[m].compare_exchange_strong(none, now, std::memory_order_relaxed);
  }
  void write(bool to_device, std::size_t bytes, std::size_t chunks) const noexcept {
    if (!on || !at[submitted].load()) return;
    static std::mutex m;
    std::lock_guard lock(m);
    std::FILE* f = std::fopen(file(), "a");
    if (!f) return;
    static constexpr const char* names[] = {"submitted", "picked_up", "staging_ready", "first_piece", "first_dma",
                                            "pieces_done", "dmas_done", "completed", "caller_woke"};
    std::fprintf(f, "%s %zu bytes %zu chunks", to_device ? "h2d" : "d2h", bytes, chunks);
    const auto t0 = at[submitted].load();
    for (unsigned i = 1; i < marks; ++i) {
      const auto t = at[i].load();
      if (t) std::fprintf(f, " %s=%.1f", names[i], static_cast<double>(t - t0) / 1e3);
    }
    std::fputc('\n', f);
    std::fclose(f);
  }
};

// One copy, from submission to completion. Its bytes are cut into chunks
// (one DMA each, through slot c % slots of the ring) and each chunk into
// pieces (one CPU copy each). The threads claim pieces in order with one
// atomic add, so they all work on the same chunk or its neighbour and a
// chunk is ready soon after its first piece was claimed. Per slot, three
// counters say where it stands; nothing else is shared and no lock is taken
// but the lane's, once per chunk.
struct staged_job {
  staged_direction dir{};
  device_ref dev;
  std::size_t dev_offset = 0;
  const void* src = nullptr;  // to_device
  void* dst = nullptr;        // to_host
  std::size_t bytes = 0;
  std::size_t chunk = 0;  // a staging buffer's size: the largest chunk
  std::size_t chunks = 0, pieces_per_chunk = 0, pieces = 0;
  std::vector<std::size_t> starts;  // chunk c is [starts[c], starts[c + 1]) (staged_chunk_starts)
  std::size_t begin(std::size_t c) const { return starts[c]; }
  std::size_t length(std::size_t c) const { return starts[c + 1] - starts[c]; }
  // Chunk c's pieces: its length over pieces_per_chunk, on cache lines.
  std::size_t piece(std::size_t c) const {
    const std::size_t p = (length(c) + pieces_per_chunk - 1) / pieces_per_chunk;
    return (p + 63) / 64 * 64;
  }
  unsigned slots = 0;
  std::vector<void*> staging;  // one chunk-sized buffer per slot
  std::unique_ptr<queue_mark> after;  // the caller's queue to wait for (null: none)

  struct slot_state {
    // Pieces of the slot's current chunk copied (reset when the chunk's DMA
    // is queued, to_device, or when it has been emptied, to_host).
    std::atomic<std::size_t> pieces_done{0};
    // The last chunk whose DMA was queued in this slot, and the last known
    // to have completed (-1: none).
    std::atomic<std::int64_t> queued{-1}, landed{-1};
    // The last chunk a thread has gone to the lane to wait for: one thread
    // per chunk waits in the driver, the others watch `landed`.
    std::atomic<std::int64_t> asked{-1};
  };
  std::unique_ptr<slot_state[]> slot;

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

  std::mutex mutex;  // guards error
  std::optional<failure> error;
  // Set once the copy has ended (error written first); the waiters spin,
  // then sleep (spin_wait.hpp).
  std::atomic<bool> finished{false};
  sleeper finished_waiters;
  staged_trace trace;
  ~staged_job() { trace.write(dir == staged_direction::to_device, bytes, chunks); }

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
    trace.note(staged_trace::completed);
    finished.store(true);
    finished_waiters.wake();
  }
};

}  // namespace detail

using detail::staged_job;

// ---- completion -------------------------------------------------------------

void staged_completion::wait() const {
  if (!job_) return;
  job_->finished_waiters.wait([&] { return job_->finished.load(); });
  job_->trace.note(detail::staged_trace::caller_woke);
  std::optional<detail::staged_job::failure> f;
  {
    std::lock_guard lock(job_->mutex);
    f = job_->error;  // a copy: the exception below is this thread's alone
  }
  if (f) throw staged_error(f->why, job_->dir, job_->bytes, f->at, std::move(f->cause));
}

bool staged_completion::ready() const {
  return !job_ || job_->finished.load();
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
  try {
    lane_ = step_.open_lane(tuning_.ring_depth);
  } catch (const std::exception& e) {
    throw staged_error(staged_error::reason::device, staged_direction::to_device, 0, 0,
                       fmt::format("opening a {} lane: {}", step_.name(), e.what()));
  }
  team_ = std::make_unique<thread_team>(tuning_.threads, options.thread_start);
  leader_ = std::thread([this, start = options.thread_start] {
    if (start) start();
    leader_loop();
  });
}

staged_copier::~staged_copier() {
  {
    std::lock_guard lock(mutex_);
    closing_ = true;
    closing_flag_.store(true);
  }
  queued_.wake();
  leader_.join();  // the leader finishes the queue first
  team_.reset();
  lane_.reset();
}

void staged_copier::leader_loop() {
  for (;;) {
    std::shared_ptr<staged_job> job;
    queued_.wait([&] { return closing_flag_.load() || queue_length_.load() > 0; });
    {
      std::lock_guard lock(mutex_);
      if (queue_.empty()) return;  // closing, and nothing left to do
      job = std::move(queue_.front());
      queue_.pop_front();
      queue_length_.fetch_sub(1);
    }
    run_job(*job);
    job->complete();
  }
}

void staged_copier::run_job(staged_job& job) {
  job.trace.note(detail::staged_trace::picked_up);
  host_resource& up = step_.staging_memory();
  const std::size_t align = staging_alignment(up);
  job.chunk = tuning_.chunk_bytes;
  job.starts = staged_chunk_starts(job.bytes, job.chunk);
  job.chunks = job.starts.size() - 1;
  job.pieces_per_chunk = (job.chunk + tuning_.piece_bytes() - 1) / tuning_.piece_bytes();
  job.pieces = job.chunks * job.pieces_per_chunk;  // a short chunk's last pieces may be empty: they only count
  job.slots = static_cast<unsigned>(std::min<std::size_t>(tuning_.ring_depth, job.chunks));
  job.slot = std::make_unique<staged_job::slot_state[]>(job.slots);
  // Every slot is a whole chunk whatever the copy's size, so every copy
  // asks the pool for the same class and reuses the same cached blocks.
  auto release = [&] {
    for (void* p : job.staging) pool_.deallocate(p, job.chunk, align);
    job.staging.clear();
  };
  try {
    job.staging.reserve(job.slots);
    for (unsigned i = 0; i < job.slots; ++i) job.staging.push_back(pool_.allocate(job.chunk, align));
  } catch (const std::exception& e) {
    release();
    job.fail(staged_error::reason::staging, 0,
             fmt::format("no pinned staging memory ({} buffers of {} bytes from {}): {}", job.slots, job.chunk,
                         up.kind(), e.what()));
    return;
  }
  job.trace.note(detail::staged_trace::staging_ready);
  const bool to_device = job.dir == staged_direction::to_device;
  std::size_t offset = 0;  // where a failure is reported
  try {
    // Before any DMA of this copy: the caller's queue, where it named one.
    if (job.after) {
      std::lock_guard lock(lane_mutex_);
      lane_->wait_for(*job.after);
    }
    // Device to host: the first DMAs fill the ring before any thread starts
    // (each later one is queued as soon as its slot has been emptied).
    if (!to_device)
      for (std::size_t c = 0; c < job.slots; ++c) {
        offset = job.begin(c);
        queue_dma(job, static_cast<unsigned>(c), c);
      }
  } catch (...) {
    job.fail_device(offset, std::current_exception());
  }
  if (!job.abort.load(std::memory_order_relaxed))
    team_->run([&](unsigned) { to_device ? fill_pieces(job) : empty_pieces(job); });
  job.trace.note(detail::staged_trace::pieces_done);
  try {
    // Host to device: the last DMAs are still running; wait for each slot's
    // last one, so a DMA failure is reported as this copy's.
    if (to_device && !job.abort.load(std::memory_order_relaxed))
      for (unsigned s = 0; s < job.slots; ++s) {
        const std::int64_t c = job.slot[s].queued.load(std::memory_order_acquire);
        offset = job.begin(static_cast<std::size_t>(c < 0 ? 0 : c));
        if (c >= 0 && !await_dma(job, s, c)) break;
      }
  } catch (...) {
    job.fail_device(offset, std::current_exception());
  }
  // After a failure DMAs may still be queued: none may use a slot that goes
  // back to the pool.
  job.trace.note(detail::staged_trace::dmas_done);
  if (job.abort.load(std::memory_order_relaxed)) lane_->drain();
  release();
}

// Queues chunk c's DMA through slot s and marks it, then publishes it to
// the threads waiting for it. The lane's lock keeps each DMA and its mark
// together (a mark taken between another thread's DMA and its mark would
// only wait longer, but the lane's calls are not all thread-safe: OpenCL's
// marker replaces the slot's event).
void staged_copier::queue_dma(staged_job& job, unsigned s, std::size_t c) {
  const std::size_t off = job.begin(c), len = job.length(c);
  {
    std::lock_guard lock(lane_mutex_);
    if (job.dir == staged_direction::to_device)
      lane_->to_device(job.staging[s], job.dev, job.dev_offset + off, len);
    else
      lane_->to_host(job.staging[s], job.dev, job.dev_offset + off, len);
    lane_->record(s);
  }
  job.trace.note(detail::staged_trace::first_dma);
  job.slot[s].queued.store(static_cast<std::int64_t>(c), std::memory_order_release);
}

// Blocks until chunk c's DMA through slot s has completed. False when the
// copy was given up meanwhile (another thread failed). Throws what the
// lane's wait throws.
bool staged_copier::await_dma(staged_job& job, unsigned s, std::size_t c) {
  auto& st = job.slot[s];
  const auto want = static_cast<std::int64_t>(c);
  // Its DMA is queued by whichever thread completes the chunk (to_device) or
  // empties the slot's previous chunk (to_host): a few microseconds away.
  while (st.queued.load(std::memory_order_acquire) < want) {
    if (job.abort.load(std::memory_order_relaxed)) return false;
    std::this_thread::yield();
  }
  if (st.landed.load(std::memory_order_acquire) >= want) return true;
  // One thread per chunk asks the lane; the rest watch for its answer. A
  // dozen threads polling one event inside the driver contend with the
  // thread queueing the next DMA there: on the H100, one waiter moved
  // device-to-host 16 MiB from 19.0-19.4 to 22.1-22.3 GB/s and 64 MiB from
  // 42.4-43.7 to 45.0-45.6, host-to-device within the noise
  // (docs/results/h100/staged/one-waiter-*). The slot's mark cannot move on to
  // chunk c + slots meanwhile: that needs this thread's piece first.
  std::int64_t asked = st.asked.load(std::memory_order_relaxed);
  if (asked < want && st.asked.compare_exchange_strong(asked, want, std::memory_order_acq_rel)) {
    lane_->wait(s);  // a failure here reaches the watchers as job.abort
    std::int64_t seen = st.landed.load(std::memory_order_relaxed);
    while (seen < want && !st.landed.compare_exchange_weak(seen, want, std::memory_order_release)) {
    }
    return true;
  }
  const bool spin = spin_before_sleep().count() > 0;  // none on small machines: the lane may need this CPU
  while (st.landed.load(std::memory_order_acquire) < want) {
    if (job.abort.load(std::memory_order_relaxed)) return false;
    if (spin)
      cpu_relax();
    else
      std::this_thread::yield();
  }
  return true;
}

void staged_copier::copy_piece(void* dst, const void* src, std::size_t bytes) const noexcept {
  if (tuning_.stream_stores)
    nontemporal_copy(dst, src, bytes);
  else
    std::memcpy(dst, src, bytes);
}

// Host to device: copy a piece of the caller's memory into its chunk's slot
// (once the slot's previous DMA is done); the thread that completes a chunk
// queues its DMA.
void staged_copier::fill_pieces(staged_job& job) {
  const auto* src = static_cast<const unsigned char*>(job.src);
  std::size_t offset = 0;
  try {
    for (;;) {
      if (job.abort.load(std::memory_order_relaxed)) return;
      const std::size_t q = job.next.fetch_add(1, std::memory_order_relaxed);
      if (q >= job.pieces) return;
      if (q == 0) job.trace.note(detail::staged_trace::first_piece);
      const std::size_t c = q / job.pieces_per_chunk, k = q % job.pieces_per_chunk;
      const auto s = static_cast<unsigned>(c % job.slots);
      if (c >= job.slots) {
        offset = job.begin(c - job.slots);  // a failed wait is that chunk's
        if (!await_dma(job, s, c - job.slots)) return;
      }
      offset = job.begin(c);
      const std::size_t piece = job.piece(c), end = offset + job.length(c), at = offset + k * piece;
      if (at < end) copy_piece(static_cast<unsigned char*>(job.staging[s]) + k * piece, src + at,
                               std::min(piece, end - at));
      auto& st = job.slot[s];
      if (st.pieces_done.fetch_add(1, std::memory_order_acq_rel) + 1 == job.pieces_per_chunk) {
        st.pieces_done.store(0, std::memory_order_relaxed);  // published by queue_dma's release
        queue_dma(job, s, c);
      }
    }
  } catch (...) {
    job.fail_device(offset, std::current_exception());
  }
}

// Device to host: once its chunk's DMA is done, copy a piece out of the
// slot into the caller's memory; the thread that empties a slot queues the
// DMA of the chunk that reuses it.
void staged_copier::empty_pieces(staged_job& job) {
  auto* dst = static_cast<unsigned char*>(job.dst);
  std::size_t offset = 0;
  try {
    for (;;) {
      if (job.abort.load(std::memory_order_relaxed)) return;
      const std::size_t q = job.next.fetch_add(1, std::memory_order_relaxed);
      if (q >= job.pieces) return;
      if (q == 0) job.trace.note(detail::staged_trace::first_piece);
      const std::size_t c = q / job.pieces_per_chunk, k = q % job.pieces_per_chunk;
      const auto s = static_cast<unsigned>(c % job.slots);
      offset = job.begin(c);
      if (!await_dma(job, s, c)) return;
      const std::size_t piece = job.piece(c), end = offset + job.length(c), at = offset + k * piece;
      if (at < end) copy_piece(dst + at, static_cast<const unsigned char*>(job.staging[s]) + k * piece,
                               std::min(piece, end - at));
      auto& st = job.slot[s];
      if (st.pieces_done.fetch_add(1, std::memory_order_acq_rel) + 1 == job.pieces_per_chunk) {
        st.pieces_done.store(0, std::memory_order_relaxed);
        if (const std::size_t next = c + job.slots; next < job.chunks) {
          offset = job.begin(next);
          queue_dma(job, s, next);
        }
      }
    }
  } catch (...) {
    job.fail_device(offset, std::current_exception());
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

staged_completion staged_copier::submit(std::shared_ptr<staged_job> job) {
  {
    std::lock_guard lock(mutex_);
    if (closing_)
      throw staged_error(staged_error::reason::closed, job->dir, job->bytes, 0, "the copier is being destroyed");
    queue_.push_back(job);
    queue_length_.fetch_add(1);
  }
  queued_.wake();
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

// The caller's queue marked on the calling thread (null: none).
std::unique_ptr<queue_mark> mark_of(device_step& step, staged_direction dir, std::size_t bytes, void* queue) {
  if (!queue) return nullptr;
  try {
    return step.mark(queue);
  } catch (const std::exception& e) {
    throw staged_error(staged_error::reason::device, dir, bytes, 0, fmt::format("ordering after the queue: {}", e.what()));
  }
}

}  // namespace

// Both directions: the arguments checked, the caller's queue marked, then
// the plain API below the handoff or a job for the leader.
staged_completion staged_copier::start(staged_direction dir, device_ref dev, std::size_t dev_offset, void* host,
                                       std::size_t bytes, void* after_queue) {
  const bool to_device = dir == staged_direction::to_device;
  check(step_, dir, dev, dev_offset, host, bytes);
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
  job->after = std::move(after);
  return submit(std::move(job));
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

void staged_copier::copy_to_device(device_ref dst, std::size_t dst_offset, const void* src, std::size_t bytes) {
  copy_to_device_async(dst, dst_offset, src, bytes).wait();
}

void staged_copier::copy_to_host(void* dst, device_ref src, std::size_t src_offset, std::size_t bytes) {
  copy_to_host_async(dst, src, src_offset, bytes).wait();
}

}  // namespace xfer::mem
