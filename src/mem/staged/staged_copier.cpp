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
#include <stdexcept>
#include <string>
#include <vector>
#include <fmt/format.h>
#include <xfer/mem/staged/staged_copier.hpp>

#include <xfer/mem/nontemporal.hpp>

#include "staged_job.hpp"

namespace xfer::mem {

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

bool staged_completion::wait_for(std::chrono::microseconds timeout) const {
  if (!job_) return true;
  if (!job_->finished_waiters.wait_for([&] { return job_->finished.load(); }, timeout)) return false;
  wait();  // finished: wait() returns at once, or throws the copy's error
  return true;
}

bool staged_completion::ready() const {
  return !job_ || job_->finished.load();
}

std::size_t staged_completion::bytes() const noexcept { return job_ ? job_->bytes : 0; }

// ---- copier -----------------------------------------------------------------

namespace {

// The cache a copy cuts its ring from: the last-level cache alone, or its
// share of the budget's while it holds staging.
class cache_share {
 public:
  explicit cache_share(staging_budget* b) : budget_(b), bytes_(b ? b->enter() : last_level_cache_bytes()) {}
  ~cache_share() {
    if (budget_) budget_->leave();
  }
  cache_share(const cache_share&) = delete;
  cache_share& operator=(const cache_share&) = delete;
  std::size_t bytes() const noexcept { return bytes_; }

 private:
  staging_budget* budget_;
  std::size_t bytes_;
};

staged_tuning pick_tuning(device_step& step, const staged_copier_options& o) {
  staged_tuning t = o.tuning ? *o.tuning : tuning_for(step);
  t.validate();
  return t;
}

std::size_t default_cache(const staged_tuning& t, const staged_copier_options& o) {
  if (o.max_cached_staging_bytes) return *o.max_cached_staging_bytes;
  // One ring (the deeper one, to the host), its blocks rounded up to their pool class.
  return caching_pool::class_size(t.chunk_bytes) * staged_ring_slots(t, staged_direction::to_host);
}

std::size_t staging_alignment(host_resource& r) {
  // A page: what DMA engines and registration work in; less only where the
  // resource cannot give that much.
  return std::min<std::size_t>(4096, r.max_alignment());
}

}  // namespace

staged_copier::staged_copier(device_step& step, staged_copier_options options)
    : step_(step),
      registrations_(options.registrations),
      tuning_(pick_tuning(step, options)),
      pool_(step.staging_memory(), default_cache(tuning_, options)),
      thread_start_(options.thread_start),
      line_(std::make_unique<detail::staged_line>()),
      queue_pool_(step.staging_memory(), SIZE_MAX) {
  if (registrations_ && &registrations_->step() != &step_)
    throw std::invalid_argument("the registration cache belongs to another device step than the copier's");
  try {
    lane_ = step_.open_lane(staged_ring_slots(tuning_, staged_direction::to_host));
  } catch (const std::exception& e) {
    throw staged_error(staged_error::reason::device, staged_direction::to_device, 0, 0,
                       fmt::format("opening a {} lane: {}", step_.name(), e.what()));
  }
  // A budget's threads start as the copier joins it (reserve), each
  // calling thread_start first, as a team's would.
  budget_ = std::move(options.budget);
  if (budget_) budget_->reserve(tuning_.threads, thread_start_);
  open_line(*line_, !budget_);
}

unsigned staged_copier::team_threads() const noexcept { return budget_ ? budget_->threads() : tuning_.threads; }

staged_copier::~staged_copier() {
  // Each leader finishes its queue first.
  {
    std::lock_guard lock(queue_mutex_);
    if (queue_line_) close_line(*queue_line_);
  }
  close_line(*line_);
  lane_.reset();
}

void staged_copier::open_line(detail::staged_line& line, bool own_team) {
  if (own_team) line.team = std::make_unique<thread_team>(tuning_.threads, thread_start_);
  line.leader = std::thread([this, &line, start = thread_start_] {
    if (start) start();
    leader_loop(line);
  });
}

void staged_copier::close_line(detail::staged_line& line) noexcept {
  {
    std::lock_guard lock(line.mutex);
    line.closing = true;
    line.closing_flag.store(true);
  }
  line.queued.wake();
  if (line.leader.joinable()) line.leader.join();
  line.team.reset();
}

void staged_copier::leader_loop(detail::staged_line& line) {
  for (;;) {
    std::shared_ptr<staged_job> job;
    line.queued.wait([&] { return line.closing_flag.load() || line.length.load() > 0; });
    {
      std::lock_guard lock(line.mutex);
      if (line.queue.empty()) return;  // closing, and nothing left to do
      job = std::move(line.queue.front());
      line.queue.pop_front();
      line.length.fetch_sub(1);
    }
    run_job(*job, line);
    job->complete();
  }
}

std::vector<std::size_t> staged_copier::chunk_starts(std::size_t bytes, staged_direction d) const {
  return staged_copy_starts(bytes, tuning_, d, budget_ ? budget_->cache_bytes() : last_level_cache_bytes());
}

// This copy's cut: the tuning's chunk, or one chosen from the copy's size
// (staged_chunk_for), never more than a staging buffer. A smaller chunk
// uses the start of each buffer only: the ring the caches see shrinks, the
// pool's blocks stay the same.
void staged_copier::cut(staged_job& job, std::size_t llc) const {
  job.chunk = tuning_.chunk_bytes;
  staged_tuning cut = tuning_;
  cut.ring_depth = staged_ring_slots(tuning_, job.dir);
  cut.chunk_bytes = staged_chunk_for(job.bytes, cut, llc);
  job.starts = staged_copy_starts(job.bytes, tuning_, job.dir, llc);
  job.demote = job.dir == staged_direction::to_device && staged_demotes(job.bytes, tuning_, llc);
  job.chunks = job.starts.size() - 1;
  job.pieces_per_chunk = (cut.chunk_bytes + cut.piece_bytes() - 1) / cut.piece_bytes();
  job.pieces = job.chunks * job.pieces_per_chunk;  // a short chunk's last pieces may be empty: they only count
  job.slots = static_cast<unsigned>(std::min<std::size_t>(cut.ring_depth, job.chunks));
  job.slot = std::make_unique<staged_job::slot_state[]>(job.slots);
}

// Every slot is a whole chunk whatever the copy's size, so every copy asks
// the pool for the same class and reuses the same cached blocks. False (the
// job failed, holding none) when the pool cannot give them.
bool staged_copier::take_staging(staged_job& job, caching_pool& pool) {
  host_resource& up = step_.staging_memory();
  try {
    job.staging.reserve(job.slots);
    for (unsigned i = 0; i < job.slots; ++i) job.staging.push_back(pool.allocate(job.chunk, staging_alignment(up)));
  } catch (const std::exception& e) {
    give_staging(job, pool);
    job.fail(staged_error::reason::staging, 0,
             fmt::format("no pinned staging memory ({} buffers of {} bytes from {}): {}", job.slots, job.chunk,
                         up.kind(), e.what()));
    return false;
  }
  return true;
}

void staged_copier::give_staging(staged_job& job, caching_pool& pool) noexcept {
  for (void* p : job.staging) pool.deallocate(p, job.chunk, staging_alignment(step_.staging_memory()));
  job.staging.clear();
}

void staged_copier::run_job(staged_job& job, detail::staged_line& line) {
  job.trace.note(detail::staged_trace::picked_up);
  if (registrations_ && !job.queue) {
    // On the leader, between copies: a registration made here (the
    // buffer's second copy) is paid for by this copy alone.
    const void* host = job.dir == staged_direction::to_device ? job.src : job.dst;
    if (auto lease = registrations_->use(host, job.bytes)) return run_registered(job);
  }
  // A copy on the caller's queue was cut, and its staging taken, at the call.
  // Any other is cut here, from its share of the budget's cache while it
  // holds staging (or from the last-level cache, with no budget).
  caching_pool& pool = job.queue ? queue_pool_ : pool_;
  std::optional<cache_share> share;
  if (!job.queue) {
    share.emplace(budget_.get());
    cut(job, share->bytes());
    if (!take_staging(job, pool)) return;
  }
  staging_lane& lane = job.queue ? *job.queue : *lane_;
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
  if (!job.abort.load(std::memory_order_relaxed)) {
    const auto piece = [&] { return to_device ? fill_piece(job) : empty_piece(job); };
    if (line.team)
      line.team->run([&](unsigned) {
        while (piece()) {
        }
      });
    else
      budget_->run(tuning_.threads, piece, thread_start_);
  }
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
  // back to the pool (a queue lane's drain opens its gates first).
  job.trace.note(detail::staged_trace::dmas_done);
  if (job.abort.load(std::memory_order_relaxed)) lane.drain();
  // The caller's queue goes on (device to host: past the final gate) before
  // the staging goes back, and before wait() returns.
  // The lane goes here, on the leader, its DMAs all ended (a CUDA lane
  // frees its events with its device current), not with the job on
  // whichever thread drops the last completion.
  if (job.queue) job.queue->release();
  job.queue.reset();
  give_staging(job, pool);
}

// A registered buffer: one plain async copy on the lane, in place of the
// staging buffer, and no CPU copy. The leader runs one copy at a time, so
// slot 0's mark is free.
void staged_copier::run_registered(staged_job& job) {
  job.chunks = 1;
  try {
    {
      std::lock_guard lock(lane_mutex_);
      if (job.after) lane_->wait_for(*job.after);
      if (job.dir == staged_direction::to_device)
        lane_->to_device(job.src, job.dev, job.dev_offset, job.bytes);
      else
        lane_->to_host(job.dst, job.dev, job.dev_offset, job.bytes);
      lane_->record(0);
    }
    job.trace.note(detail::staged_trace::first_dma);
    lane_->wait(0);
  } catch (...) {
    job.fail_device(0, std::current_exception());
    lane_->drain();  // no copy may still use the buffer once its lease ends
  }
  job.trace.note(detail::staged_trace::dmas_done);
}

// Queues chunk c's DMA through slot s and marks it, then publishes it to
// the threads waiting for it. The lane's lock keeps each DMA and its mark
// together (a mark taken between another thread's DMA and its mark would
// only wait longer, but the lane's calls are not all thread-safe: OpenCL's
// marker replaces the slot's event).
void staged_copier::queue_dma(staged_job& job, unsigned s, std::size_t c) {
  const std::size_t off = job.begin(c), len = job.length(c);
  {
    staging_lane& lane = job.queue ? *job.queue : *lane_;
    std::lock_guard lock(job.queue ? job.queue_mutex : lane_mutex_);
    if (job.dir == staged_direction::to_device)
      lane.to_device(job.staging[s], job.dev, job.dev_offset + off, len);
    else
      lane.to_host(job.staging[s], job.dev, job.dev_offset + off, len);
    lane.record(s);
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
  // thread queueing the next DMA there: one waiter is faster device to host
  // and no slower host to device (docs/decisions/0001-staged-copier-shape.md).
  // The slot's mark cannot move on to
  // chunk c + slots meanwhile: that needs this thread's piece first.
  std::int64_t asked = st.asked.load(std::memory_order_relaxed);
  if (asked < want && st.asked.compare_exchange_strong(asked, want, std::memory_order_acq_rel)) {
    (job.queue ? *job.queue : *lane_).wait(s);  // a failure here reaches the watchers as job.abort
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
bool staged_copier::fill_piece(staged_job& job) {
  staged_job::piece_claim p;
  if (!job.claim(p)) return false;
  const auto* src = static_cast<const unsigned char*>(job.src);
  const auto [c, k, s] = p;
  std::size_t offset = 0;
  try {
    if (c >= job.slots) {
      offset = job.begin(c - job.slots);  // a failed wait is that chunk's
      if (!await_dma(job, s, c - job.slots)) return false;
    }
    offset = job.begin(c);
    const std::size_t piece = job.piece(c), end = offset + job.length(c), at = offset + k * piece;
    if (at < end) {
      unsigned char* to = static_cast<unsigned char*>(job.staging[s]) + k * piece;
      const std::size_t len = std::min(piece, end - at);
      copy_piece(to, src + at, len);
      // For the copy engine, which reads the chunk soon (staged_tuning::demote_staging).
      if (job.demote) demote_to_shared_cache(to, len);
    }
    auto& st = job.slot[s];
    if (st.pieces_done.fetch_add(1, std::memory_order_acq_rel) + 1 == job.pieces_per_chunk) {
      st.pieces_done.store(0, std::memory_order_relaxed);  // published by queue_dma's release
      queue_dma(job, s, c);
    }
    return true;
  } catch (...) {
    job.fail_device(offset, std::current_exception());
    return false;
  }
}

// Device to host: once its chunk's DMA is done, copy a piece out of the
// slot into the caller's memory; the thread that empties a slot queues the
// DMA of the chunk that reuses it.
bool staged_copier::empty_piece(staged_job& job) {
  staged_job::piece_claim p;
  if (!job.claim(p)) return false;
  auto* dst = static_cast<unsigned char*>(job.dst);
  const auto [c, k, s] = p;
  std::size_t offset = job.begin(c);
  try {
    if (!await_dma(job, s, c)) return false;
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
    return true;
  } catch (...) {
    job.fail_device(offset, std::current_exception());
    return false;
  }
}

}  // namespace xfer::mem
