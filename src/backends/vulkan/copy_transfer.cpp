// Route copy: vkCmdCopyBuffer between the point's host memory and device
// memory, on the device's transfer-only queue family where it has one (a copy
// engine), recorded behind the timeline gate and timed by timestamps. Plain
// pageable memory is staged by the application: memcpy into a host-coherent
// buffer, then the copy (or the reverse), by the wall clock.
#include <memory>

#include "transfer.hpp"

namespace xfer::vulkan {
namespace {

std::vector<queue_ref> copy_lanes(const point_spec& p, const device_context& dev) {
  if (p.dir == direction::bidir) return {dev.copy_queue(0), dev.copy_queue(1)};
  return {dev.copy_queue(0)};
}

class copy_transfer final : public vulkan_transfer {
 public:
  copy_transfer(const point_spec& p, const device_context& dev, const mem::kind_options& kinds)
      : vulkan_transfer(p, dev, kinds, copy_lanes(p, dev)) {
    switch (spec_.dir) {
      case direction::h2d: set_ops({to_device(0, *host_a_, dev_a_)}); break;
      case direction::d2h: set_ops({to_host(0, dev_a_, *host_a_)}); break;
      case direction::rw: set_ops({to_device(0, *host_a_, dev_a_), to_host(0, dev_a_, *host_a_)}); break;
      case direction::bidir: set_ops({to_device(0, *host_a_, dev_a_), to_host(1, dev_b_, *host_b_)}); break;
      case direction::d2d: set_ops({{0, [this](VkCommandBuffer cb) { copy_cmd(cb, dev_a_, dev_b_); }, {}, {}}}); break;
    }
  }

 private:
  op to_device(std::size_t lane, host_side& h, const buffer& d) {
    return {lane, [this, &h, &d](VkCommandBuffer cb) { copy_cmd(cb, h.buf, d); }, stage_in(h), {}};
  }
  op to_host(std::size_t lane, const buffer& d, host_side& h) {
    return {lane, [this, &h, &d](VkCommandBuffer cb) { copy_cmd(cb, d, h.buf); }, {}, stage_out(h)};
  }
};

}  // namespace

std::unique_ptr<transfer> make_copy_transfer(const point_spec& p, const device_context& dev,
                                             const mem::kind_options& kinds) {
  return std::make_unique<copy_transfer>(p, dev, kinds);
}

}  // namespace xfer::vulkan
