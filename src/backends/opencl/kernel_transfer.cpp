// Routes where a kernel moves the data: kernel-host (a kernel copies between
// host-visible memory, a cl_mem or SVM, and a device buffer) and
// kernel-device (between two device buffers). Timed behind the gate by
// profiling events.
#include <algorithm>
#include <fmt/format.h>
#include <functional>
#include <memory>
#include <stdexcept>

#include "opencl_transfer.hpp"
#include "program.hpp"

namespace xfer::opencl {
namespace {

using set_arg = std::function<void(cl_kernel, cl_uint)>;

set_arg arg(const mem_object& m) {
  const cl_mem mem = m.get();
  return [mem](cl_kernel k, cl_uint i) {
    check(clSetKernelArg(k, i, sizeof mem, &mem), "clSetKernelArg", fmt::format("arg {}: device buffer", i));
  };
}
set_arg arg(const host_block& b) {
  return [&b](cl_kernel k, cl_uint i) { b.set_kernel_arg(k, i); };
}

class kernel_transfer final : public opencl_transfer {
 public:
  // Kernels need the host memory unmapped while they run (host_open = false).
  kernel_transfer(const point_spec& p, const device_context& dev, const mem::kind_options& kinds)
      : opencl_transfer(p, dev, kinds, /*host_open=*/false, /*events=*/true) {
    const program& prog = dev.copy_program;
    if (!prog) throw std::logic_error("kernel route prepared without the copy program");
    switch (spec_.dir) {
      case direction::h2d: kernels_.push_back(copy_kernel(prog, arg(*host_a_), arg(dev_a_))); break;
      case direction::d2h: kernels_.push_back(copy_kernel(prog, arg(dev_a_), arg(*host_a_))); break;
      case direction::rw:
        kernels_.push_back(copy_kernel(prog, arg(*host_a_), arg(dev_a_)));
        kernels_.push_back(copy_kernel(prog, arg(dev_a_), arg(*host_a_)));
        break;
      case direction::bidir:
        kernels_.push_back(copy_kernel(prog, arg(*host_a_), arg(dev_a_)));
        kernels_.push_back(copy_kernel(prog, arg(dev_b_), arg(*host_b_)));
        break;
      case direction::d2d: kernels_.push_back(copy_kernel(prog, arg(dev_a_), arg(dev_b_))); break;
    }
    // Enough work items to fill the device, each striding over 16-byte vectors.
    std::size_t wg = 0;
    check(clGetKernelWorkGroupInfo(kernels_[0].get(), caps_.id, CL_KERNEL_WORK_GROUP_SIZE, sizeof wg, &wg, nullptr),
          "clGetKernelWorkGroupInfo", "CL_KERNEL_WORK_GROUP_SIZE");
    local_ = std::max<std::size_t>(1, std::min<std::size_t>({256, wg, caps_.max_work_group}));
    const std::size_t vectors = std::max<std::size_t>(1, spec_.bytes / 16);
    const std::size_t most = std::max<std::size_t>(1, caps_.compute_units) * 2048;
    const std::size_t items = std::min(vectors, most);
    global_ = (items + local_ - 1) / local_ * local_;

    // bidir: one direction per queue.
    std::vector<queue_op> ops;
    for (std::size_t i = 0; i < kernels_.size(); ++i)
      ops.push_back(kernel_op(spec_.dir == direction::bidir ? i : 0, kernels_[i]));
    set_ops(std::move(ops));
  }

  sample run(std::size_t reps) override { return run_gated(reps); }

 private:
  // One kernel object per command, each with its own arguments.
  kernel copy_kernel(const program& prog, const set_arg& src, const set_arg& dst) const {
    kernel k = make_kernel(prog.get(), "copy_bytes");
    src(k.get(), 0);
    dst(k.get(), 1);
    const cl_ulong n = spec_.bytes;
    check(clSetKernelArg(k.get(), 2, sizeof n, &n), "clSetKernelArg", "arg 2: byte count");
    return k;
  }

  queue_op kernel_op(std::size_t lane, const kernel& k) const {
    const cl_kernel kk = k.get();
    const std::size_t* global = &global_;
    const std::size_t* local = &local_;
    const std::size_t n = spec_.bytes;
    return {lane, [kk, global, local, n](cl_command_queue q, cl_bool, cl_uint nw, const cl_event* w, cl_event* e) {
              check(clEnqueueNDRangeKernel(q, kk, 1, nullptr, global, local, nw, w, e), "clEnqueueNDRangeKernel",
                    fmt::format("copy_bytes, {} B, {} x {} work items", n, *global / *local, *local));
            }};
  }

  std::vector<kernel> kernels_;
  std::size_t global_ = 1, local_ = 1;
};

}  // namespace

std::unique_ptr<transfer> make_kernel_transfer(const point_spec& p, const device_context& dev,
                                               const mem::kind_options& kinds) {
  return std::make_unique<kernel_transfer>(p, dev, kinds);
}

}  // namespace xfer::opencl
