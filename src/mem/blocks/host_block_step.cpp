// The host backend's block step (block_step.hpp): every operation is a
// memcpy on the calling thread, so finish() has nothing to wait for. What
// makes it a test of the ways is access(): memory counts as pinned and
// mapped only where declared (its own staging memory, and what tests
// declare), so the kernel way's refusal runs here as on a GPU.
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>
#include <fmt/format.h>
#include <xfer/mem/blocks/block_step.hpp>
#include <xfer/mem/host_resources.hpp>

namespace xfer::mem {

struct host_block_step::state {
  std::mutex mutex;
  std::map<const unsigned char*, std::size_t> pinned;  // start -> bytes

  void declare(const void* p, std::size_t bytes) {
    std::lock_guard lock(mutex);
    pinned[static_cast<const unsigned char*>(p)] = bytes;
  }
  void forget(const void* p) {
    std::lock_guard lock(mutex);
    pinned.erase(static_cast<const unsigned char*>(p));
  }
  bool covers(const void* p, std::size_t bytes) {
    const auto* b = static_cast<const unsigned char*>(p);
    std::lock_guard lock(mutex);
    auto it = pinned.upper_bound(b);
    if (it == pinned.begin()) return false;
    --it;
    return b + bytes <= it->first + it->second;
  }

  // Staging memory: page-aligned host memory, pinned as far as this step
  // is concerned (as a CUDA step's staging memory is).
  class staging final : public host_resource {
   public:
    explicit staging(state& s) : state_(s) {}
    std::string_view kind() const noexcept override { return "host-pinned"; }
    properties props() const noexcept override { return {.host_accessible = true, .pinned = true}; }
    std::size_t max_alignment() const noexcept override { return inner_.max_alignment(); }
    std::size_t natural_alignment() const noexcept override { return inner_.natural_alignment(); }
    std::string describe() const override { return "host memory the host block step treats as pinned"; }

   private:
    void* do_allocate(std::size_t bytes, std::size_t alignment) override {
      void* p = inner_.allocate(bytes, alignment);
      state_.declare(p, bytes);
      return p;
    }
    void do_deallocate(void* p, std::size_t bytes, std::size_t alignment) override {
      state_.forget(p);
      inner_.deallocate(p, bytes, alignment);
    }
    state& state_;
    aligned_resource inner_;
  };
  staging staging_memory{*this};
  aligned_resource device_memory;
};

namespace {

class host_queue final : public block_queue {
 public:
  void copy(void* dst, const void* src, std::size_t bytes) override { std::memcpy(dst, src, bytes); }
  void copy_batch(void* const* dsts, const void* const* srcs, std::size_t bytes, std::size_t count) override {
    for (std::size_t i = 0; i < count; ++i) std::memcpy(dsts[i], srcs[i], bytes);
  }
  void copy_blocks(void* dst, const void* src, std::size_t block_bytes, const std::int64_t* src_index,
                   const std::int64_t* dst_index, std::size_t count) override {
    auto* d = static_cast<unsigned char*>(dst);
    const auto* s = static_cast<const unsigned char*>(src);
    for (std::size_t i = 0; i < count; ++i) {
      const auto from = static_cast<std::size_t>(src_index ? src_index[i] : std::int64_t(i));
      const auto to = static_cast<std::size_t>(dst_index ? dst_index[i] : std::int64_t(i));
      std::memcpy(d + to * block_bytes, s + from * block_bytes, block_bytes);
    }
  }
  // Everything ran as it was queued: any mark is already reached.
  std::size_t mark() override { return 0; }
  void wait(std::size_t) override {}
  void finish() override {}
};

}  // namespace

host_block_step::host_block_step() : host_block_step(options{}) {}
host_block_step::host_block_step(options o) : options_(std::move(o)), state_(std::make_unique<state>()) {}
host_block_step::~host_block_step() = default;

host_resource& host_block_step::staging_memory() { return state_->staging_memory; }

host_access host_block_step::access(const void* host, std::size_t bytes) {
  if (state_->covers(host, bytes)) return {host_block_kind::pinned, const_cast<void*>(host)};
  return {};
}

std::unique_ptr<block_queue> host_block_step::open_queue(void*) { return std::make_unique<host_queue>(); }

device_ref host_block_step::allocate(std::size_t bytes) {
  try {
    return {state_->device_memory.allocate(bytes ? bytes : 1, 4096), bytes};
  } catch (const std::exception& e) {
    throw device_step_error(fmt::format("host block step: allocating {} bytes of \"device\" memory: {}", bytes, e.what()));
  }
}

void host_block_step::deallocate(device_ref d) noexcept {
  if (d.handle) state_->device_memory.deallocate(d.handle, d.bytes ? d.bytes : 1, 4096);
}

void host_block_step::declare_pinned(const void* p, std::size_t bytes) { state_->declare(p, bytes); }
void host_block_step::forget_pinned(const void* p) { state_->forget(p); }

}  // namespace xfer::mem
