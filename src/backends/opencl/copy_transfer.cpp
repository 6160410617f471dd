// Routes copy-async and copy-sync: clEnqueueWrite/Read/CopyBuffer driven
// through the API, non-blocking behind the gate and timed by profiling events
// (copy-async), or blocking one after another and timed by the wall clock
// (copy-sync, what a plain program sees).
#include <fmt/format.h>
#include <memory>

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

}  // namespace

std::unique_ptr<transfer> make_copy_transfer(const point_spec& p, route_id route, const device_context& dev,
                                             const mem::kind_options& kinds) {
  return std::make_unique<copy_transfer>(p, route, dev, kinds);
}

}  // namespace xfer::opencl
