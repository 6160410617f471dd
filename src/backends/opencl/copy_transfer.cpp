// Routes copy-async and copy-sync: clEnqueueWrite/Read/CopyBuffer driven
// through the API, non-blocking behind the gate and timed by profiling events
// (copy-async), or blocking one after another and timed by the wall clock
// (copy-sync, what a plain program sees).
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
};

}  // namespace

std::unique_ptr<transfer> make_copy_transfer(const point_spec& p, route_id route, const device_context& dev,
                                             const mem::kind_options& kinds) {
  return std::make_unique<copy_transfer>(p, route, dev, kinds);
}

}  // namespace xfer::opencl
