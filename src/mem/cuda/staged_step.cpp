// The CUDA device step: a lane is a stream plus an event per slot. Every call
// goes through the api strategy (api.hpp), so the runtime and the driver
// step are this one class.
#include <xfer/mem/cuda/staged_step.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>
#include <fmt/format.h>

#include "api.hpp"
#include "resources.hpp"

namespace xfer::cuda {
namespace {

using mem::as_step_error;

class cuda_step;

// Pinned memory allocated with the step's device current on the allocating
// thread (the copier's leader, which is not the thread that made the step):
// the driver API has no context on a fresh thread.
class current_device_resource final : public mem::host_resource {
 public:
  current_device_resource(cuda_step& s, mem::host_resource& inner) : step_(s), inner_(inner) {}
  std::string_view kind() const noexcept override { return inner_.kind(); }
  mem::properties props() const noexcept override { return inner_.props(); }
  std::size_t max_alignment() const noexcept override { return inner_.max_alignment(); }
  std::size_t natural_alignment() const noexcept override { return inner_.natural_alignment(); }
  std::string describe() const override { return inner_.describe(); }

 private:
  void* do_allocate(std::size_t bytes, std::size_t alignment) override;
  void do_deallocate(void* p, std::size_t bytes, std::size_t alignment) noexcept override;
  cuda_step& step_;
  mem::host_resource& inner_;
};

class cuda_step final : public mem::device_step {
 public:
  cuda_step(std::unique_ptr<api> a, int device) : api_(std::move(a)), device_(device) {
    const int n = api_->device_count();
    if (device < 0 || device >= n)
      throw std::runtime_error(fmt::format("CUDA device {} does not exist ({} device{})", device, n, n == 1 ? "" : "s"));
    make_current();
    const auto attrs = api_->attributes(device);
    key_ = fmt::format("{} {}", attrs.pci_bus_id, attrs.name);
    driver_ = fmt::format("CUDA driver {}", api_->driver_version());
    name_ = fmt::format("cuda-{}", api_->name());
  }

  std::string_view name() const noexcept override { return name_; }
  std::string device_key() const override { return key_; }
  std::string driver() const override { return driver_; }
  mem::host_resource& staging_memory() override { return staging_; }
  std::unique_ptr<mem::staging_lane> open_lane(unsigned slots) override;
  std::unique_ptr<mem::queue_mark> mark(void* queue) override;
  std::unique_ptr<mem::queue_lane> open_queue_lane(void* queue, const mem::queue_plan& plan) override;

  void plain_to_device(mem::device_ref dst, std::size_t offset, const void* src, std::size_t bytes) override {
    as_step_error("plain host-to-device copy", [&] {
      make_current();
      api_->copy(static_cast<unsigned char*>(dst.handle) + offset, src, bytes, copy_kind::h2d);
    });
  }
  void plain_to_host(void* dst, mem::device_ref src, std::size_t offset, std::size_t bytes) override {
    as_step_error("plain device-to-host copy", [&] {
      make_current();
      api_->copy(dst, static_cast<const unsigned char*>(src.handle) + offset, bytes, copy_kind::d2h);
    });
  }
  mem::device_ref allocate(std::size_t bytes) override {
    return as_step_error("device allocation", [&] {
      make_current();
      return mem::device_ref{api_->device_alloc(bytes ? bytes : 1), bytes};
    });
  }
  void deallocate(mem::device_ref d) noexcept override {
    if (!d.handle) return;
    try {
      make_current();
    } catch (...) {
      // Freeing on whatever context is current is the best left to do.
    }
    api_->device_free(d.handle);
  }

  // Registration (the registration cache). The buffer's first copy, staged,
  // has faulted in every page already, so the pinned-fast kind's trick
  // (threads faulting pages in ahead of the registration) has nothing left
  // to overlap: one registration of the whole range is the fast path here.
  std::string registration_unsupported() const override { return {}; }
  void register_host(void* p, std::size_t bytes) override {
    as_step_error(fmt::format("registering {} bytes at {}", bytes, p), [&] {
      make_current();
      api_->host_register(p, bytes);
    });
  }
  void unregister_host(void* p) noexcept override {
    try {
      make_current();
    } catch (...) {
      // A registration is the driver's, whatever context is current.
    }
    api_->host_unregister(p);
  }
  int registered(const void* p, std::size_t bytes) const noexcept override {
    // Both ends: a registration covering the first byte but not the last
    // is another (a smaller one made since at the same address).
    const int first = api_->host_registered(p);
    const int last = api_->host_registered(static_cast<const unsigned char*>(p) + (bytes ? bytes - 1 : 0));
    if (first == 0 || last == 0) return 0;
    return first == 1 && last == 1 ? 1 : -1;
  }

  api& cuda() noexcept { return *api_; }
  // Unique per step in this process (never 0).
  std::uint64_t serial() const noexcept { return serial_; }
  // The step's device current on the calling thread. The api's make_current
  // keeps state (the driver's context table), so calls are serialized.
  void make_current() {
    std::lock_guard lock(current_mutex_);
    api_->make_current(device_);
  }
  // Throws foreign_queue_error unless `queue` is a stream of this step's
  // device (the special handles CU_STREAM_LEGACY and CU_STREAM_PER_THREAD
  // are the current context's: this device's once made current).
  void check_queue(void* queue);
  // Runs f(ops) with the driver API's stream operations (the runtime API
  // has no cuStreamWaitValue32; streams are the same objects in both), the
  // device current for it, one thread at a time.
  template <class F>
  auto with_stream_ops(F&& f) {
    std::lock_guard lock(ops_mutex_);
    if (!ops_ && api_->name() != "driver") ops_ = make_driver_api();
    api& ops = ops_ ? *ops_ : *api_;
    if (ops_) {
      ops.make_current(device_);
    } else {
      make_current();
    }
    return f(ops);
  }

 private:
  std::unique_ptr<api> api_;
  int device_;
  std::string key_, name_, driver_;
  std::mutex current_mutex_;
  std::mutex ops_mutex_;
  std::unique_ptr<api> ops_;  // a driver api, for a runtime step's stream operations
  static inline std::atomic<std::uint64_t> steps_made_{0};
  const std::uint64_t serial_ = ++steps_made_;
  // The ring's buffers pinned the fast way (issue 15, item 4: huge pages
  // faulted in by several threads, then registered, several times faster
  // than cudaHostAlloc; docs/decisions/0009-fast-pinning.md), so a copier's
  // first copy waits less.
  fast_pinned_resource pinned_{*api_};
  current_device_resource staging_{*this, pinned_};
};

void* current_device_resource::do_allocate(std::size_t bytes, std::size_t alignment) {
  step_.make_current();
  return inner_.allocate(bytes, alignment);
}

void current_device_resource::do_deallocate(void* p, std::size_t bytes, std::size_t alignment) noexcept {
  try {
    step_.make_current();
  } catch (...) {
  }
  inner_.deallocate(p, bytes, alignment);
}

// Several of the copier's threads call a lane, none of them the thread that
// made it: each needs the step's device current once. A thread remembers
// the last step it made current by the step's serial number (an address
// could be reused by a later step of another device).
void current_on_this_thread(cuda_step& step) {
  thread_local std::uint64_t current_step = 0;
  if (current_step == step.serial()) return;
  step.make_current();
  current_step = step.serial();
}

class cuda_lane final : public mem::staging_lane {
 public:
  cuda_lane(cuda_step& s, unsigned slots) : step_(s), api_(s.cuda()) {
    step_.make_current();
    stream_ = api_.create_stream();
    try {
      for (unsigned i = 0; i < slots; ++i) events_.push_back(api_.create_event());
    } catch (...) {
      release();
      throw;
    }
  }
  ~cuda_lane() override { release(); }

  void to_device(const void* staging, mem::device_ref dst, std::size_t offset, std::size_t bytes) override {
    as_step_error("cudaMemcpyAsync host-to-device", [&] {
      on_this_thread();
      api_.copy_async(static_cast<unsigned char*>(dst.handle) + offset, staging, bytes, copy_kind::h2d, stream_);
    });
  }
  void to_host(void* staging, mem::device_ref src, std::size_t offset, std::size_t bytes) override {
    as_step_error("cudaMemcpyAsync device-to-host", [&] {
      on_this_thread();
      api_.copy_async(staging, static_cast<const unsigned char*>(src.handle) + offset, bytes, copy_kind::d2h, stream_);
    });
  }
  void record(unsigned slot) override {
    as_step_error("recording a staging slot's event", [&] {
      on_this_thread();
      api_.record(events_.at(slot), stream_);
    });
  }
  void wait(unsigned slot) override {
    as_step_error("waiting for a staging slot's event", [&] {
      on_this_thread();
      api_.synchronize_event(events_.at(slot));
    });
  }
  void wait_for(const mem::queue_mark& m) override;
  void drain() noexcept override {
    try {
      on_this_thread();
      api_.synchronize_stream(stream_);
    } catch (...) {
      // A failed stream has stopped using the staging memory all the same.
    }
  }

 private:
  void on_this_thread() { current_on_this_thread(step_); }
  void release() noexcept {
    if (!stream_) return;
    // On the thread destroying the copier: its current device is the
    // caller's business, and a stream synchronizes without it.
    try {
      api_.synchronize_stream(stream_);
    } catch (...) {
    }
    for (event_t e : events_) api_.destroy_event(e);
    events_.clear();
    api_.destroy_stream(stream_);
    stream_ = nullptr;
  }
  cuda_step& step_;
  api& api_;
  stream_t stream_ = nullptr;
  std::vector<event_t> events_;
};

// An event recorded on the caller's stream: the lane's stream waits for it
// on the device, the host with cudaEventSynchronize.
class cuda_mark final : public mem::queue_mark {
 public:
  cuda_mark(cuda_step& s, stream_t caller) : api_(s.cuda()) {
    s.make_current();
    event_ = api_.create_event();
    try {
      api_.record(event_, caller);
    } catch (...) {
      api_.destroy_event(event_);
      throw;
    }
  }
  ~cuda_mark() override { api_.destroy_event(event_); }  // a stream still waiting on it keeps what it needs
  void wait() override {
    as_step_error("waiting for the caller's stream", [&] { api_.synchronize_event(event_); });
  }
  event_t event() const noexcept { return event_; }

 private:
  api& api_;
  event_t event_;
};

void cuda_step::check_queue(void* queue) {
  if (!queue) throw mem::foreign_queue_error("the stream is null (the legacy default stream is CU_STREAM_LEGACY, 0x1)");
  int dev = -1;
  try {
    dev = with_stream_ops([&](api& ops) { return ops.stream_device(queue); });
  } catch (const std::exception& e) {
    throw mem::foreign_queue_error(fmt::format("stream {} cannot be used (destroyed?): {}", queue, e.what()));
  }
  if (dev != device_)
    throw mem::foreign_queue_error(
        fmt::format("stream {} belongs to CUDA device {}, not to the copier's device {}", queue, dev, device_));
}

std::unique_ptr<mem::queue_mark> cuda_step::mark(void* queue) {
  check_queue(queue);
  return as_step_error("marking the caller's stream", [&] { return std::make_unique<cuda_mark>(*this, queue); });
}

// Words of mapped pinned host memory that callers' streams wait on (the
// gates of copies on a caller's stream): a lane takes one per slot, its
// chunks' DMAs wait until the word reaches their targets, and the host
// stores each target when the chunk's slot is ready. A word only ever grows
// (cyclically, as cuStreamWaitValue32 compares), so it is handed out again
// once its lane has stored its last target: a stream yet to reach an older
// wait on it finds that wait satisfied. The pages are never freed: a
// caller's stream may reach its wait long after the copier and the step are
// gone, and must find the word still there.
class gate_words {
 public:
  static gate_words& get() {
    static auto* w = new gate_words;  // never destroyed, like its pages
    return *w;
  }
  // `a` allocates a new page when none is free (its device current).
  std::uint32_t* take(api& a) {
    std::lock_guard lock(mutex_);
    if (free_.empty()) {
      constexpr std::size_t page = 4096;
      auto* words = static_cast<std::uint32_t*>(a.host_alloc(page, host_alloc_flags{.mapped = true}));
      for (std::size_t i = 0; i < page / sizeof(std::uint32_t); ++i) {
        words[i] = 0;
        free_.push_back(words + i);
      }
    }
    std::uint32_t* w = free_.back();
    free_.pop_back();
    return w;
  }
  void give(std::uint32_t* w) {
    std::lock_guard lock(mutex_);
    free_.push_back(w);
  }

 private:
  std::mutex mutex_;
  std::vector<std::uint32_t*> free_;
};

// A copy on the caller's stream (queue_lane): per chunk c through slot s,
// cuStreamWaitValue32 for slot s's word to reach the chunk's target, the
// DMA, and an event the host waits on; device to host, one more wait at the
// end for a word the host stores once the last chunk is copied out. Every
// wait on the stream is for host work on chunks queued before it there (the
// copier's threads fill or empty slot s after the DMA of the slot's
// previous chunk, which is earlier on this stream), so the driver may put
// the stream on any hardware queue, shared with the copier's own or with
// any other, without a cycle.
class cuda_queue_lane final : public mem::queue_lane {
 public:
  cuda_queue_lane(cuda_step& s, stream_t caller, const mem::queue_plan& plan)
      : step_(s), dev_offset_(plan.dev_offset), starts_(plan.starts.begin(), plan.starts.end()),
        staging_(plan.staging.begin(), plan.staging.end()), opened_(staging_.size()) {
    for (auto& o : opened_) o = -1;
    const bool to_device = plan.dir == mem::staged_direction::to_device;
    const std::size_t slots = staging_.size(), chunks = starts_.size() - 1;
    s.with_stream_ops([&](api& ops) {
      try {
        for (std::size_t i = 0; i < slots; ++i) take_word(ops);
        if (!to_device) take_word(ops);  // the final gate: words_.back()
        auto* dev = static_cast<unsigned char*>(plan.dev.handle) + dev_offset_;
        for (std::size_t c = 0; c < chunks; ++c) {
          const std::size_t slot = c % slots, n = starts_[c + 1] - starts_[c];
          ops.wait_value(caller, ops.mapped_device_pointer(words_[slot]), target(c));
          if (to_device)
            ops.copy_async(dev + starts_[c], staging_[slot], n, copy_kind::h2d, caller);
          else
            ops.copy_async(staging_[slot], dev + starts_[c], n, copy_kind::d2h, caller);
          events_.push_back(ops.create_event());
          ops.record(events_.back(), caller);
        }
        if (!to_device) ops.wait_value(caller, ops.mapped_device_pointer(words_.back()), bases_.back() + 1);
      } catch (...) {
        // What was queued runs through, every gate open, before the ring
        // goes back: the stream's end (a DMA queued without its event too).
        release();
        try {
          ops.synchronize_stream(caller);
        } catch (...) {
        }
        for (event_t e : events_) ops.destroy_event(e);  // no destructor after a throwing constructor
        throw;
      }
    });
  }
  ~cuda_queue_lane() override {
    release();
    try {
      current_on_this_thread(step_);
    } catch (...) {
      // Destroying on whatever context is current is the best left to do.
    }
    for (event_t e : events_) step_.cuda().destroy_event(e);  // a stream still to record one keeps what it needs
  }

  void to_device(const void* staging, mem::device_ref, std::size_t offset, std::size_t bytes) override {
    open(staging, offset, bytes);
  }
  void to_host(void* staging, mem::device_ref, std::size_t offset, std::size_t bytes) override {
    open(staging, offset, bytes);
  }
  void record(unsigned) override {}
  void wait(unsigned slot) override {
    const std::int64_t c = opened_.at(slot).load();
    if (c < 0) return;
    as_step_error("waiting for a chunk's DMA on the caller's stream", [&] {
      current_on_this_thread(step_);
      step_.cuda().synchronize_event(events_[static_cast<std::size_t>(c)]);
    });
  }
  // Every DMA queued has ended (the stream runs them in order: the last
  // event says so), failed or not: a failed stream has stopped using the
  // staging memory all the same.
  void drain() noexcept override {
    release();
    try {
      current_on_this_thread(step_);
      if (!events_.empty()) step_.cuda().synchronize_event(events_.back());
    } catch (...) {
    }
  }
  void release() noexcept override {
    if (released_.exchange(true)) return;
    const std::size_t slots = staging_.size(), chunks = starts_.size() - 1;
    for (std::size_t i = 0; i < words_.size(); ++i) {
      // A slot's last target (its last chunk's); the final gate's.
      const std::size_t last = i < slots ? i + (chunks - 1 - i) / slots * slots : 0;
      const std::uint32_t t = i < slots ? (i < chunks ? target(last) : bases_[i]) : bases_[i] + 1;
      std::atomic_ref<std::uint32_t>(*words_[i]).store(t, std::memory_order_release);
      gate_words::get().give(words_[i]);
    }
  }

 private:
  void take_word(api& ops) {
    std::uint32_t* w = gate_words::get().take(ops);
    words_.push_back(w);
    bases_.push_back(std::atomic_ref<std::uint32_t>(*w).load());
  }
  // Chunk c's target: its slot's base plus how many times the slot is used
  // up to and including c.
  std::uint32_t target(std::size_t c) const {
    const std::size_t slots = staging_.size();
    return bases_[c % slots] + static_cast<std::uint32_t>(c / slots) + 1;
  }
  // The copier opens each slot's chunks in order. Release order: the device
  // reads the slot (host to device) or writes it (device to host) once it
  // sees the word.
  void open(const void* staging, std::size_t offset, std::size_t bytes) {
    const std::size_t c = mem::planned_chunk(starts_, staging_, dev_offset_, staging, offset, bytes);
    opened_[c % staging_.size()] = static_cast<std::int64_t>(c);
    std::atomic_ref<std::uint32_t>(*words_[c % staging_.size()]).store(target(c), std::memory_order_release);
  }
  cuda_step& step_;
  std::size_t dev_offset_;
  std::vector<std::size_t> starts_;
  std::vector<void*> staging_;
  std::vector<std::atomic<std::int64_t>> opened_;  // per slot, the chunk opened last
  std::vector<std::uint32_t*> words_;  // per slot, then (device to host) the final gate
  std::vector<std::uint32_t> bases_;   // each word's value when taken
  std::vector<event_t> events_;        // per chunk
  std::atomic<bool> released_{false};
};

std::unique_ptr<mem::queue_lane> cuda_step::open_queue_lane(void* queue, const mem::queue_plan& plan) {
  check_queue(queue);
  return as_step_error("queueing a copy on the caller's stream (cuStreamWaitValue32)",
                       [&] { return std::make_unique<cuda_queue_lane>(*this, queue, plan); });
}

void cuda_lane::wait_for(const mem::queue_mark& m) {
  // Only this step's marks reach its lanes (the copier makes both).
  const auto& mark = static_cast<const cuda_mark&>(m);
  as_step_error("making the staging stream wait for the caller's", [&] {
    on_this_thread();
    api_.wait(stream_, mark.event());
  });
}

std::unique_ptr<mem::staging_lane> cuda_step::open_lane(unsigned slots) {
  return as_step_error("opening a CUDA staging lane", [&] { return std::make_unique<cuda_lane>(*this, slots); });
}

}  // namespace

std::unique_ptr<mem::device_step> make_staged_step(int device, allocating_api which) {
  auto a = which == allocating_api::driver ? make_driver_api() : make_runtime_api();
  return std::make_unique<cuda_step>(std::move(a), device);
}

}  // namespace xfer::cuda
