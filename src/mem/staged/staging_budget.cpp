#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <fmt/format.h>
#include <xfer/mem/settings.hpp>
#include <xfer/mem/staged/staging_budget.hpp>
#include <xfer/mem/staged/tuning.hpp>

namespace xfer::mem {

// One run: the piece it copies, how many threads may be inside it at once,
// how many are, and whether a thread has found no piece left. `busy` only
// grows under the budget's mutex (pick), so a run's owner that sees it at 0
// under that mutex knows no thread is or will be inside its piece.
struct staging_budget::work {
  const std::function<bool()>* piece;
  unsigned cap;
  std::atomic<unsigned> busy{0};
  std::atomic<bool> drained{false};
};

namespace {

unsigned checked_threads(unsigned n) {
  if (n > max_staged_threads)
    throw std::invalid_argument(fmt::format("staging budget: {} threads is more than {}", n, max_staged_threads));
  return n;
}

unsigned grow_limit_for(unsigned fixed, const std::optional<unsigned>& cores) {
  if (fixed) return fixed;
  return std::min(staged_cpu_share(cores ? *cores : physical_cores()), max_staged_threads);
}

}  // namespace

staging_budget::staging_budget(staging_budget_options o)
    : fixed_threads_(checked_threads(o.threads)),
      grow_limit_(grow_limit_for(fixed_threads_, o.cores)),
      cache_bytes_(o.cache_bytes ? *o.cache_bytes : last_level_cache_bytes()),
      thread_start_(std::move(o.thread_start)) {
  if (fixed_threads_) reserve(fixed_threads_);
}

staging_budget::~staging_budget() {
  closing_.store(true);
  wake_.wake();
  std::lock_guard lock(start_mutex_);
  for (auto& t : threads_) t.join();
}

unsigned staging_budget::threads() const { return started_.load(); }

unsigned staging_budget::runs() const { return runs_.load(); }

void staging_budget::reserve(unsigned n, const std::function<void()>& thread_start) {
  std::lock_guard lock(start_mutex_);
  // A fixed team is started whole by the constructor; a growing one up to
  // the largest team asked for.
  const unsigned want = fixed_threads_ ? fixed_threads_ : std::min(n, max_staged_threads);
  while (threads_.size() < want) start_thread(thread_start_ ? thread_start_ : thread_start);
}

// Several runs at once: up to what they may take together, within the limit
// (never past it, where one copier's own team already is).
void staging_budget::grow_to(unsigned n, const std::function<void()>& thread_start) {
  if (fixed_threads_ || started_.load() >= std::min(n, grow_limit_)) return;
  std::lock_guard lock(start_mutex_);
  while (threads_.size() < std::min(n, grow_limit_)) start_thread(thread_start_ ? thread_start_ : thread_start);
}

void staging_budget::start_thread(std::function<void()> thread_start) {
  threads_.emplace_back([this, start = std::move(thread_start)] { loop(start); });
  started_.fetch_add(1);
}

// Under mutex_: whether `w` may take one more thread now (a piece left,
// room under its cap and under the budget's), and if so its counts taken.
bool staging_budget::take(work& w, std::size_t at) {
  if (w.drained.load() || w.busy.load() >= w.cap || busy_.load() >= started_.load()) return false;
  w.busy.fetch_add(1);
  busy_.fetch_add(1);
  cursor_ = at + 1;  // the next pick starts after it: the runs take turns
  return true;
}

// Under mutex_: the next run after the last one served that may take a thread.
staging_budget::work* staging_budget::pick() {
  const std::size_t n = active_.size();
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t at = (cursor_ + i) % n;
    if (take(*active_[at], at)) return active_[at];
  }
  return nullptr;
}

void staging_budget::loop(const std::function<void()>& thread_start) {
  if (thread_start) thread_start();
  for (;;) {
    work* w = nullptr;
    std::uint64_t seen = 0;
    {
      std::lock_guard lock(mutex_);
      seen = changes_.load();
      w = pick();
    }
    if (!w) {
      // Nothing to take (no run, or each full or finished): until a run
      // comes or goes.
      wake_.wait([&] { return closing_.load() || changes_.load() != seen; });
      if (closing_.load()) return;
      continue;
    }
    // Pieces of it while it is the only run (no turn to give, and no lock
    // per piece: a copy alone runs as on a team of its own), else one.
    if (!serve(*w)) w->drained.store(true);
    busy_.fetch_sub(1);
    // After this the run may be gone: only the budget's own sleeper is
    // touched (a run's owner rechecks its condition when woken).
    if (w->busy.fetch_sub(1) == 1) finished_.wake();
  }
}

bool staging_budget::serve(work& w) {
  bool more = true;
  do more = (*w.piece)();
  while (more && runs_.load(std::memory_order_relaxed) == 1);
  return more;
}

void staging_budget::run(unsigned max_threads, const std::function<bool()>& piece,
                         const std::function<void()>& thread_start) {
  if (started_.load() == 0) reserve(max_threads, thread_start);
  work w{&piece, std::max(1u, max_threads)};
  unsigned asked = 0;  // what the runs in progress may take together
  {
    std::lock_guard lock(mutex_);
    active_.push_back(&w);
    runs_.store(static_cast<unsigned>(active_.size()));
    for (const work* a : active_) asked += a->cap;
  }
  changes_.fetch_add(1);
  wake_.wake();
  // After the wake, so the threads already there take pieces while the
  // new ones start; a new thread finds the runs in progress on its own.
  if (asked > started_.load()) grow_to(asked, thread_start);
  // Alone, the caller copies too, as a team's leader does, on one of the
  // budget's places (the budget's threads take the others): a copy alone
  // then runs as with a team of its own, with no hand-off to wake the
  // caller but the last thread's. Once another run is in, it steps back, so
  // the budget's threads alone take turns between the runs.
  bool helping = false;
  {
    std::lock_guard lock(mutex_);
    helping = active_.size() == 1 && take(w, 0);
  }
  if (helping) {
    if (!serve(w)) w.drained.store(true);
    busy_.fetch_sub(1);
    w.busy.fetch_sub(1);
    changes_.fetch_add(1);  // its place is free: an idle thread may take it
    wake_.wake();
  }
  for (;;) {
    finished_.wait([&] { return w.drained.load() && w.busy.load() == 0; });
    std::lock_guard lock(mutex_);
    // A thread may have picked it between the check and the lock (and will
    // find no piece): wait for that one too.
    if (w.busy.load() != 0) continue;
    const auto it = std::find(active_.begin(), active_.end(), &w);
    const auto at = static_cast<std::size_t>(it - active_.begin());
    active_.erase(it);
    runs_.store(static_cast<unsigned>(active_.size()));
    if (cursor_ > at) --cursor_;  // the turn stays with the run that had it
    break;
  }
  changes_.fetch_add(1);
  wake_.wake();
}

std::size_t staging_budget::enter() noexcept {
  const unsigned copies = staging_.fetch_add(1) + 1;
  return cache_bytes_ / copies;
}

void staging_budget::leave() noexcept { staging_.fetch_sub(1); }

namespace {

// Kept while a copier holds it: a program whose copiers are all gone has no
// budget threads left either, and the next copier starts a new one.
std::mutex process_budget_mutex;
std::weak_ptr<staging_budget> process_budget;

}  // namespace

std::shared_ptr<staging_budget> process_staging_budget() {
  const auto in = current_inputs();
  if (!in->budget) return nullptr;
  staging_budget_options o = *in->budget;
  std::lock_guard lock(process_budget_mutex);
  if (auto b = process_budget.lock()) return b;
  auto b = std::make_shared<staging_budget>(std::move(o));
  process_budget = b;
  return b;
}

void retire_process_staging_budget(const staging_budget* budget) noexcept {
  std::lock_guard lock(process_budget_mutex);
  if (process_budget.lock().get() == budget) process_budget.reset();
}

}  // namespace xfer::mem
