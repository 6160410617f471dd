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
  explicit host_lane(unsigned slots) : marks_(slots, 0), engine_([this] { run(); }) {}
  ~host_lane() override {
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
  return std::make_unique<host_lane>(slots);
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

struct host_hold final : queue_hold {
  explicit host_hold(std::shared_ptr<std::atomic<std::size_t>> count) : held(std::move(count)) { ++*held; }
  ~host_hold() override { release(); }
  void release() noexcept override {
    if (released.exchange(true)) return;
    gate->raise();
    --*held;
  }
  std::shared_ptr<host_flag> gate = std::make_shared<host_flag>();
  std::shared_ptr<std::atomic<std::size_t>> held;
  std::atomic<bool> released{false};
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

std::unique_ptr<queue_hold> host_step::hold(void* q) {
  auto h = std::make_unique<host_hold>(holds_);
  if (known(q)) static_cast<queue*>(q)->enqueue([g = h->gate] { g->wait(); });
  return h;
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
