#pragma once
// One staged copy in flight (staged_job) and its optional trace: the state
// the copier's threads share, apart from the copier that drives it
// (staged_copier.cpp).
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>
#include <xfer/mem/settings.hpp>
#include <xfer/mem/spin_wait.hpp>
#include <xfer/mem/staged/staged_copier.hpp>
#include <xfer/mem/thread_team.hpp>

namespace xfer::mem {

namespace detail {

// The installed inputs' staged_trace (settings.hpp; XFER_STAGED_TRACE=<file>):
// each copy appends one line when it is gone,
// saying when each of its stages began, in microseconds after its
// submission. For finding where a copy's time goes beyond its bytes (issue
// 15: a 64 MiB copy took about 0.5 ms longer than its chunks need); off,
// it costs one branch per stage.
struct staged_trace {
  enum mark : unsigned { submitted, picked_up, staging_ready, first_piece, first_dma, pieces_done, dmas_done,
                         completed, caller_woke, marks };
  // Empty: off. Read when the copy is made.
  const std::string file = current_inputs()->staged_trace;
  const bool on = !file.empty();
  std::array<std::atomic<std::int64_t>, marks> at{};
  // Per thread (a small id of its own, up to 64): when it took its first
  // piece of this copy and how many it took. Says whether the whole team
  // worked on a copy, and how late each thread joined.
  static constexpr unsigned max_threads = 64;
  std::array<std::atomic<std::int64_t>, max_threads> joined{};
  std::array<std::atomic<std::uint32_t>, max_threads> pieces{};
  static unsigned thread_id() noexcept {
    static std::atomic<unsigned> next{0};
    thread_local const unsigned id = next.fetch_add(1, std::memory_order_relaxed) % max_threads;
    return id;
  }
  void piece_taken() noexcept {
    if (!on) return;
    const unsigned i = thread_id();
    std::int64_t none = 0;
    joined[i].compare_exchange_strong(none, std::chrono::steady_clock::now().time_since_epoch().count(),
                                      std::memory_order_relaxed);
    pieces[i].fetch_add(1, std::memory_order_relaxed);
  }
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
    std::FILE* f = std::fopen(file.c_str(), "a");
    if (!f) return;
    static constexpr const char* names[] = {"submitted", "picked_up", "staging_ready", "first_piece", "first_dma",
                                            "pieces_done", "dmas_done", "completed", "caller_woke"};
    std::fprintf(f, "%s %zu bytes %zu chunks", to_device ? "h2d" : "d2h", bytes, chunks);
    const auto t0 = at[submitted].load();
    for (unsigned i = 1; i < marks; ++i) {
      const auto t = at[i].load();
      if (t) std::fprintf(f, " %s=%.1f", names[i], static_cast<double>(t - t0) / 1e3);
    }
    // "joined=us:pieces,..." per thread that took a piece, in id order.
    const char* sep = " joined=";
    for (unsigned i = 0; i < max_threads; ++i)
      if (const auto n = pieces[i].load()) {
        std::fprintf(f, "%s%.1f:%u", sep, static_cast<double>(joined[i].load() - t0) / 1e3, n);
        sep = ",";
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
  bool demote = false;  // host to device: demote each piece to the shared cache (staged_demotes)
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
  // copy_*_on: the copy's DMAs on the caller's queue (null: on the copier's
  // lane). Released by the copier before the staging goes back.
  std::unique_ptr<queue_lane> queue;
  std::mutex queue_mutex;  // serializes the pipeline's queueing calls on it, as lane_mutex_ does

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
  // The next piece a thread copies: piece k of chunk c, through slot s.
  // False once every piece is claimed or the copy was given up. Both
  // directions claim pieces in this one order.
  struct piece_claim {
    std::size_t c = 0, k = 0;
    unsigned s = 0;
  };
  bool claim(piece_claim& p) {
    if (abort.load(std::memory_order_relaxed)) return false;
    const std::size_t q = next.fetch_add(1, std::memory_order_relaxed);
    if (q >= pieces) return false;
    if (q == 0) trace.note(staged_trace::first_piece);
    trace.piece_taken();
    p.c = q / pieces_per_chunk;
    p.k = q % pieces_per_chunk;
    p.s = static_cast<unsigned>(p.c % slots);
    return true;
  }
  void complete() {
    trace.note(staged_trace::completed);
    finished.store(true);
    finished_waiters.wake();
  }
};

// A leader thread taking copies in order and the team of threads that
// copies each (the leader is its member 0).
struct staged_line {
  // Null: the copier's staging budget copies the pieces (staged_copier_options::budget).
  std::unique_ptr<thread_team> team;
  std::mutex mutex;  // guards queue and closing
  std::deque<std::shared_ptr<staged_job>> queue;
  bool closing = false;
  // What the leader polls (and sleeps on) for the next copy, without the lock.
  std::atomic<std::size_t> length{0};
  std::atomic<bool> closing_flag{false};
  sleeper queued;
  std::thread leader;
};

}  // namespace detail

}  // namespace xfer::mem
