// The OpenCL device step: a lane is an in-order queue of its own and a marker
// event per slot (clEnqueueMarkerWithWaitList, OpenCL 1.2).
#include <xfer/mem/opencl/staged_step.hpp>

#include <algorithm>
#include <atomic>
#include <stdexcept>
#include <string>
#include <vector>
#include <fmt/format.h>

#include "cl.hpp"
#include "cl_host_resource.hpp"
#include "platform.hpp"
#include "shared_context_step.hpp"

namespace xfer::opencl {
namespace {

template <class F>
auto checked(const char* what, F&& f) {
  return mem::as_step_error(fmt::format("OpenCL {}", what), std::forward<F>(f));
}

cl_mem as_mem(mem::device_ref d) noexcept { return static_cast<cl_mem>(d.handle); }

// A marker on the caller's queue: the work queued there before it. Its
// context is the caller's, not the lane's, so the lane waits for it on the
// host (the copier's leader, before the copy's first DMA).
class cl_mark final : public mem::queue_mark {
 public:
  explicit cl_mark(cl_command_queue q) {
    check(clEnqueueMarkerWithWaitList(q, 0, nullptr, marker_.reset_and_out()), "clEnqueueMarkerWithWaitList",
          "on the caller's queue");
    check(clFlush(q), "clFlush", "the caller's queue");  // a host wait for a marker never submitted would not end
  }
  void wait() override {
    checked("waiting for the caller's queue", [&] {
      cl_event e = marker_.get();
      check(clWaitForEvents(1, &e), "clWaitForEvents");
      cl_int status = CL_COMPLETE;
      check(clGetEventInfo(e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr), "clGetEventInfo");
      if (status < 0) throw_cl_error(status, "the caller's queue", "work queued before the copy failed");
    });
  }

 private:
  event marker_;
};

// A user event of the caller's context and a barrier on the caller's queue
// waiting for it: the caller's later commands wait until release() sets the
// event complete (on failure too: the failure is the completion's to report).
//
// A copy on the caller's queue keeps this hold with its DMAs on a lane of
// the step's own (device_step's default open_queue_lane), unlike CUDA's,
// which queues the DMAs on the caller's stream behind gates: here the wait is
// an event wait list, a dependency the OpenCL runtime itself tracks and
// resolves per command, so a command of the lane's queue never waits behind
// the caller's barrier (commands of different queues have no order but the
// events they name), and no cycle can form. CUDA's cuStreamWaitValue32 is a
// wait the driver cannot see, in a hardware queue other streams may share.
// The lane also lets the caller's queue be of another context than the
// copy's buffer, which a DMA on the caller's queue could not.
class cl_hold final : public mem::queue_hold {
 public:
  explicit cl_hold(cl_command_queue q) {
    cl_context ctx = nullptr;
    check(clGetCommandQueueInfo(q, CL_QUEUE_CONTEXT, sizeof ctx, &ctx, nullptr), "clGetCommandQueueInfo",
          "CL_QUEUE_CONTEXT");
    cl_int rc = CL_SUCCESS;
    gate_ = event(clCreateUserEvent(ctx, &rc));
    check(rc, "clCreateUserEvent", "in the caller's context");
    cl_event g = gate_.get();
    const cl_int barrier = clEnqueueBarrierWithWaitList(q, 1, &g, nullptr);
    if (barrier != CL_SUCCESS) {
      release();  // a user event must reach a final status before it goes
      throw_cl_error(barrier, "clEnqueueBarrierWithWaitList", "on the caller's queue");
    }
  }
  ~cl_hold() override { release(); }
  void release() noexcept override {
    if (released_.exchange(true)) return;
    (void)clSetUserEventStatus(gate_.get(), CL_COMPLETE);
  }

 private:
  event gate_;
  std::atomic<bool> released_{false};
};

class cl_lane final : public mem::staging_lane {
 public:
  cl_lane(const context& ctx, const device_caps& caps, unsigned slots)
      : queue_(make_queue(ctx, caps, false)), marks_(slots) {}
  ~cl_lane() override { drain(); }

  void to_device(const void* staging, mem::device_ref dst, std::size_t offset, std::size_t bytes) override {
    check(clEnqueueWriteBuffer(queue_.get(), as_mem(dst), CL_FALSE, offset, bytes, staging, 0, nullptr, nullptr),
          "clEnqueueWriteBuffer", fmt::format("{} bytes at offset {}", bytes, offset));
  }
  void to_host(void* staging, mem::device_ref src, std::size_t offset, std::size_t bytes) override {
    check(clEnqueueReadBuffer(queue_.get(), as_mem(src), CL_FALSE, offset, bytes, staging, 0, nullptr, nullptr),
          "clEnqueueReadBuffer", fmt::format("{} bytes at offset {}", bytes, offset));
  }
  void record(unsigned slot) override {
    event& e = marks_.at(slot);
    check(clEnqueueMarkerWithWaitList(queue_.get(), 0, nullptr, e.reset_and_out()), "clEnqueueMarkerWithWaitList");
    // Submit now: the device starts this chunk while the thread fills the next.
    check(clFlush(queue_.get()), "clFlush");
  }
  void wait(unsigned slot) override {
    const event& e = marks_.at(slot);
    if (!e) return;
    cl_event ev = e.get();
    check(clWaitForEvents(1, &ev), "clWaitForEvents");
    // A failed command makes its marker's status negative (and, on some
    // platforms, clWaitForEvents report CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST).
    cl_int status = CL_COMPLETE;
    check(clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr), "clGetEventInfo");
    if (status < 0) throw_cl_error(status, "a staged copy", "its marker's status");
  }
  void drain() noexcept override { (void)clFinish(queue_.get()); }
  // Only this step's marks reach its lanes (the copier makes both).
  void wait_for(const mem::queue_mark& m) override { const_cast<cl_mark&>(static_cast<const cl_mark&>(m)).wait(); }

 private:
  command_queue queue_;
  std::vector<event> marks_;
};

class cl_step final : public mem::device_step {
 public:
  // ctx: a context holding the device (a program's own, so that its buffers
  // are the step's device memory); null: the step makes one.
  cl_step(const platform_desc& p, const device_caps& caps, context ctx = {})
      : caps_(caps), key_(fmt::format("{} {}", p.token, caps.name)), ctx_(std::move(ctx)) {
    if (!ctx_) {
      cl_int rc = CL_SUCCESS;
      ctx_ = context(clCreateContext(nullptr, 1, &caps_.id, nullptr, nullptr, &rc));
      check(rc, "clCreateContext", caps_.name);
    }
    queue_ = make_queue(ctx_, caps_, false);
    staging_ = std::make_unique<cl_host_resource>("alloc-host-ptr", caps_,
                                                  documented_pinned("alloc-host-ptr", p.token, caps_.type),
                                                  mem::kind_options{}, ctx_);
  }
  ~cl_step() override = default;

  std::string_view name() const noexcept override { return "opencl"; }
  std::string device_key() const override { return key_; }
  // No registration cache here: OpenCL has no call that pins memory the
  // program allocated (CL_MEM_USE_HOST_PTR lets the implementation copy it
  // into a buffer of its own instead).
  std::string registration_unsupported() const override {
    return "OpenCL cannot pin host memory the program allocated (CL_MEM_USE_HOST_PTR may copy it): every copy is "
           "staged";
  }
  mem::host_resource& staging_memory() override { return *staging_; }
  std::unique_ptr<mem::staging_lane> open_lane(unsigned slots) override {
    return checked("opening a staging lane", [&] { return std::make_unique<cl_lane>(ctx_, caps_, slots); });
  }
  void plain_to_device(mem::device_ref dst, std::size_t offset, const void* src, std::size_t bytes) override {
    checked("plain host-to-device copy", [&] {
      check(clEnqueueWriteBuffer(queue_.get(), as_mem(dst), CL_TRUE, offset, bytes, src, 0, nullptr, nullptr),
            "clEnqueueWriteBuffer", fmt::format("{} bytes at offset {}", bytes, offset));
    });
  }
  void plain_to_host(void* dst, mem::device_ref src, std::size_t offset, std::size_t bytes) override {
    checked("plain device-to-host copy", [&] {
      check(clEnqueueReadBuffer(queue_.get(), as_mem(src), CL_TRUE, offset, bytes, dst, 0, nullptr, nullptr),
            "clEnqueueReadBuffer", fmt::format("{} bytes at offset {}", bytes, offset));
    });
  }
  mem::device_ref allocate(std::size_t bytes) override {
    return checked("device allocation", [&] {
      cl_int rc = CL_SUCCESS;
      cl_mem m = clCreateBuffer(ctx_.get(), CL_MEM_READ_WRITE, bytes ? bytes : 1, nullptr, &rc);
      check(rc, "clCreateBuffer", fmt::format("{} bytes", bytes));
      return mem::device_ref{m, bytes};
    });
  }
  void deallocate(mem::device_ref d) noexcept override {
    if (d.handle) clReleaseMemObject(as_mem(d));
  }
  std::unique_ptr<mem::queue_mark> mark(void* queue) override {
    auto* q = caller_queue(queue);
    return checked("marking the caller's queue", [&] { return std::make_unique<cl_mark>(q); });
  }
  std::unique_ptr<mem::queue_hold> hold(void* queue) override {
    auto* q = caller_queue(queue);
    return checked("holding the caller's queue", [&] { return std::make_unique<cl_hold>(q); });
  }

 private:
  // The caller's queue, checked to be a command queue of this step's device
  // (its context may be another: marks and holds use the queue's own).
  // Throws foreign_queue_error. A pointer that is no OpenCL object at all
  // cannot be told apart safely (the ICD loader reads through it): null is.
  cl_command_queue caller_queue(void* queue) const {
    if (!queue) throw mem::foreign_queue_error("the command queue is null");
    auto* q = static_cast<cl_command_queue>(queue);
    cl_device_id dev = nullptr;
    const cl_int rc = clGetCommandQueueInfo(q, CL_QUEUE_DEVICE, sizeof dev, &dev, nullptr);
    if (rc != CL_SUCCESS)
      throw mem::foreign_queue_error(
          fmt::format("{} is not a usable command queue (clGetCommandQueueInfo: {})", queue, error_name(rc)));
    if (dev != caps_.id) {
      std::string other = "another device";
      try {
        other = device_string(dev, CL_DEVICE_NAME, "CL_DEVICE_NAME");
      } catch (const std::exception&) {
      }
      throw mem::foreign_queue_error(
          fmt::format("the command queue belongs to device \"{}\", not to the copier's \"{}\"", other, caps_.name));
    }
    return q;
  }

  device_caps caps_;
  std::string key_;
  context ctx_;
  command_queue queue_;
  std::unique_ptr<cl_host_resource> staging_;  // last: unmapped while the context lives
};

}  // namespace

std::unique_ptr<mem::device_step> make_staged_step(std::string_view platform, int device) {
  const auto found = find_device(platform, device);
  return std::make_unique<cl_step>(found.platform, found.device);
}

std::unique_ptr<mem::device_step> make_staged_step(const platform_desc& platform, const device_caps& device,
                                                   const context& ctx) {
  return std::make_unique<cl_step>(platform, device, ctx);
}

}  // namespace xfer::opencl
