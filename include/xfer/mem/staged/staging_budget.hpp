#pragma once
// One staging budget for the staged copiers of several devices in one
// process (issue 37, item 4). Copiers with a calibrated team of threads each
// compete, when several devices copy at once, for the same CPUs and memory:
// each team is sized for a machine of its own, and the rings together no
// longer fit the last-level cache that one ring was sized to
// (docs/decisions/0008-shared-staging-budget.md).
// Copiers made with the same budget (staged_copier_options::budget) instead
// share:
//
//   - one team of threads: each thread takes its next piece from the next
//     copy in progress, in turn, so four copies at once each get a quarter of
//     the threads, and a copy alone gets all of them (up to its own tuning's
//     thread count: alone, a copier runs as it would with a team of its own).
//     The team grows with the copies running at once, to the sum of their
//     copiers' teams but no further than staged_cpu_share of the physical
//     cores: too few threads a copy lose, and threads beyond the cores
//     lose again (docs/decisions/0008-shared-staging-budget.md);
//   - one cache: a copy cuts its ring from the cache over the copies staging
//     at that moment (staged_chunk_for, staged_demotes), so the rings
//     together stay within the last-level cache as one ring does alone.
//
//   auto budget = xfer::mem::process_staging_budget();  // null: opted out
//   xfer::mem::staged_copier_options o;
//   o.budget = budget;
//   xfer::mem::staged_copier gpu0(*step0, o), gpu1(*step1, o);
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>
#include <xfer/mem/spin_wait.hpp>

namespace xfer::mem {

struct staging_budget_options {
  // The threads copying for every copier on the budget together, fixed. 0:
  // a team that grows (threads started, never stopped while the budget
  // lives): to the largest team a copier on it asks for (its tuning's
  // threads: the calibrated count for the CPUs this process may use) as
  // copiers join, so one device alone keeps the team it was calibrated with;
  // and, while several copies run at once, to the sum of their teams, up to
  // staged_cpu_share(cores) (grow_limit()).
  unsigned threads = 0;
  // The physical cores the team's growth is bounded by (for tests, which
  // must not depend on the machine's). Unset: physical_cores().
  std::optional<unsigned> cores;
  // The cache the staging rings of copies running at once share. Unset:
  // last_level_cache_bytes(); 0: unknown, no limit (as for one copier).
  std::optional<std::size_t> cache_bytes;
  // Called first on each of the budget's threads. Unset: the thread_start of
  // the copier whose joining started the thread (copiers of one program pass
  // the same: the sweep's block the stop signals).
  std::function<void()> thread_start;
};

class staging_budget {
 public:
  // Throws std::invalid_argument for more than max_staged_threads threads.
  explicit staging_budget(staging_budget_options options = {});
  // Stops and joins the threads. No run may be in progress: copiers hold
  // their budget by shared_ptr, so the last copier gone destroys it.
  ~staging_budget();
  staging_budget(const staging_budget&) = delete;
  staging_budget& operator=(const staging_budget&) = delete;

  // Threads started so far: options.threads where that is set, else the
  // larger of the largest reserve() and the most the copies at once have
  // asked for together (bounded by grow_limit()). What a copier on the budget
  // reports as its team (staged_copier::team_threads).
  unsigned threads() const;
  // What the team may grow to with several copies at once: options.threads
  // where set, else staged_cpu_share of the cores (at most max_staged_threads).
  unsigned grow_limit() const noexcept { return grow_limit_; }
  // Runs in progress now (copies whose pieces are being copied).
  unsigned runs() const;
  // options.cache_bytes, or the last-level cache's size.
  std::size_t cache_bytes() const noexcept { return cache_bytes_; }

  // A copier joining: starts threads until there are `threads` (unless
  // options.threads fixed the count), each calling thread_start first
  // (options.thread_start where set). Throws std::system_error where a
  // thread cannot start.
  void reserve(unsigned threads, const std::function<void()>& thread_start = {});

  // Runs piece() on up to `max_threads` threads at once, interleaved with
  // every other run in progress (a thread takes one piece, then goes on to
  // the next run in turn), until piece() returns false (no piece left to
  // take); returns once no thread is still inside it. While the run is the
  // only one, the calling thread takes pieces too, in one of the budget's
  // places (as a team's leader does); never are more than threads() threads
  // inside pieces at once. piece() must not throw. Any number of threads
  // may run at once: that is how copiers share the team. Where no thread
  // has started yet, starts max_threads first (reserve). Where the runs in
  // progress together may take more threads than the team has (the sum of
  // their max_threads), the team grows towards that sum, up to grow_limit(),
  // each new thread calling thread_start first (options.thread_start where
  // set); those threads stay for later runs.
  void run(unsigned max_threads, const std::function<bool()>& piece,
           const std::function<void()>& thread_start = {});

  // A copy's share of the cache while it holds staging: enter() counts it in
  // and returns cache_bytes() over the copies counted (itself included; 0
  // where the cache is unknown); leave() counts it out.
  std::size_t enter() noexcept;
  void leave() noexcept;

 private:
  struct work;
  void start_thread(std::function<void()> thread_start);  // under start_mutex_
  void grow_to(unsigned n, const std::function<void()>& thread_start);
  void loop(const std::function<void()>& thread_start);
  bool take(work& w, std::size_t at);  // under mutex_
  work* pick();                          // under mutex_
  bool serve(work& w);                   // false: no piece left

  const unsigned fixed_threads_;
  const unsigned grow_limit_;
  const std::size_t cache_bytes_;
  const std::function<void()> thread_start_;
  std::mutex start_mutex_;  // guards threads_ (starting and joining)
  std::vector<std::thread> threads_;
  std::atomic<unsigned> started_{0};
  mutable std::mutex mutex_;  // guards active_ and cursor_
  std::vector<work*> active_;
  std::atomic<unsigned> runs_{0};  // active_.size(), read without the lock
  std::size_t cursor_ = 0;
  // Bumped when a run comes or goes: what an idle thread sleeps on.
  std::atomic<std::uint64_t> changes_{0};
  std::atomic<bool> closing_{false};
  sleeper wake_;      // idle threads
  sleeper finished_;  // runs waiting for their last piece
  std::atomic<unsigned> busy_{0};     // threads inside a piece, callers helping included
  std::atomic<unsigned> staging_{0};  // copies between enter() and leave()
};

// The process's budget: one made on first use and shared by every copier
// made with it while any of them lives (the sweep's `staged` routes of every
// device, the Python package's copiers), with the installed inputs' options
// (settings.hpp: library_inputs::budget). Null where those say none
// (XFER_STAGED_SHARED=0): each copier then starts a team of its own, as
// before the budget. With XFER_STAGED_BUDGET_THREADS=<n> the team is n
// threads whatever the copiers' tunings and however many copy at once.
std::shared_ptr<staging_budget> process_staging_budget();

// A copy that never returns (a hung device) keeps the budget's threads that
// are inside it, and so may keep every other copy on that budget waiting.
// After this, process_staging_budget() makes a new budget for the copiers
// made later (those on `budget` stay on it); for a program that abandons
// such a copy (the Python Copier, after Ctrl-C). A no-op for another budget.
void retire_process_staging_budget(const staging_budget* budget) noexcept;

}  // namespace xfer::mem
