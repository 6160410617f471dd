// Route kernel-host: a compute shader (shaders/copy.comp) copies between
// host-visible memory the device reaches over the link (host-coherent,
// host-cached, imported) and a device buffer, on a compute queue, behind the
// gate and timed by timestamps.
#include <fmt/format.h>
#include <memory>
#include <xfer/core/errors.hpp>

#include "kernel.hpp"
#include "transfer.hpp"

namespace xfer::vulkan {
namespace {

std::vector<queue_ref> compute_lanes(const point_spec& p, const device_context& dev) {
  if (p.dir == direction::bidir) return {dev.compute_queue(0), dev.compute_queue(1)};
  return {dev.compute_queue(0)};
}

class kernel_transfer final : public vulkan_transfer {
 public:
  kernel_transfer(const point_spec& p, const device_context& dev, const mem::kind_options& kinds, compute_pipeline& pipe)
      : vulkan_transfer(p, dev, kinds, compute_lanes(p, dev)), pipe_(pipe) {
    switch (spec_.dir) {
      case direction::h2d: set_ops({dispatch(0, host_a_->buf, dev_a_)}); break;
      case direction::d2h: set_ops({dispatch(0, dev_a_, host_a_->buf)}); break;
      case direction::rw: set_ops({dispatch(0, host_a_->buf, dev_a_), dispatch(0, dev_a_, host_a_->buf)}); break;
      case direction::bidir: set_ops({dispatch(0, host_a_->buf, dev_a_), dispatch(1, dev_b_, host_b_->buf)}); break;
      case direction::d2d: throw std::logic_error("kernel-host moves no data d2d");
    }
  }
  ~kernel_transfer() override {
    // The base waits for the device in its destructor, after this one: wait here, before the sets go.
    vk().vkDeviceWaitIdle(dev_.get());
    for (auto s : sets_) pipe_.release(s);
  }

 private:
  op dispatch(std::size_t lane, const buffer& src, const buffer& dst) {
    const VkDescriptorSet set = bind_copy(pipe_, src.get(), dst.get(), spec_.bytes);
    sets_.push_back(set);
    const std::uint64_t n = spec_.bytes;
    return {lane, [this, set, n](VkCommandBuffer cb) { record_copy(pipe_, cb, set, n); }, {}, {}};
  }

  compute_pipeline& pipe_;
  std::vector<VkDescriptorSet> sets_;
};

}  // namespace

std::string kernel_host_kind_gap(const std::string& kind) {
  if (kind == "device-local-host-visible")
    return "device-local-host-visible is the device's own memory: route kernel-host reads and writes host memory";
  if (!is_vulkan_kind(kind))
    return fmt::format("a shader cannot reach {} memory: it needs host memory the device maps "
                       "(host-coherent, host-cached, imported)",
                       kind);
  return {};
}

void require_kernel_host(const point_spec& p, const device_caps& caps) {
  if (auto why = kernel_host_kind_gap(p.host_memory); !why.empty()) throw skip_point(why);
  if (copy_shader_spirv().empty())
    throw skip_point("this build has no SPIR-V for the compute shader (no glslc or glslangValidator at configure time)");
  const std::uint64_t words = (p.bytes + 3) / 4 * 4;
  if (caps.max_storage_range && words > caps.max_storage_range)
    throw skip_point(fmt::format("{} B is more than one storage buffer may span on this device (maxStorageBufferRange {} B)",
                                 p.bytes, caps.max_storage_range));
}

std::unique_ptr<transfer> make_kernel_transfer(const point_spec& p, const device_context& dev,
                                               const mem::kind_options& kinds, compute_pipeline& pipe) {
  return std::make_unique<kernel_transfer>(p, dev, kinds, pipe);
}

}  // namespace xfer::vulkan
