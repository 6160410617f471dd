#pragma once
// Pageable memory at pinned speed (issue 15): copies between any host memory
// and device memory through a ring of pinned staging buffers. A team of CPU
// threads copies chunks into (or out of) the ring while the device's copy
// engine drains (or fills) the chunks before them, so the CPU copy and the
// DMA overlap and the transfer runs near the pinned rate.
//
//   xfer::mem::staged_copier copier(*xfer::cuda::make_staged_step(0));
//   copier.copy_to_device({dev_ptr, dev_bytes}, 0, vec.data(), vec.size());
//
// Below tuning().handoff(direction) a copy goes to the plain API instead, where
// staging would not pay.
//
// Thread-safe: any number of threads may copy through one copier at once.
// Copies are queued and run one after another, each with all the copier's
// threads (one copy already keeps the copy engine busy), or with its turn of
// a staging budget's threads where several copiers share one (options.budget,
// staging_budget.hpp: one process driving several devices); a copy's staging
// buffers are taken from the pool when it starts and returned when it ends,
// so the pinned memory in use stays one ring whatever the queue length.
// Copies on a caller's queue (copy_to_device_on) differ: each takes its ring
// at the call, and they run on threads of their own, never a budget's.
#include <atomic>
#include <chrono>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <xfer/mem/caching_pool.hpp>
#include <xfer/mem/registration_cache.hpp>
#include <xfer/mem/staged/device_step.hpp>
#include <xfer/mem/staged/staging_budget.hpp>
#include <xfer/mem/staged/tuning.hpp>
#include <xfer/mem/spin_wait.hpp>
#include <xfer/mem/thread_team.hpp>

namespace xfer::mem {

namespace detail {
struct staged_job;
struct staged_line;
}

// The outcome of an asynchronous staged copy. wait() blocks until the copy
// finished and throws its staged_error if it failed (every time it is
// called). Dropping a completion unwaited is allowed: the copy still runs to
// its end (and the copier's destructor waits for it).
class staged_completion {
 public:
  staged_completion() = default;  // an already finished, successful copy
  void wait() const;
  // As wait(), for at most about `timeout`: false while the copy is still
  // running then. For a caller that must stay responsive while it waits
  // (Python's Ctrl-C): it waits as wait() does, polling first, then asleep.
  bool wait_for(std::chrono::microseconds timeout) const;
  bool ready() const;  // finished (successfully or not) without blocking
  std::size_t bytes() const noexcept;

 private:
  friend class staged_copier;
  explicit staged_completion(std::shared_ptr<detail::staged_job> j) : job_(std::move(j)) {}
  std::shared_ptr<detail::staged_job> job_;
};

struct staged_copier_options {
  // Unset: tuning_for(step) (the per-machine, per-device cached tuning,
  // with the XFER_STAGED_* overrides). Set: used as given.
  std::optional<staged_tuning> tuning;
  // Idle staging memory the copier's pool keeps for the next copy (the pool
  // returns the rest to the OS); the default keeps one ring.
  std::optional<std::size_t> max_cached_staging_bytes;
  // Called first on each of the copier's threads (a signal mask, a name,
  // NUMA placement), and on each thread of the budget that its joining or
  // its copies start (the team grows with the copies at once).
  std::function<void()> thread_start;
  // Set: the copier's pieces are copied by the budget's threads, taking
  // turns with the other copiers on it (a copier alone gets up to
  // tuning.threads of them), and each copy's ring is cut from its share of
  // the budget's cache; the copier starts no team for them, only the thread
  // that runs its queue. Unset: a team of tuning.threads of its own. The
  // sweep's staged route and the Python package pass process_staging_budget().
  // Copies on a caller's queue (copy_*_on) never use it: see there.
  std::shared_ptr<staging_budget> budget;
  // Opt-in: reused buffers registered once and copied from in place
  // (registration_cache.hpp says when a buffer is registered and dropped).
  // Null: every copy at or above the handoff is staged. The cache must be
  // of the copier's step and outlive the copier.
  registration_cache* registrations = nullptr;
};

class staged_copier {
 public:
  // The step must outlive the copier. Opens one lane per thread and starts
  // the threads; throws staged_error (reason device) when a lane cannot be
  // opened, std::invalid_argument for an unusable tuning.
  explicit staged_copier(device_step& step, staged_copier_options options = {});
  // Waits for every queued copy to finish, then stops the threads and
  // returns the cached staging memory.
  ~staged_copier();
  staged_copier(const staged_copier&) = delete;
  staged_copier& operator=(const staged_copier&) = delete;

  // Blocking: return once the bytes are at their destination (in device
  // memory for copy_to_device). Throw staged_error naming the size and the
  // cause; after a failure no staging memory is held and no thread of the
  // copy still runs, and the copier takes the next copy as usual. The
  // destination's bytes are then unspecified.
  //
  // Refused with reason bad_argument before anything moves: a size of 0
  // (almost always a size computed wrongly), a null pointer, an offset+bytes beyond dst.bytes/src.bytes, and a
  // source overlapping the destination (where the step can tell).
  void copy_to_device(device_ref dst, std::size_t dst_offset, const void* src, std::size_t bytes);
  void copy_to_host(void* dst, device_ref src, std::size_t src_offset, std::size_t bytes);

  // Asynchronous: check the arguments (throwing as above), queue the copy
  // and return at once. Until the completion's wait() returns, the caller
  // may read the host source of copy_to_device_async but must not modify or
  // free it (the threads copy it chunk by chunk, late chunks last); the
  // device destination is not complete before wait() returns and must not
  // be read by the device. For copy_to_host_async the host destination and
  // the device source must be left alone altogether (neither read nor
  // written). Work the caller queued on the device before the call is not
  // waited for (device work producing a to_host source must be finished
  // first), unless the call names the queue it is on: see after_queue.
  //
  // A copy below the handoff size runs on the calling thread through the
  // plain API, and the completion returned is already finished.
  //
  // Order: staged copies run in the order they were queued, but a copy
  // below the handoff runs at once, possibly before staged copies queued
  // earlier. A caller whose copies touch the same bytes waits for the first
  // before starting the second.
  [[nodiscard]] staged_completion copy_to_device_async(device_ref dst, std::size_t dst_offset, const void* src,
                                                       std::size_t bytes);
  [[nodiscard]] staged_completion copy_to_host_async(void* dst, device_ref src, std::size_t src_offset,
                                                     std::size_t bytes);

  // The same, ordered after a queue of the caller's: the copy's device work
  // starts only once the work queued on `after_queue` before the call has
  // finished (CUDA: a cudaStream_t or CUstream of the step's device, which
  // the copier's stream waits for on the device; OpenCL: a command queue of
  // the step's device, in any context, waited for by the copier's thread
  // before the copy's first DMA; the host step: one of its queues, any other
  // value having no work to wait for), and the caller's thread does not
  // wait for it. So a copy to the host can follow the kernel that produced
  // its source with no synchronization by the caller. A copy below the
  // handoff waits for the queue on the calling thread first. Null means no
  // queue. Throws staged_error (bad_argument) for a queue of another device,
  // (device) where the step cannot order after a queue.
  [[nodiscard]] staged_completion copy_to_device_async(device_ref dst, std::size_t dst_offset, const void* src,
                                                       std::size_t bytes, void* after_queue);
  [[nodiscard]] staged_completion copy_to_host_async(void* dst, device_ref src, std::size_t src_offset,
                                                     std::size_t bytes, void* after_queue);

  // On the caller's queue, without blocking (issue 37): the copy's device
  // work starts once the work queued on `queue` before the call has
  // finished (as with after_queue), and the work the caller queues on
  // `queue` after the call waits, on the device, until the copy has ended.
  // So a program queues copy -> kernel -> copy with no host
  // synchronization, and overlaps copies with kernels on other queues.
  //
  // `queue`: a cudaStream_t or CUstream of the step's device (the legacy
  // default stream is CU_STREAM_LEGACY, 0x1), an OpenCL command queue of
  // the step's device, or for the host step a host_step queue (any other
  // non-null value is held by nothing there).
  //
  // Meanwhile, until the completion is ready: the source (host memory for
  // copy_to_device_on, device memory for copy_to_host_on) must stay
  // allocated and unmodified; it may be read. The destination must be
  // neither read nor written by the host, nor by device work other than
  // work queued on `queue` after the call. Freeing or changing either is
  // the caller's error and is not detected.
  //
  // How: the copy is cut into chunks at the call, and every chunk's DMA is
  // queued on `queue` there and then, each behind a gate of its own that
  // the copier's threads open once the chunk's staging slot is ready
  // (filled, host to device; emptied of the chunk before, device to host);
  // a copy to the host ends with one more gate, opened once the last chunk
  // has been copied out. So the work queued on `queue` after the call comes
  // after the whole copy in the queue's own order, and each wait on `queue`
  // waits only for host work on chunks queued earlier there: the copy
  // cannot wait behind its own waits, however the device shares hardware
  // queues between streams. The staging ring is taken at the call, from a
  // pool of the copier's own that keeps what it pins until the copier goes
  // (freeing pinned memory waits for the whole device, queues held by later
  // copies included); these copies run on a leader and a team of threads of
  // their own (made on first use), never a staging budget's, so their gates
  // never wait behind the copier's other copies, nor behind other copiers'
  // copies whose waits hold the budget's threads. Their ring is cut from the
  // whole last-level cache, at the call. Calls naming the same queue from
  // two threads at once queue their chunks in no defined order, as any work
  // on one queue.
  // A registration cache (options.registrations) is not used for them.
  //
  // The queue is let go when the copy ends, whether it succeeded or not
  // (a queue never let go would hang for ever); after a failure the work
  // queued after the call meets a destination whose bytes are unspecified,
  // and the failure is reported through the completion only: check it
  // (wait()) before trusting what that work computed. The copier's
  // destructor finishes every queued copy, so it lets every queue go too.
  // CUDA: not for a stream being captured into a CUDA graph (the gates are
  // cuStreamWaitValue32 on words the host stores).
  //
  // There is no handoff to the plain API below tuning().handoff(): it
  // would block the calling thread until the queue's earlier work is done.
  // Refused with reason bad_argument, before anything is queued: the
  // arguments as for the blocking copies, a null queue, and a queue the
  // step cannot use (another device's; a destroyed one where the API can
  // tell). Reason staging: no pinned staging ring. Reason device: the step
  // cannot queue on the caller's queue or queueing failed. In each case
  // nothing was left on `queue`.
  [[nodiscard]] staged_completion copy_to_device_on(device_ref dst, std::size_t dst_offset, const void* src,
                                                    std::size_t bytes, void* queue);
  [[nodiscard]] staged_completion copy_to_host_on(void* dst, device_ref src, std::size_t src_offset, std::size_t bytes,
                                                  void* queue);

  const staged_tuning& tuning() const noexcept { return tuning_; }
  // Where a copy of `bytes` in direction `d` running alone is cut: its
  // chunks' offsets, then `bytes` (staged_copy_starts over the cache such a
  // copy takes). Copies running at once on one budget cut smaller.
  std::vector<std::size_t> chunk_starts(std::size_t bytes, staged_direction d) const;
  device_step& step() const noexcept { return step_; }
  // The budget it shares (null: a team of its own).
  const std::shared_ptr<staging_budget>& budget() const noexcept { return budget_; }
  // The threads that copy its pieces: its own team's (tuning().threads), or
  // its budget's team, shared with the other copiers on it and grown with the
  // copies at once (staging_budget::threads; one copy takes at most
  // tuning().threads of them). What a result records as the team it ran with.
  unsigned team_threads() const noexcept;
  // The staging pool's statistics (handed_out_bytes is 0 whenever no copy runs).
  pool_stats staging_stats() const { return pool_.stats(); }
  // Returns the idle staging memory to the OS (pinning it again costs time).
  void trim_staging() { pool_.trim(); }
  // The registration cache given in the options (null: none).
  registration_cache* registrations() const noexcept { return registrations_; }

 private:
  // on_queue: the copy_*_on form (after_queue is then the caller's queue).
  staged_completion start(staged_direction dir, device_ref dev, std::size_t dev_offset, void* host, std::size_t bytes,
                          void* after_queue, bool on_queue = false);
  staged_completion start_on_queue(std::shared_ptr<detail::staged_job> job, void* queue);
  staged_completion submit(detail::staged_line& line, std::shared_ptr<detail::staged_job> job);
  // own_team: the line's copies run on a thread_team of its own (else on budget_).
  void open_line(detail::staged_line& line, bool own_team);
  void close_line(detail::staged_line& line) noexcept;
  void leader_loop(detail::staged_line& line);
  // llc: the cache the ring is cut from (staged_chunk_for).
  void cut(detail::staged_job& job, std::size_t llc) const;
  bool take_staging(detail::staged_job& job, caching_pool& pool);
  void give_staging(detail::staged_job& job, caching_pool& pool) noexcept;
  void run_job(detail::staged_job& job, detail::staged_line& line);
  void run_registered(detail::staged_job& job);
  void queue_dma(detail::staged_job& job, unsigned slot, std::size_t chunk);
  bool await_dma(detail::staged_job& job, unsigned slot, std::size_t chunk);
  // One piece of the job each (false: none left to take, or the copy was
  // given up): what a team's thread or a budget's runs in turn.
  bool fill_piece(detail::staged_job& job);
  void copy_piece(void* dst, const void* src, std::size_t bytes) const noexcept;
  bool empty_piece(detail::staged_job& job);

  device_step& step_;
  registration_cache* registrations_;
  staged_tuning tuning_;
  caching_pool pool_;
  // One lane: the chunks' DMAs in order on one queue of the copy engine.
  std::unique_ptr<staging_lane> lane_;
  std::mutex lane_mutex_;  // serializes queueing on the lane (waits need no lock)
  std::function<void()> thread_start_;
  // Set: it copies the pieces of the copies on line_, which has no team.
  std::shared_ptr<staging_budget> budget_;
  // The copies on the copier's lane (blocking, async, after a queue).
  std::unique_ptr<detail::staged_line> line_;
  // The copies on callers' queues (copy_*_on), their staging ring taken at
  // the call from queue_pool_, which frees nothing until the copier goes.
  // queue_mutex_ makes queue_line_ on first use and keeps each call's
  // queueing on the caller's queue and its place in queue_line_ in one order.
  // queue_line_ always has a team of its own, budget or not: a budget's
  // threads may all be inside a blocking copy's waits, and a gate on the
  // caller's queue that no thread opens would hold that queue for ever.
  std::mutex queue_mutex_;
  caching_pool queue_pool_;
  std::unique_ptr<detail::staged_line> queue_line_;
};
}  // namespace xfer::mem
