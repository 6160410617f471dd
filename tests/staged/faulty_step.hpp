#pragma once
// A host step that fails on purpose: at a chosen device offset, either when
// the chunk's copy is queued or when its completion is waited for; and a
// staging resource that can be told to refuse. For the copier's fault tests.
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <thread>
#include <xfer/mem/error.hpp>
#include <xfer/mem/host_resources.hpp>
#include <xfer/mem/staged/host_step.hpp>

namespace xfer::test {

enum class fault_at { enqueue, wait };

// A step that is a host step of its own in all but its lanes: the base of
// the test steps that break or watch a lane.
class forwarding_step : public mem::device_step {
 public:
  explicit forwarding_step(mem::host_resource* staging = nullptr) : inner_(staging) {}
  std::string device_key() const override { return "host"; }
  mem::host_resource& staging_memory() override { return inner_.staging_memory(); }
  void plain_to_device(mem::device_ref d, std::size_t o, const void* s, std::size_t b) override {
    inner_.plain_to_device(d, o, s, b);
  }
  void plain_to_host(void* d, mem::device_ref s, std::size_t o, std::size_t b) override {
    inner_.plain_to_host(d, s, o, b);
  }
  mem::device_ref allocate(std::size_t b) override { return inner_.allocate(b); }
  void deallocate(mem::device_ref d) noexcept override { inner_.deallocate(d); }
  const void* host_view(mem::device_ref d) const noexcept override { return inner_.host_view(d); }
  mem::host_step& inner() noexcept { return inner_; }

 protected:
  mem::host_step inner_;
};

class faulty_step final : public forwarding_step {
 public:
  explicit faulty_step(mem::host_resource* staging = nullptr) : forwarding_step(staging) {}
  // Fail the chunk whose copy starts at device offset `offset` (SIZE_MAX: never).
  void fail(std::size_t offset, fault_at when) {
    offset_ = offset;
    when_ = when;
  }
  // Stall every chunk's completion (a device that stops answering) until
  // released. Not named hold: that is the seam's hold(queue).
  void stall(bool stalled) { stalled_ = stalled; }
  std::string_view name() const noexcept override { return "faulty-host"; }
  // The caller's queues: the host step's (forward), refused as another
  // device's (foreign), or not supported at all (the device_step default).
  enum class queues { forward, foreign, unsupported };
  void set_queues(queues q) { queues_ = q; }
  std::unique_ptr<mem::queue_mark> mark(void* q) override {
    refuse_queue();
    return queues_ == queues::forward ? inner_.mark(q) : device_step::mark(q);
  }
  // The host step's queue lane with the same faults as a lane of its own.
  std::unique_ptr<mem::queue_lane> open_queue_lane(void* q, const mem::queue_plan& plan) override {
    refuse_queue();
    if (queues_ != queues::forward) return device_step::open_queue_lane(q, plan);
    auto in = inner_.open_queue_lane(q, plan);
    mem::queue_lane& held = *in;
    return std::make_unique<lane>(*this, std::move(in), static_cast<unsigned>(plan.staging.size()), &held);
  }
  // Registration is the host step's emulation once allowed (the registration
  // cache's fault tests); until then the step cannot register, as OpenCL's.
  void allow_registration() { registering_ = true; }
  std::string registration_unsupported() const override {
    return registering_ ? std::string() : mem::device_step::registration_unsupported();
  }
  void register_host(void* p, std::size_t b) override {
    if (!registering_) return mem::device_step::register_host(p, b);
    inner_.register_host(p, b);
  }
  void unregister_host(void* p) noexcept override { inner_.unregister_host(p); }
  int registered(const void* p, std::size_t b) const noexcept override { return inner_.registered(p, b); }
  std::unique_ptr<mem::staging_lane> open_lane(unsigned slots) override {
    return std::make_unique<lane>(*this, inner_.open_lane(slots), slots);
  }

 private:
  void refuse_queue() const {
    if (queues_ == queues::foreign) throw mem::foreign_queue_error("the queue belongs to device 7, not device 0");
  }
  // A lane of the step's own, or (queue non-null) one on the caller's queue.
  class lane final : public mem::queue_lane {
   public:
    lane(faulty_step& s, std::unique_ptr<mem::staging_lane> in, unsigned slots, mem::queue_lane* queue = nullptr)
        : step_(s), in_(std::move(in)), queue_(queue), slot_offset_(std::make_unique<std::atomic<std::size_t>[]>(slots)) {
      for (unsigned i = 0; i < slots; ++i) slot_offset_[i] = SIZE_MAX;
    }
    void to_device(const void* st, mem::device_ref d, std::size_t o, std::size_t b) override {
      check_enqueue(o);
      in_->to_device(st, d, o, b);
      last_ = o;
    }
    void to_host(void* st, mem::device_ref d, std::size_t o, std::size_t b) override {
      check_enqueue(o);
      in_->to_host(st, d, o, b);
      last_ = o;
    }
    void record(unsigned slot) override {
      in_->record(slot);
      slot_offset_[slot] = last_;
    }
    void wait(unsigned slot) override {
      while (step_.stalled_.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      in_->wait(slot);
      if (step_.when_ == fault_at::wait && slot_offset_[slot] == step_.offset_)
        throw mem::device_step_error("injected completion failure");
    }
    void drain() noexcept override { in_->drain(); }
    void release() noexcept override {
      if (queue_) queue_->release();
    }

   private:
    void check_enqueue(std::size_t o) {
      if (step_.when_ == fault_at::enqueue && o == step_.offset_)
        throw mem::device_step_error("injected enqueue failure");
    }
    faulty_step& step_;
    std::unique_ptr<mem::staging_lane> in_;
    mem::queue_lane* queue_;  // in_, where it is a queue lane
    std::size_t last_ = SIZE_MAX;
    // Per slot, written by record() and read by wait() on other threads
    // (never the same slot at once, as the lane contract says).
    std::unique_ptr<std::atomic<std::size_t>[]> slot_offset_;
  };

  bool registering_ = false;
  std::atomic<std::size_t> offset_{SIZE_MAX};
  std::atomic<fault_at> when_{fault_at::enqueue};
  std::atomic<bool> stalled_{false};
  std::atomic<queues> queues_{queues::forward};
};

// Page-aligned memory that refuses (allocation_error, as a pinned pool
// that cannot pin more would) while refusing is set.
class refusing_resource final : public mem::host_resource {
 public:
  std::atomic<bool> refusing{false};
  // While non-negative: allocations still granted before refusing starts.
  std::atomic<long> grant{-1};
  std::string_view kind() const noexcept override { return "refusing"; }
  mem::properties props() const noexcept override { return {}; }
  std::size_t max_alignment() const noexcept override { return inner_.max_alignment(); }
  std::size_t natural_alignment() const noexcept override { return inner_.natural_alignment(); }
  std::string describe() const override { return "test resource"; }

 private:
  void* do_allocate(std::size_t bytes, std::size_t alignment) override {
    if (grant >= 0 && grant-- == 0) refusing = true;
    if (refusing) throw mem::allocation_error("refusing", bytes, "Cannot allocate memory (injected)");
    return inner_.allocate(bytes, alignment);
  }
  void do_deallocate(void* p, std::size_t bytes, std::size_t alignment) noexcept override {
    inner_.deallocate(p, bytes, alignment);
  }
  mem::aligned_resource inner_;
};

}  // namespace xfer::test
