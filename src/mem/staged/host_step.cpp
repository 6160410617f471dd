#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <iterator>
#include <mutex>
#include <thread>
#include <vector>
#include <fmt/format.h>
#include <xfer/mem/host_resources.hpp>
#include <xfer/mem/staged/host_step.hpp>

namespace xfer::mem {

namespace {

// A copy engine of its own: one thread running this lane's copies in queue
// order, so the copier's thread really does return from to_device() before
// the bytes have moved, as with a device.
class host_lane final : public staging_lane {
 public:
  // shared: a queue whose thread runs this lane's copies too, in the order
  // they were queued there (null: the lane's own thread).
  host_lane(unsigned slots, host_step::queue* shared) : shared_(shared), marks_(slots, 0), engine_([this] { run(); }) {}
  ~host_lane() override {
    drain();  // a shared queue's tasks still to run use this lane
    {
      std::lock_guard lock(mutex_);
      closing_ = true;
    }
    work_.notify_one();
    engine_.join();
  }

  void to_device(const void* staging, device_ref dst, std::size_t offset, std::size_t bytes) override {
    push(static_cast<unsigned char*>(dst.handle) + offset, staging, bytes);
  }
  void to_host(void* staging, device_ref src, std::size_t offset, std::size_t bytes) override {
    push(staging, static_cast<const unsigned char*>(src.handle) + offset, bytes);
  }
  void record(unsigned slot) override {
    std::lock_guard lock(mutex_);
    marks_.at(slot) = queued_;
  }
  void wait(unsigned slot) override {
    std::unique_lock lock(mutex_);
    const std::uint64_t mark = marks_.at(slot);
    done_.wait(lock, [&] { return completed_ >= mark; });
  }
  void drain() noexcept override {
    std::unique_lock lock(mutex_);
    done_.wait(lock, [&] { return completed_ >= queued_; });
  }
  // No device to wait on it: the copier's thread waits (before any DMA of the copy).
  void wait_for(const queue_mark& m) override { const_cast<queue_mark&>(m).wait(); }

 private:
  struct op {
    void* dst;
    const void* src;
    std::size_t bytes;
  };
  void push(void* dst, const void* src, std::size_t bytes) {
    if (shared_) {
      {
        std::lock_guard lock(mutex_);
        ++queued_;
      }
      shared_->enqueue([this, dst, src, bytes] {
        std::memcpy(dst, src, bytes);
        {
          std::lock_guard lock(mutex_);
          ++completed_;
        }
        done_.notify_all();
      });
      return;
    }
    {
      std::lock_guard lock(mutex_);
      ops_.push_back({dst, src, bytes});
      ++queued_;
    }
    work_.notify_one();
  }
  void run() {
    std::deque<op> batch;
    for (;;) {
      {
        std::unique_lock lock(mutex_);
        work_.wait(lock, [&] { return closing_ || !ops_.empty(); });
        if (ops_.empty()) return;
        batch.swap(ops_);  // everything queued so far, one wake-up
      }
      for (const op& o : batch) std::memcpy(o.dst, o.src, o.bytes);
      {
        std::lock_guard lock(mutex_);
        completed_ += batch.size();
      }
      batch.clear();
      done_.notify_all();
    }
  }

  host_step::queue* shared_;
  std::mutex mutex_;
  std::condition_variable work_, done_;
  std::deque<op> ops_;
  std::uint64_t queued_ = 0, completed_ = 0;
  std::vector<std::uint64_t> marks_;
  bool closing_ = false;
  std::thread engine_;  // last: starts once the rest is built
};

}  // namespace

host_step::host_step(host_resource* staging) {
  if (!staging) {
    owned_staging_ = std::make_unique<aligned_resource>();
    staging = owned_staging_.get();
  }
  staging_ = staging;
}

host_step::~host_step() = default;

std::unique_ptr<staging_lane> host_step::open_lane(unsigned slots) {
  if (slots == 0) throw device_step_error("host step: a lane needs at least one slot");
  std::lock_guard lock(queues_mutex_);
  return std::make_unique<host_lane>(slots, lanes_on_);
}

device_ref host_step::allocate(std::size_t bytes) {
  try {
    return {device_memory_.allocate(bytes ? bytes : 1, 4096), bytes};
  } catch (const std::exception& e) {
    throw device_step_error(fmt::format("host step: allocating {} bytes of \"device\" memory: {}", bytes, e.what()));
  }
}

// ---- the caller's queue ------------------------------------------------------

host_step::queue::queue(host_step& s) : step_(s), worker_([this] { run(); }) {}

host_step::queue::~queue() {
  {
    std::lock_guard lock(mutex_);
    closing_ = true;
  }
  changed_.notify_all();
  worker_.join();
  std::lock_guard lock(step_.queues_mutex_);
  step_.queues_.erase(this);
}

void host_step::queue::enqueue(std::function<void()> task) {
  {
    std::lock_guard lock(mutex_);
    tasks_.push_back(std::move(task));
    ++queued_;
  }
  changed_.notify_all();
}

void host_step::queue::finish() {
  std::unique_lock lock(mutex_);
  const std::size_t want = queued_;
  changed_.wait(lock, [&] { return done_ >= want; });
}

void host_step::queue::run() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [&] { return closing_ || !tasks_.empty(); });
      if (tasks_.empty()) return;
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
    {
      std::lock_guard lock(mutex_);
      ++done_;
    }
    changed_.notify_all();
  }
}

void host_step::run_lanes_on(queue* q) {
  std::lock_guard lock(queues_mutex_);
  lanes_on_ = q;
}

std::unique_ptr<host_step::queue> host_step::make_queue() {
  std::unique_ptr<queue> q(new queue(*this));
  std::lock_guard lock(queues_mutex_);
  queues_.insert(q.get());
  return q;
}

bool host_step::known(void* q) {
  std::lock_guard lock(queues_mutex_);
  return queues_.count(q) != 0;
}

namespace {

// A flag the host waits on: what a device would do with an event or a word
// of memory.
struct host_flag {
  std::mutex mutex;
  std::condition_variable changed;
  bool set = false;
  void raise() {
    {
      std::lock_guard lock(mutex);
      set = true;
    }
    changed.notify_all();
  }
  void wait() {
    std::unique_lock lock(mutex);
    changed.wait(lock, [&] { return set; });
  }
};

struct host_mark final : queue_mark {
  std::shared_ptr<host_flag> reached = std::make_shared<host_flag>();
  void wait() override { reached->wait(); }
};

// What a queue lane's tasks share with it: they may run after the lane has
// given up on the copy (released), never after its drain.
struct lane_gates {
  explicit lane_gates(std::size_t chunks)
      : gate(std::make_unique<host_flag[]>(chunks)), done(std::make_unique<host_flag[]>(chunks)) {}
  std::unique_ptr<host_flag[]> gate, done;
  host_flag last;  // device to host: the final gate
};

class host_queue_lane final : public queue_lane {
 public:
  host_queue_lane(host_step::queue& q, std::unique_ptr<host_step::queue> own, const queue_plan& plan,
                  std::shared_ptr<std::atomic<std::size_t>> count)
      : own_(std::move(own)),
        dir_(plan.dir),
        dev_offset_(plan.dev_offset),
        starts_(plan.starts.begin(), plan.starts.end()),
        staging_(plan.staging.begin(), plan.staging.end()),
        opened_(staging_.size()),
        gates_(std::make_shared<lane_gates>(chunks())),
        count_(std::move(count)) {
    if (staging_.empty() || starts_.size() < 2) throw device_step_error("host step: a copy of no chunks");
    for (auto& o : opened_) o = -1;
    ++*count_;
    try {
      queue_tasks(q, static_cast<unsigned char*>(plan.dev.handle) + dev_offset_);
    } catch (...) {
      release();  // the tasks queued so far run through
      throw;
    }
  }
  ~host_queue_lane() override {
    release();
    own_.reset();  // runs what is left: every gate is open
  }

  void to_device(const void* staging, device_ref, std::size_t offset, std::size_t bytes) override {
    open(staging, offset, bytes);
  }
  void to_host(void* staging, device_ref, std::size_t offset, std::size_t bytes) override {
    open(staging, offset, bytes);
  }
  void record(unsigned) override {}
  void wait(unsigned slot) override {
    const std::int64_t c = opened_.at(slot).load();
    if (c >= 0) gates_->done[c].wait();
  }
  void drain() noexcept override {
    release();
    for (std::size_t c = 0; c < chunks(); ++c) gates_->done[c].wait();
  }
  void release() noexcept override {
    if (released_.exchange(true)) return;
    for (std::size_t c = 0; c < chunks(); ++c) gates_->gate[c].raise();
    gates_->last.raise();
    --*count_;
  }

 private:
  // Each chunk's DMA a task behind its gate, in chunk order.
  void queue_tasks(host_step::queue& q, unsigned char* dev) {
    for (std::size_t c = 0; c < chunks(); ++c) {
      unsigned char* at = dev + starts_[c];
      auto* slot = static_cast<unsigned char*>(staging_[c % staging_.size()]);
      const std::size_t n = starts_[c + 1] - starts_[c];
      q.enqueue([g = gates_, c, at, slot, n, to_device = dir_ == staged_direction::to_device] {
        g->gate[c].wait();
        if (to_device)
          std::memcpy(at, slot, n);
        else
          std::memcpy(slot, at, n);
        g->done[c].raise();
      });
    }
    if (dir_ == staged_direction::to_host) q.enqueue([g = gates_] { g->last.wait(); });
  }
  std::size_t chunks() const noexcept { return starts_.size() - 1; }
  void open(const void* staging, std::size_t offset, std::size_t bytes) {
    const std::size_t c = planned_chunk(starts_, staging_, dev_offset_, staging, offset, bytes);
    opened_[c % staging_.size()] = static_cast<std::int64_t>(c);
    gates_->gate[c].raise();
  }
  std::unique_ptr<host_step::queue> own_;
  staged_direction dir_;
  std::size_t dev_offset_;
  std::vector<std::size_t> starts_;
  std::vector<void*> staging_;
  std::vector<std::atomic<std::int64_t>> opened_;  // per slot, the chunk opened last
  std::shared_ptr<lane_gates> gates_;
  std::shared_ptr<std::atomic<std::size_t>> count_;
  std::atomic<bool> released_{false};
};

}  // namespace

std::unique_ptr<queue_mark> host_step::mark(void* q) {
  auto m = std::make_unique<host_mark>();
  if (known(q))
    static_cast<queue*>(q)->enqueue([f = m->reached] { f->raise(); });
  else
    m->reached->raise();  // no work of the caller's to wait for
  return m;
}

std::unique_ptr<queue_lane> host_step::open_queue_lane(void* q, const queue_plan& plan) {
  std::unique_ptr<queue> own;
  if (!known(q)) own = make_queue();
  queue& on = own ? *own : *static_cast<queue*>(q);
  return std::make_unique<host_queue_lane>(on, std::move(own), plan, holds_);
}

std::size_t host_step::holds_held() const noexcept { return holds_->load(); }

void host_step::deallocate(device_ref d) noexcept {
  if (d.handle) device_memory_.deallocate(d.handle, d.bytes ? d.bytes : 1, 4096);
}

void host_step::plain_to_device(device_ref dst, std::size_t offset, const void* src, std::size_t bytes) {
  std::memmove(static_cast<unsigned char*>(dst.handle) + offset, src, bytes);
}

void host_step::plain_to_host(void* dst, device_ref src, std::size_t offset, std::size_t bytes) {
  std::memmove(dst, static_cast<const unsigned char*>(src.handle) + offset, bytes);
}

// ---- registration, emulated ----------------------------------------------------

void host_step::register_host(void* p, std::size_t bytes) {
  const auto* base = static_cast<const unsigned char*>(p);
  std::lock_guard lock(registry_mutex_);
  if (registry_bytes_ > registry_limit_ || bytes > registry_limit_ - registry_bytes_)
    throw device_step_error(fmt::format(
        "host step: registering {} bytes at {}: over the locked-memory limit of {} bytes ({} registered; emulated "
        "ulimit -l)",
        bytes, p, registry_limit_, registry_bytes_));
  // The first registration at or after base, and the one before it: either
  // may overlap [base, base + bytes).
  auto after = registry_.lower_bound(base);
  const bool hits_after = after != registry_.end() && after->first < base + bytes;
  const bool hits_before = after != registry_.begin() && std::prev(after)->first + std::prev(after)->second > base;
  if (hits_after || hits_before)
    throw device_step_error(
        fmt::format("host step: registering {} bytes at {}: part of the range is already registered", bytes, p));
  registry_.emplace(base, bytes);
  registry_bytes_ += bytes;
}

void host_step::unregister_host(void* p) noexcept {
  std::lock_guard lock(registry_mutex_);
  if (auto it = registry_.find(static_cast<const unsigned char*>(p)); it != registry_.end()) {
    registry_bytes_ -= it->second;
    registry_.erase(it);
  }
}

int host_step::registered(const void* p, std::size_t bytes) const noexcept {
  const auto* at = static_cast<const unsigned char*>(p);
  std::lock_guard lock(registry_mutex_);
  auto it = registry_.upper_bound(at);
  if (it == registry_.begin()) return 0;
  --it;
  return at + bytes <= it->first + it->second ? 1 : 0;
}

void host_step::set_registration_limit(std::size_t bytes) {
  std::lock_guard lock(registry_mutex_);
  registry_limit_ = bytes;
}

std::size_t host_step::registered_bytes() const {
  std::lock_guard lock(registry_mutex_);
  return registry_bytes_;
}

std::size_t host_step::registrations() const {
  std::lock_guard lock(registry_mutex_);
  return registry_.size();
}

}  // namespace xfer::mem
