// Route map: map the device buffer, memcpy to or from it, unmap; each part
// timed apart by the wall clock, as a program using mapping would spend it.
#include <chrono>
#include <cstring>
#include <fmt/format.h>
#include <functional>
#include <memory>
#include <xfer/core/errors.hpp>

#include "opencl_transfer.hpp"

namespace xfer::opencl {
namespace {

using clock = std::chrono::steady_clock;

struct map_parts {
  double map = 0, memcpy = 0, unmap = 0;
};

class map_transfer final : public opencl_transfer {
 public:
  map_transfer(const point_spec& p, const device_context& dev, const mem::kind_options& kinds)
      : opencl_transfer(p, dev, kinds, /*host_open=*/true, /*events=*/false) {
    switch (spec_.dir) {
      case direction::h2d: steps_ = {map_step(*host_a_, dev_a_, true)}; break;
      case direction::d2h: steps_ = {map_step(*host_a_, dev_a_, false)}; break;
      case direction::rw: steps_ = {map_step(*host_a_, dev_a_, true), map_step(*host_a_, dev_a_, false)}; break;
      default: throw skip_point(fmt::format("route map moves no data {}", to_string(spec_.dir)));
    }
  }

  sample run(std::size_t reps) override {
    map_parts parts;
    wall_timer timer;
    sample s = loop_->run(timer, reps, [&](std::size_t, std::size_t) {
      for (auto& step : steps_) step(parts);
    });
    s.parts = {{"map", parts.map}, {"memcpy", parts.memcpy}, {"unmap", parts.unmap}};
    return s;
  }

 protected:
  void run_step(std::size_t k) override {
    map_parts ignored;
    steps_.at(k)(ignored);
  }

 private:
  using step = std::function<void(map_parts&)>;

  step map_step(host_block& host, const mem_object& dev, bool to_device) const {
    const std::size_t n = spec_.bytes;
    const cl_mem m = dev.get();
    const cl_command_queue q = queues_[0].get();
    // WRITE_INVALIDATE_REGION (1.2+) spares the driver copying the old contents in.
    const cl_map_flags flags = to_device ? overwrite() : CL_MAP_READ;
    return [&host, m, n, q, flags, to_device](map_parts& parts) {
      const auto t0 = clock::now();
      cl_int rc = CL_SUCCESS;
      void* p = clEnqueueMapBuffer(q, m, CL_TRUE, flags, 0, n, 0, nullptr, nullptr, &rc);
      check(rc, "clEnqueueMapBuffer", fmt::format("for {}, {} B", to_device ? "writing" : "reading", n));
      const auto t1 = clock::now();
      if (to_device)
        std::memcpy(p, host.data(), n);
      else
        std::memcpy(host.data(), p, n);
      const auto t2 = clock::now();
      check(clEnqueueUnmapMemObject(q, m, p, 0, nullptr, nullptr), "clEnqueueUnmapMemObject", fmt::format("{} B", n));
      check(clFinish(q), "clFinish", "after unmap");
      const auto t3 = clock::now();
      parts.map += std::chrono::duration<double>(t1 - t0).count();
      parts.memcpy += std::chrono::duration<double>(t2 - t1).count();
      parts.unmap += std::chrono::duration<double>(t3 - t2).count();
    };
  }

  std::vector<step> steps_;
};

}  // namespace

std::unique_ptr<transfer> make_map_transfer(const point_spec& p, const device_context& dev,
                                            const mem::kind_options& kinds) {
  return std::make_unique<map_transfer>(p, dev, kinds);
}

}  // namespace xfer::opencl
