// Route peer on OpenCL: device memory of one device to another's. Each device
// here has its own context (make_device_context), and a cl_mem cannot cross
// contexts, so between two devices the copy is staged through a host buffer:
// read from the source device, then write to the destination, both blocking
// and timed by the wall clock. On one device it is clEnqueueCopyBuffer.
#include <chrono>
#include <fmt/format.h>
#include <xfer/core/pattern.hpp>
#include <xfer/core/sample_check.hpp>
#include <xfer/core/timing.hpp>
#include <xfer/mem/buffer.hpp>
#include <xfer/mem/host_resources.hpp>

#include "routes.hpp"

namespace xfer::opencl {
namespace {

using clock = std::chrono::steady_clock;
constexpr std::uint64_t seed_peer = 7;

mem_object make_buffer(const device_context& dev, std::size_t bytes) {
  cl_int err = CL_SUCCESS;
  mem_object m(clCreateBuffer(dev.ctx.get(), CL_MEM_READ_WRITE, bytes, nullptr, &err));
  check(err, "clCreateBuffer", fmt::format("{} B for a peer copy", bytes));
  return m;
}

class peer_transfer final : public transfer {
 public:
  peer_transfer(const point_spec& p, const device_context& src, const device_context& dst)
      : spec_(p), src_(src), dst_(dst), local_(&src == &dst) {
    const auto n = static_cast<std::size_t>(p.bytes);
    const auto t0 = clock::now();
    src_buf_ = make_buffer(src_, n);
    dst_buf_ = make_buffer(dst_, n);
    if (!local_) staging_ = mem::buffer(aligned_, n, 4096);
    costs_.alloc_s = seconds_since(t0);
    // The source's pattern goes up once, through a host buffer of its own.
    const auto t1 = clock::now();
    mem::buffer pattern(aligned_, n, 4096);
    fill_pattern(pattern.data(), n, seed_peer);
    check(clEnqueueWriteBuffer(src_.queues[0].get(), src_buf_.get(), CL_TRUE, 0, n, pattern.data(), 0, nullptr, nullptr),
          "clEnqueueWriteBuffer", "the peer copy's source pattern");
    costs_.touch_s = seconds_since(t1);
  }

  sample run(std::size_t reps) override {
    wall_timer timer;
    return loop_.run(timer, reps, [&](std::size_t, std::size_t) { copy_once(); });
  }

  // Core verifies (src/core/verify.cpp) the one place, the destination
  // device's buffer, reached through a host buffer: it may live in another
  // context than the source's.
  std::span<const sample_destination> places() const override {
    static constexpr sample_destination dst[] = {{true, 1, seed_peer, true, "peer copy destination"}};
    return dst;
  }
  std::uint64_t place_bytes() const override { return spec_.bytes; }
  void reach_place(const sample_destination&, place_access a,
                   const std::function<void(std::span<std::byte>)>& use) override {
    const auto n = static_cast<std::size_t>(spec_.bytes);
    const cl_command_queue q = dst_.queues[0].get();
    mem::buffer host(aligned_, n, 4096);
    if (a != place_access::overwrite)
      check(clEnqueueReadBuffer(q, dst_buf_.get(), CL_TRUE, 0, n, host.data(), 0, nullptr, nullptr),
            "clEnqueueReadBuffer", "reading the peer copy's destination back");
    use({host.bytes_ptr(), n});
    if (a != place_access::read)
      check(clEnqueueWriteBuffer(q, dst_buf_.get(), CL_TRUE, 0, n, host.data(), 0, nullptr, nullptr),
            "clEnqueueWriteBuffer", "writing the peer copy's destination");
  }
  first_use setup_costs() const override { return costs_; }
  clock_kind timer_kind() const override { return clock_kind::wall; }
  double timer_resolution_s() const override { return 1e-7; }
  std::uint64_t bytes_per_rep() const override { return spec_.bytes; }

 private:
  void copy_once() {
    const auto n = static_cast<std::size_t>(spec_.bytes);
    if (local_) {
      cl_command_queue q = src_.queues[0].get();
      check(clEnqueueCopyBuffer(q, src_buf_.get(), dst_buf_.get(), 0, 0, n, 0, nullptr, nullptr), "clEnqueueCopyBuffer");
      check(clFinish(q), "clFinish");
      return;
    }
    check(clEnqueueReadBuffer(src_.queues[0].get(), src_buf_.get(), CL_TRUE, 0, n, staging_.data(), 0, nullptr, nullptr),
          "clEnqueueReadBuffer", "the peer copy's source into the host buffer");
    check(clEnqueueWriteBuffer(dst_.queues[0].get(), dst_buf_.get(), CL_TRUE, 0, n, staging_.data(), 0, nullptr, nullptr),
          "clEnqueueWriteBuffer", "the host buffer into the peer copy's destination");
  }

  point_spec spec_;
  const device_context& src_;
  const device_context& dst_;
  bool local_;
  mem::aligned_resource aligned_{4096};
  mem_object src_buf_, dst_buf_;
  mem::buffer staging_;
  first_use costs_;
  no_gate gate_;
  timed_batches loop_{gate_};
};

}  // namespace

std::unique_ptr<transfer> make_peer_transfer(const point_spec& p, const device_context& src, const device_context& dst) {
  return std::make_unique<peer_transfer>(p, src, dst);
}

}  // namespace xfer::opencl
