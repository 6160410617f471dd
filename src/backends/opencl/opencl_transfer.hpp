#pragma once
// What every OpenCL transfer shares, as cuda_transfer does for CUDA: the
// buffers of its direction (allocated, and sources filled, before timing), how
// core's per-sample poison and check reach them (device memory through maps),
// and the commands of one repetition with the two ways of timing them through
// core's timed-batch loop: behind the user-event gate by profiling events
// (copy-async, the kernel routes), or blocking by the wall clock (copy-sync). The route families build on it: copy_transfer.cpp,
// kernel_transfer.cpp, map_transfer.cpp.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>
#include <xfer/core/backend.hpp>
#include <xfer/core/sample_check.hpp>
#include <xfer/core/timing.hpp>
#include <xfer/mem/kinds.hpp>

#include "gate.hpp"
#include "opencl/cl.hpp"
#include "opencl/host_memory.hpp"
#include "routes.hpp"

namespace xfer::opencl {

class opencl_transfer : public transfer {
 public:
  ~opencl_transfer() override;

  std::span<const sample_destination> places() const override;
  std::uint64_t place_bytes() const override { return spec_.bytes; }
  void reach_place(const sample_destination& d, place_access a,
                   const std::function<void(std::span<std::byte>)>& use) override;
  first_use setup_costs() const override { return costs_; }
  clock_kind timer_kind() const override { return events_ ? clock_kind::event : clock_kind::wall; }
  double timer_resolution_s() const override;
  std::uint64_t bytes_per_rep() const override;

 protected:
  // One command of a repetition, enqueued on the queue of its lane (bidir
  // runs one direction on each of two queues).
  using enqueue_fn = std::function<void(cl_command_queue, cl_bool blocking, cl_uint n_wait, const cl_event* wait,
                                        cl_event* out)>;
  struct queue_op {
    std::size_t lane;
    enqueue_fn enqueue;
  };

  // host_open: the host memory stays mapped for the CPU for the transfer's
  // life (every route but kernel-host, whose kernels need it unmapped).
  // events: the route is timed behind the gate by profiling events.
  opencl_transfer(const point_spec& p, const device_context& dev, const mem::kind_options& kinds, bool host_open,
                  bool events);

  // The commands of one repetition (set by the route's constructor).
  void set_ops(std::vector<queue_op> ops);
  // Non-blocking commands behind the gate, timed by profiling events.
  sample run_gated(std::size_t reps);
  // Blocking commands one after another, timed by the wall clock.
  sample run_blocking(std::size_t reps);
  // Step k of a repetition on its own, ungated, finished before it returns
  // (rw's verification runs the write and the read-back apart).
  void run_step(std::size_t k) override;

  // ---- data ----
  // Overwrites all of it: with WRITE_INVALIDATE_REGION (1.2+) a discrete
  // device need not copy the old contents to the host first, which matters
  // now that every timed sample is poisoned.
  cl_map_flags overwrite() const;
  void fill_device(const mem_object& m, std::uint64_t seed);
  void poison_device(const mem_object& m);

  point_spec spec_;
  device_caps caps_;
  // Handles first: members are destroyed in reverse, so the buffers below are
  // released while their context and queues are still alive.
  context ctx_;
  command_queue queues_[2];
  std::unique_ptr<user_event_gate> gate_;  // event routes only
  no_gate no_gate_;                        // blocking routes
  std::unique_ptr<timed_batches> loop_;
  bool events_;
  bool host_open_;
  std::unique_ptr<host_block> host_a_, host_b_;
  mem_object dev_a_, dev_b_;
  std::vector<queue_op> ops_;
  std::size_t lanes_ = 1;
  first_use costs_;

 private:
  void allocate(const mem::kind_options& kinds);
  void touch();
};

// route copy-async or copy-sync
std::unique_ptr<transfer> make_copy_transfer(const point_spec& p, route_id route, const device_context& dev,
                                             const mem::kind_options& kinds);
// routes kernel-host and kernel-device
std::unique_ptr<transfer> make_kernel_transfer(const point_spec& p, const device_context& dev,
                                               const mem::kind_options& kinds);
// route blocks-list (sweep --blocks)
std::unique_ptr<transfer> make_block_list_transfer(const point_spec& p, const device_context& dev,
                                                   const mem::kind_options& kinds);
// route map
std::unique_ptr<transfer> make_map_transfer(const point_spec& p, const device_context& dev,
                                            const mem::kind_options& kinds);

}  // namespace xfer::opencl
