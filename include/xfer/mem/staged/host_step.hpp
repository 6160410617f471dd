#pragma once
// The host backend's device step: "device memory" is host memory (the
// device_ref's handle is a host pointer), and each lane is a thread of its
// own that runs the lane's queued copies in order, as a device's copy engine
// does. So the staged pipeline runs for real, asynchrony included, on any
// machine: CI tests it (and ThreadSanitizer watches it) with no GPU.
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <xfer/mem/host_resources.hpp>
#include <xfer/mem/resource.hpp>
#include <xfer/mem/staged/device_step.hpp>

namespace xfer::mem {

class host_step final : public device_step {
 public:
  // Staging comes from `staging` when given (it must outlive the step; tests
  // pass one that fails), else from page-aligned host memory owned by the step.
  explicit host_step(host_resource* staging = nullptr);
  ~host_step() override;

  std::string_view name() const noexcept override { return "host"; }
  std::string device_key() const override { return "host"; }
  host_resource& staging_memory() override { return *staging_; }
  std::unique_ptr<staging_lane> open_lane(unsigned slots) override;
  void plain_to_device(device_ref dst, std::size_t offset, const void* src, std::size_t bytes) override;
  void plain_to_host(void* dst, device_ref src, std::size_t offset, std::size_t bytes) override;
  device_ref allocate(std::size_t bytes) override;  // page-aligned host memory
  void deallocate(device_ref d) noexcept override;
  const void* host_view(device_ref d) const noexcept override { return d.handle; }
  // An in-order queue of CPU work standing in for a caller's device queue
  // (a CUDA stream), so the copier's queue path runs for real in CI: a
  // copy_*_on(..., q.handle()) waits for the tasks queued before it and
  // holds the tasks queued after it until the copy ends.
  class queue {
   public:
    ~queue();  // runs what is queued first
    queue(const queue&) = delete;
    queue& operator=(const queue&) = delete;
    void* handle() noexcept { return this; }
    void enqueue(std::function<void()> task);
    void finish();  // blocks until every task queued so far has run

   private:
    friend class host_step;
    explicit queue(host_step& s);
    void run();
    host_step& step_;
    std::mutex mutex_;
    std::condition_variable changed_;
    std::deque<std::function<void()>> tasks_;
    std::size_t queued_ = 0, done_ = 0;
    bool closing_ = false;
    std::thread worker_;  // last: starts once the rest is built
  };
  // The queue must not outlive the step.
  std::unique_ptr<queue> make_queue();
  // Lanes opened after this run their copies on `q` (null: each on a thread
  // of its own): one hardware queue that the copier's lanes share with a
  // caller's queue, as CUDA streams beyond CUDA_DEVICE_MAX_CONNECTIONS do,
  // so a test can show that no copy waits behind its own waits. `q` must
  // outlive those lanes.
  void run_lanes_on(queue* q);

  // mark: a queue of this step's is waited for (on the host: there is no
  // device); any other value has no work to wait for.
  std::unique_ptr<queue_mark> mark(void* queue) override;
  // A copy on a caller's queue as a CUDA stream gets it (queue_lane): each
  // chunk's DMA a task on the queue that waits for its gate, copies and
  // raises its completion; a copy to the host ends with a task waiting for
  // the final gate. So CI runs the copier's side of that order for real.
  // A value that is no queue of this step's gets an in-order engine of the
  // lane's own (nothing of the caller's to order after).
  std::unique_ptr<queue_lane> open_queue_lane(void* queue, const queue_plan& plan) override;
  // Queue lanes opened and not yet released (for tests: after every copy, 0).
  std::size_t holds_held() const noexcept;

  // Registration, emulated: nothing is pinned, but the step keeps a table
  // of what was registered and refuses what a driver refuses (a range
  // overlapping a registration, as cudaHostRegister's "already registered";
  // more than the limit, as the locked-memory limit, ulimit -l), so CI tests
  // the registration cache's whole policy.
  std::string registration_unsupported() const override { return {}; }
  void register_host(void* p, std::size_t bytes) override;
  void unregister_host(void* p) noexcept override;
  int registered(const void* p, std::size_t bytes) const noexcept override;
  // The emulated locked-memory limit (default: none).
  void set_registration_limit(std::size_t bytes);
  std::size_t registered_bytes() const;
  std::size_t registrations() const;

 private:
  bool known(void* q);
  mutable std::mutex registry_mutex_;
  std::map<const unsigned char*, std::size_t> registry_;  // base -> bytes
  std::size_t registry_bytes_ = 0;
  std::size_t registry_limit_ = static_cast<std::size_t>(-1);
  std::unique_ptr<host_resource> owned_staging_;
  host_resource* staging_;
  aligned_resource device_memory_;
  std::mutex queues_mutex_;
  std::set<void*> queues_;  // this step's live queues: only those are dereferenced
  queue* lanes_on_ = nullptr;
  std::shared_ptr<std::atomic<std::size_t>> holds_ = std::make_shared<std::atomic<std::size_t>>(0);
};

}  // namespace xfer::mem
