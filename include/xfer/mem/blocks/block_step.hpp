#pragma once
// What a backend supplies to the block copier (block_copier.hpp): the few
// device operations its ways are written over. The ways themselves (a loop
// of copies, one batched call, a gather/scatter kernel, pack + one DMA +
// scatter) are written once in src/mem/blocks over this interface; CUDA
// (runtime API) and the host step, whose "device memory" is host memory,
// provide it. So every way, the choice between them and every refusal run in
// CI without a GPU.
//
// Device memory is addressed by pointer here (a CUDA device pointer, a host
// pointer for the host step): device_ref::handle plus a byte offset is an
// address the step's copies and kernels take. No vendor type here.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <xfer/mem/resource.hpp>
#include <xfer/mem/staged/device_step.hpp>

namespace xfer::mem {

// How the device reaches a range of host memory: at DMA speed or not, and
// whether device code can address it (the kernel way needs that).
enum class host_block_kind { pageable, pinned };
std::string_view to_string(host_block_kind k) noexcept;  // "pageable" | "pinned"

struct host_access {
  host_block_kind kind = host_block_kind::pageable;
  // The address device code reads and writes the range at (pinned memory
  // mapped into the device's address space), else null.
  void* device_view = nullptr;
};

// One in-order queue of the step's device for one block copy: what is
// queued runs in order; finish() waits for it. Used by one thread at a time.
class block_queue {
 public:
  virtual ~block_queue() = default;
  // Queues a DMA of `bytes` from src to dst (each host memory or the step's
  // device memory, told apart by the step). Throws device_step_error.
  virtual void copy(void* dst, const void* src, std::size_t bytes) = 0;
  // Queues `count` DMAs of `bytes` each (dsts[i] <- srcs[i]) as one call.
  // Only where the step's batch_unavailable() is empty. The arrays are read
  // before the call returns. Throws device_step_error.
  virtual void copy_batch(void* const* dsts, const void* const* srcs, std::size_t bytes, std::size_t count) = 0;
  // Queues device code moving `count` blocks of `block_bytes`: block
  // dst_index[i] of dst <- block src_index[i] of src. Both bases are
  // addresses device code can use (device memory or a host_access's
  // device_view). A null index array means the identity (block i). The
  // index arrays are read before the call returns. Throws device_step_error.
  virtual void copy_blocks(void* dst, const void* src, std::size_t block_bytes, const std::int64_t* src_index,
                           const std::int64_t* dst_index, std::size_t count) = 0;
  // Marks what is queued so far; wait(m) blocks until it has finished (so
  // the CPU can work on a copy's first part while the device runs the rest).
  // Throws device_step_error.
  virtual std::size_t mark() = 0;
  virtual void wait(std::size_t mark) = 0;
  // Blocks until everything queued has finished. Throws device_step_error.
  virtual void finish() = 0;
};

class block_step {
 public:
  virtual ~block_step() = default;
  // "cuda-runtime", "host": for messages and the choice cache's key.
  virtual std::string_view name() const noexcept = 0;
  // Names the device (PCI bus id and name): choices are cached per device.
  virtual std::string device_key() const = 0;
  // The driver as a cache entry records it ("CUDA driver 13000"); empty where
  // the API has none of its own. An entry made under another driver is not used.
  virtual std::string driver() const { return {}; }
  // Pinned memory of this API for the pack way's staging buffers (the
  // copier puts a caching pool on it). Lives as long as the step. Allocated
  // from only on a thread where the step made its device current (after
  // open_queue or allocate), as a CUDA context needs.
  virtual host_resource& staging_memory() = 0;
  // How the device reaches [host, host + bytes).
  virtual host_access access(const void* host, std::size_t bytes) = 0;
  // Empty where block_queue::copy_batch works, else why not (a toolkit or a
  // driver older than CUDA 12.8).
  virtual std::string batch_unavailable() const = 0;
  // A queue whose work starts after the work queued so far on the caller's
  // `after_queue` (a cudaStream_t of the step's device; null: none). Throws
  // device_step_error. One queue at a time: a queue may hold the step until
  // it is destroyed (the CUDA step's index buffers are one copy's), so a
  // second open_queue waits for the first, and on the thread that holds one
  // never returns. A mover opens its own: close yours before calling it.
  virtual std::unique_ptr<block_queue> open_queue(void* after_queue) = 0;
  // Device memory (the pack way's scratch, the calibration's probes).
  // Throws device_step_error naming the size.
  virtual device_ref allocate(std::size_t bytes) = 0;
  virtual void deallocate(device_ref d) noexcept = 0;
  // The host address of device memory where the host can address it (the
  // host step), else null: the copier then refuses a copy whose two arrays
  // overlap.
  virtual const void* host_view(device_ref) const noexcept { return nullptr; }
};

// The host backend's block step: "device memory" is host memory, copies are
// memcpy on the calling thread, the kernel is a loop. Host memory counts as
// pageable unless declared pinned (declare_pinned), so the kernel way's
// refusal of pageable memory is tested too.
class host_block_step final : public block_step {
 public:
  struct options {
    // Why batches are unavailable (empty: they are available): tests of the
    // choice skipping a way.
    std::string batch_unavailable;
  };
  host_block_step();
  explicit host_block_step(options o);
  ~host_block_step() override;

  std::string_view name() const noexcept override { return "host"; }
  std::string device_key() const override { return "host"; }
  host_resource& staging_memory() override;
  host_access access(const void* host, std::size_t bytes) override;
  std::string batch_unavailable() const override { return options_.batch_unavailable; }
  std::unique_ptr<block_queue> open_queue(void* after_queue) override;
  device_ref allocate(std::size_t bytes) override;
  void deallocate(device_ref d) noexcept override;
  const void* host_view(device_ref d) const noexcept override { return d.handle; }

  // [p, p + bytes) is host memory the "device" reaches as pinned and mapped
  // from now on (until forget_pinned with the same p).
  void declare_pinned(const void* p, std::size_t bytes);
  void forget_pinned(const void* p);

 private:
  struct state;
  options options_;
  std::unique_ptr<state> state_;
};

}  // namespace xfer::mem
