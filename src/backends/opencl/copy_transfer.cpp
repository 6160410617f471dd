// Routes copy-async and copy-sync: clEnqueueWrite/Read/CopyBuffer driven
// through the API, non-blocking behind the gate and timed by profiling events
// (copy-async), or blocking one after another and timed by the wall clock
// (copy-sync, what a plain program sees).
#include <fmt/format.h>
#include <memory>
#include <xfer/core/block_route.hpp>

#include "opencl_transfer.hpp"

namespace xfer::opencl {
namespace {

class copy_transfer final : public opencl_transfer {
 public:
  copy_transfer(const point_spec& p, route_id route, const device_context& dev, const mem::kind_options& kinds)
      : opencl_transfer(p, dev, kinds, /*host_open=*/true, /*events=*/route == route_id::copy_async) {
    switch (spec_.dir) {
      case direction::h2d: set_ops({write_op(0, *host_a_, dev_a_)}); break;
      case direction::d2h: set_ops({read_op(0, dev_a_, *host_a_)}); break;
      case direction::rw: set_ops({write_op(0, *host_a_, dev_a_), read_op(0, dev_a_, *host_a_)}); break;
      case direction::bidir: set_ops({write_op(0, *host_a_, dev_a_), read_op(1, dev_b_, *host_b_)}); break;
      case direction::d2d: set_ops({copy_op(dev_a_, dev_b_)}); break;
    }
  }

  sample run(std::size_t reps) override { return events_ ? run_gated(reps) : run_blocking(reps); }

 private:
  queue_op write_op(std::size_t lane, host_block& src, const mem_object& dst) const {
    const std::size_t n = spec_.bytes;
    const cl_mem m = dst.get();
    return {lane, [&src, m, n](cl_command_queue q, cl_bool blocking, cl_uint nw, const cl_event* w, cl_event* e) {
              check(clEnqueueWriteBuffer(q, m, blocking, 0, n, src.data(), nw, w, e), "clEnqueueWriteBuffer",
                    fmt::format("{} B", n));
            }};
  }

  queue_op read_op(std::size_t lane, const mem_object& src, host_block& dst) const {
    const std::size_t n = spec_.bytes;
    const cl_mem m = src.get();
    return {lane, [&dst, m, n](cl_command_queue q, cl_bool blocking, cl_uint nw, const cl_event* w, cl_event* e) {
              check(clEnqueueReadBuffer(q, m, blocking, 0, n, dst.data(), nw, w, e), "clEnqueueReadBuffer",
                    fmt::format("{} B", n));
            }};
  }

  queue_op copy_op(const mem_object& src, const mem_object& dst) const {
    const std::size_t n = spec_.bytes;
    const cl_mem s = src.get(), d = dst.get();
    return {0, [s, d, n](cl_command_queue q, cl_bool, cl_uint nw, const cl_event* w, cl_event* e) {
              check(clEnqueueCopyBuffer(q, s, d, 0, 0, n, nw, w, e), "clEnqueueCopyBuffer", fmt::format("{} B", n));
            }};
  }
};

// Route blocks-list: every block of the array moved by the fixed-seed
// scattered list (core/block_route.hpp), a non-blocking write or read per
// block on one queue and one clFinish: OpenCL's list of copies, beside the
// block copier's ways on the other backends. Wall clock, as theirs. The
// source holds the pattern in place: core's check reads the destination put
// back in source order.
class block_list_transfer final : public opencl_transfer {
 public:
  block_list_transfer(const point_spec& p, const device_context& dev, const mem::kind_options& kinds)
      : opencl_transfer(p, dev, kinds, /*host_open=*/true, /*events=*/false), pairs_(scattered_blocks(p)) {
    const std::size_t b = p.block_bytes;
    const cl_mem m = dev_a_.get();
    host_block& h = *host_a_;
    std::vector<queue_op> ops;
    for (const auto& q : pairs_) {
      const std::size_t src = std::size_t(q.src) * b, dst = std::size_t(q.dst) * b;
      if (p.dir == direction::h2d)
        ops.push_back({0, [&h, m, src, dst, b](cl_command_queue cq, cl_bool blocking, cl_uint nw, const cl_event* w,
                                               cl_event* e) {
                         check(clEnqueueWriteBuffer(cq, m, blocking, dst, b, h.data() + src, nw, w, e),
                               "clEnqueueWriteBuffer", fmt::format("block of {} B at {}", b, dst));
                       }});
      else
        ops.push_back({0, [&h, m, src, dst, b](cl_command_queue cq, cl_bool blocking, cl_uint nw, const cl_event* w,
                                               cl_event* e) {
                         check(clEnqueueReadBuffer(cq, m, blocking, src, b, h.data() + dst, nw, w, e),
                               "clEnqueueReadBuffer", fmt::format("block of {} B at {}", b, src));
                       }});
    }
    set_ops(std::move(ops));
  }

  std::string note() const override {
    return fmt::format("{} blocks of {} B (scattered, fixed seed), a non-blocking copy each on one queue, one clFinish",
                       pairs_.size(), spec_.block_bytes);
  }
  void reach_place(const sample_destination& d, place_access a,
                   const std::function<void(std::span<std::byte>)>& use) override {
    opencl_transfer::reach_place(
        d, a, [&](std::span<std::byte> whole) { reach_in_source_order(pairs_, spec_.block_bytes, a, whole, use); });
  }
  sample run(std::size_t reps) override {
    wall_timer timer;
    return loop_->run(timer, reps, [&](std::size_t, std::size_t) {
      for (auto& op : ops_) op.enqueue(queues_[0].get(), CL_FALSE, 0, nullptr, nullptr);
      check(clFinish(queues_[0].get()), "clFinish", "after the block list");
    });
  }
  void run_step(std::size_t) override { run(1); }


 private:
  std::vector<mem::block_pair> pairs_;
};

}  // namespace

std::unique_ptr<transfer> make_block_list_transfer(const point_spec& p, const device_context& dev,
                                                   const mem::kind_options& kinds) {
  require_scattered_list(p);
  if ((p.dir != direction::h2d && p.dir != direction::d2h) || p.block_bytes == 0 || p.bytes % p.block_bytes)
    throw std::logic_error(fmt::format("blocks-list was handed {} blocks of {} B for {} B", to_string(p.dir),
                                       p.block_bytes, p.bytes));
  return std::make_unique<block_list_transfer>(p, dev, kinds);
}

std::unique_ptr<transfer> make_copy_transfer(const point_spec& p, route_id route, const device_context& dev,
                                             const mem::kind_options& kinds) {
  return std::make_unique<copy_transfer>(p, route, dev, kinds);
}

}  // namespace xfer::opencl
