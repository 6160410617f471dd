#pragma once
// The one thing a backend supplies to the staged copier: moving one chunk
// between a pinned staging buffer and device memory, asynchronously, and
// saying when it is done. The pipeline (staging ring, CPU threads, overlap,
// errors) is written once in staged_copier; CUDA (runtime and driver),
// OpenCL and the host backend each provide a device_step.
//
// No vendor type here: device memory travels as an opaque handle (a CUDA
// device pointer, an OpenCL cl_mem, a host pointer for the host step) plus a
// byte offset, so a copy never needs pointer arithmetic on a handle.
#include <cstddef>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <xfer/mem/resource.hpp>

namespace xfer::mem {

enum class staged_direction { to_device, to_host };
std::string_view to_string(staged_direction d) noexcept;  // "host-to-device" | "device-to-host"

// Device memory as the copier sees it: the backend's handle and its size in
// bytes (the copier checks every copy against it).
struct device_ref {
  void* handle = nullptr;
  std::size_t bytes = 0;
};

// A device step failed (an enqueue, a completion, opening a lane): what()
// names the step and the call; the copier wraps it in a staged_error.
class device_step_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The caller's queue is not one the step can use: null, another device's,
// destroyed (where the API can tell). The copier refuses the copy with
// reason bad_argument rather than device: the caller's mistake, not a fault.
class foreign_queue_error : public device_step_error {
 public:
  using device_step_error::device_step_error;
};

// Runs f() and returns what it returns, turning a std::exception from the
// API's wrappers into a device_step_error "<what>: <its message>": how a
// step reports which of its calls failed.
template <class F>
auto as_step_error(const std::string& what, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const device_step_error&) {
    throw;
  } catch (const std::exception& e) {
    throw device_step_error(what + ": " + e.what());
  }
}

// A staged copy failed or was refused: what() says which direction, the
// copy's size and the cause in one line; the fields say the same for code.
class staged_error : public std::runtime_error {
 public:
  enum class reason {
    bad_argument,     // null pointer, a range beyond the device buffer, overlap
    staging,          // the staging pool could not provide pinned buffers
    device,           // the device step failed (enqueue or completion)
    closed,           // the copier is being destroyed
  };
  staged_error(reason why, staged_direction dir, std::size_t bytes, std::size_t at_offset, std::string cause);
  reason why() const noexcept { return why_; }
  staged_direction direction() const noexcept { return dir_; }
  std::size_t bytes() const noexcept { return bytes_; }        // the whole copy's size
  std::size_t at_offset() const noexcept { return offset_; }   // where in the copy it failed (0 if before)
  const std::string& cause() const noexcept { return cause_; }

 private:
  reason why_;
  staged_direction dir_;
  std::size_t bytes_, offset_;
  std::string cause_;
};

// A point in a queue of the caller's (a CUDA stream): the work queued on
// it before the mark was made. A lane can wait for it without the host
// waiting (wait_for); the host can wait for it too (wait).
class queue_mark {
 public:
  virtual ~queue_mark() = default;
  // Blocks until the marked work has finished. Throws device_step_error.
  virtual void wait() = 0;
};

// A wait queued on a queue of the caller's (a CUDA stream, an OpenCL command
// queue): the work the caller queues there after it waits, on the device,
// until release(). The copier releases it once the copy has ended, on
// failure too, since a queue never released hangs for ever; the destructor
// releases a hold not yet released, so dropping one cannot leave it shut.
class queue_hold {
 public:
  virtual ~queue_hold() = default;
  // Lets the queue go on. Idempotent; never fails (what it does cannot be
  // undone or retried: a CPU store, setting a user event's status).
  virtual void release() noexcept = 0;
};

// One in-order queue of the device's copy engine (a CUDA stream, an OpenCL
// command queue) with a completion marker per staging slot. The copier
// opens one lane and uses it from all its threads: it calls to_device,
// to_host and record under its own lock, one thread at a time; wait() runs
// without that lock, from several threads at once (for one slot or for
// different ones) and beside the queueing of other slots, never beside a
// record() of the same slot; drain() only when no copy runs on the lane or
// after a failure. A lane must make its device current on whichever thread
// calls it.
class staging_lane {
 public:
  virtual ~staging_lane() = default;
  // Queue a copy of `bytes` from pinned `staging` to `dst` at `offset`
  // (to_device), or from `src` at `offset` into `staging` (to_host).
  // `staging` is a staging buffer or host memory the step registered
  // (device_step::register_host). Both
  // return before the copy completes; the staging memory must stay untouched
  // until wait() for the slot recorded after it returns.
  virtual void to_device(const void* staging, device_ref dst, std::size_t offset, std::size_t bytes) = 0;
  virtual void to_host(void* staging, device_ref src, std::size_t offset, std::size_t bytes) = 0;
  // Marks everything queued so far on this lane as slot `slot`'s (slot <
  // the slots the lane was opened with).
  virtual void record(unsigned slot) = 0;
  // Blocks until what was queued before slot's last record() completed.
  // Throws device_step_error when that work failed.
  virtual void wait(unsigned slot) = 0;
  // Waits for everything queued, swallowing errors: after a failure, before
  // the staging buffers go back to the pool, no copy may still use them.
  virtual void drain() noexcept = 0;
  // Work queued on the lane after this waits for the mark's work (called
  // under the copier's lock, like the queueing calls). Throws
  // device_step_error. The default: nothing to wait for.
  virtual void wait_for(const queue_mark&) {}
};

// One copy cut as the copier moves it (copy_to_*_on): chunk c is bytes
// [starts[c], starts[c + 1]) of the copy, at device offset dev_offset +
// starts[c] of dev, and goes through staging[c % staging.size()]. Spans
// into the copier's job: they live as long as the lane made from them.
struct queue_plan {
  staged_direction dir{};
  device_ref dev;
  std::size_t dev_offset = 0;
  std::span<const std::size_t> starts;  // chunks + 1 entries
  std::span<void* const> staging;       // one buffer per slot
};

// A copy's DMAs on a queue of the caller's (issue 37): the step queues every
// chunk's DMA there when the lane is opened, on the calling thread, each
// behind a gate of its own and followed by a completion the host can wait
// for; a device-to-host copy ends with one more gate, opened when the host
// has copied the last chunk out. So the work the caller queues after the
// call follows the whole copy in the queue's own order, and every wait on
// the caller's queue waits only for host work on chunks whose DMAs come
// earlier in that queue: no cycle, however the device maps queues onto its
// hardware queues. (A hold on the caller's queue with the DMAs on the
// copier's own queue had one: where the two shared a hardware queue, the
// DMAs could wait behind the hold that waited for them.)
//
// As a staging_lane: to_device() / to_host() open the gate of the chunk at
// that device offset (queued with these very arguments); record() has
// nothing left to do; wait(slot) waits for the DMA of the slot's chunk
// opened last. The copier opens each slot's chunks in order.
// The chunk of `plan` queued with these arguments (a queue lane's
// to_device / to_host). Throws device_step_error naming them when none
// was: the copier opens only planned chunks.
std::size_t planned_chunk(std::span<const std::size_t> starts, std::span<void* const> staging,
                          std::size_t dev_offset, const void* staging_at, std::size_t offset, std::size_t bytes);

class queue_lane : public staging_lane {
 public:
  // Lets the caller's queue run to the copy's end: opens every gate not yet
  // opened (after a failure the DMAs behind them move unspecified bytes)
  // and the final one. Idempotent, never fails; the destructor calls it, so
  // a lane dropped early cannot leave the queue shut. drain() releases
  // first, then waits for every DMA.
  virtual void release() noexcept = 0;
};

class device_step {
 public:
  virtual ~device_step() = default;
  // "cuda-runtime", "cuda-driver", "opencl", "host": for messages and for
  // the tuning cache's key (with device_key()).
  virtual std::string_view name() const noexcept = 0;
  // Names the device (a PCI bus id, a device name): tuning is cached per it.
  virtual std::string device_key() const = 0;
  // The driver as a cache entry records it ("CUDA driver 13000"); empty where
  // the API has none of its own. An entry made under another driver is not used.
  virtual std::string driver() const { return {}; }
  // Where staging buffers come from: pinned memory of this API (the copier
  // puts a caching pool on it). Lives as long as the step.
  virtual host_resource& staging_memory() = 0;
  // A new lane with `slots` completion markers. Throws device_step_error.
  virtual std::unique_ptr<staging_lane> open_lane(unsigned slots) = 0;
  // The plain API's blocking copy from/to any host memory (the handoff for
  // small copies, where staging does not pay). Throws device_step_error.
  virtual void plain_to_device(device_ref dst, std::size_t offset, const void* src, std::size_t bytes) = 0;
  virtual void plain_to_host(void* dst, device_ref src, std::size_t offset, std::size_t bytes) = 0;
  // Device memory of the step's device (for programs with none of their own,
  // and for tests). Throws device_step_error naming the size and the cause.
  virtual device_ref allocate(std::size_t bytes) = 0;
  virtual void deallocate(device_ref d) noexcept = 0;
  // The host address of device memory where the host can address it (the
  // host step, mapped or managed memory), else nullptr: the copier then
  // refuses a copy whose source and destination overlap.
  virtual const void* host_view(device_ref) const noexcept { return nullptr; }
  // Marks the work queued so far on the caller's `queue` (a cudaStream_t or
  // CUstream of the step's device), on the calling thread. The default
  // throws device_step_error: the step cannot order its copies after a
  // queue of the caller's.
  virtual std::unique_ptr<queue_mark> mark(void* queue);
  // Queues on the caller's `queue` (a CUDA stream; an OpenCL command queue
  // of the step's device), on the calling thread, a wait that holds the
  // work queued there after it until the hold is released; the calling
  // thread does not wait. Throws foreign_queue_error for a queue the step
  // cannot use, device_step_error when queueing the wait fails. The
  // default throws device_step_error: the step cannot hold a queue. Only
  // the default open_queue_lane uses it.
  virtual std::unique_ptr<queue_hold> hold(void* queue);
  // The copy `plan` on the caller's `queue` (queue_lane), on the calling
  // thread. Throws foreign_queue_error for a queue the step cannot use,
  // device_step_error when queueing fails; then nothing of the copy is
  // left on the queue. The default is for a step whose queues cannot be
  // held in a cycle: mark(queue), hold(queue), and a lane of its own
  // (open_lane) whose first DMA waits for the mark; release() releases the
  // hold.
  virtual std::unique_ptr<queue_lane> open_queue_lane(void* queue, const queue_plan& plan);

  // ---- host memory registration (the registration cache) ----
  // Memory registered here is pinned memory of the step: a lane's to_device
  // and to_host take it in place of a staging buffer, so a registered
  // buffer moves in one plain async copy, with no staging.
  //
  // Empty when the step can register host memory; else why not (the
  // default: OpenCL has no way to pin memory the program allocated).
  virtual std::string registration_unsupported() const;
  // Pins [p, p + bytes) (whole pages: the cache rounds) for this step's
  // device. Throws device_step_error naming the size and the API's cause
  // (cudaHostRegister's error, the locked-memory limit). The default throws
  // registration_unsupported().
  virtual void register_host(void* p, std::size_t bytes);
  // Undoes register_host(p, ...) (p as registered). The default: nothing.
  virtual void unregister_host(void* p) noexcept;
  // Whether the API still holds a registration covering [p, p + bytes):
  // false says a cached registration is stale (someone unregistered it);
  // -1 where the step cannot tell (the default).
  virtual int registered(const void* p, std::size_t bytes) const noexcept;
};

}  // namespace xfer::mem
