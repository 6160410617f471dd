// Routes copy and blocks-list. Copy: vkCmdCopyBuffer between the point's host memory and device
// memory, on the device's transfer-only queue family where it has one (a copy
// engine), recorded behind the timeline gate and timed by timestamps. Plain
// pageable memory is staged by the application: memcpy into a host-coherent
// buffer, then the copy (or the reverse), by the wall clock.
#include <algorithm>
#include <tuple>
#include <memory>
#include <string>
#include <fmt/format.h>
#include <xfer/core/block_route.hpp>
#include <xfer/core/errors.hpp>
#include <xfer/mem/settings.hpp>

#include "transfer.hpp"

namespace xfer::vulkan {
namespace {

// The probe knobs of bench/vulkan_copy_probe.sh, which looked for why this
// route trails CUDA's copy on NVIDIA: the installed inputs' (settings.hpp,
// XFER_VK_COPY_*; the defaults are what a Vulkan program does), recorded in
// the run's settings once a point uses them.
mem::vulkan_copy_inputs copy_knobs() {
  const auto in = mem::current_inputs();
  const auto& k = in->vulkan_copy;
  const auto put = [&](const char* name, const char* origin_key, std::string value) {
    mem::setting s{"vulkan-copy", "", name, std::move(value), mem::setting_source::default_value, ""};
    for (const auto& [n, o] : in->origins)
      if (n == origin_key) std::tie(s.source, s.origin) = o;
    mem::record_setting(std::move(s));
  };
  put("queues", "vulkan_queues", k.queues);
  put("split", "vulkan_split", k.split ? "1" : "0");
  put("chunk_bytes", "vulkan_chunk_bytes", fmt::format("{}", k.chunk_bytes));
  return k;
}

// queues: transfer (the transfer-only family, else compute), compute (the
// compute family), mixed (the transfer family's queue first, the compute
// family's second). bidir and the split (h2d and d2h as two halves, one on
// each of two queues) use two.
std::vector<queue_ref> copy_lanes(const point_spec& p, const device_context& dev, const mem::vulkan_copy_inputs& k) {
  const std::string& q = k.queues;
  const queue_ref& first = q == "compute" ? dev.compute_queue(0) : dev.copy_queue(0);
  if (p.dir != direction::bidir && !k.split) return {first};
  const queue_ref& second = q == "transfer" ? dev.copy_queue(1) : dev.compute_queue(q == "mixed" ? 0 : 1);
  return {first, second};
}

class copy_transfer final : public vulkan_transfer {
 public:
  copy_transfer(const point_spec& p, const device_context& dev, const mem::kind_options& kinds)
      : vulkan_transfer(p, dev, kinds, copy_lanes(p, dev, copy_knobs())),
        chunk_(mem::current_inputs()->vulkan_copy.chunk_bytes),
        split_(mem::current_inputs()->vulkan_copy.split) {
    switch (spec_.dir) {
      case direction::h2d:
        if (split_ && !staged_) {
          set_ops({half(0, host_a_->buf, dev_a_), half(1, host_a_->buf, dev_a_)});
          break;
        }
        set_ops({to_device(0, *host_a_, dev_a_)});
        break;
      case direction::d2h:
        if (split_ && !staged_) {
          set_ops({half(0, dev_a_, host_a_->buf), half(1, dev_a_, host_a_->buf)});
          break;
        }
        set_ops({to_host(0, dev_a_, *host_a_)});
        break;
      case direction::rw: set_ops({to_device(0, *host_a_, dev_a_), to_host(0, dev_a_, *host_a_)}); break;
      case direction::bidir: set_ops({to_device(0, *host_a_, dev_a_), to_host(1, dev_b_, *host_b_)}); break;
      case direction::d2d: set_ops({{0, [this](VkCommandBuffer cb) { copy_cmd(cb, dev_a_, dev_b_); }, {}, {}}}); break;
    }
  }

 private:
  const std::uint64_t chunk_;
  const bool split_;

  void chunked(VkCommandBuffer cb, const buffer& src, const buffer& dst) const {
    if (!chunk_ || chunk_ >= spec_.bytes) return copy_cmd(cb, src, dst);
    std::vector<VkBufferCopy> regions;
    for (std::uint64_t off = 0; off < spec_.bytes; off += chunk_)
      regions.push_back({off, off, std::min(chunk_, spec_.bytes - off)});
    vk().vkCmdCopyBuffer(cb, src.get(), dst.get(), static_cast<std::uint32_t>(regions.size()), regions.data());
  }
  op half(std::size_t lane, const buffer& src, const buffer& dst) {
    return {lane, [this, lane, &src, &dst](VkCommandBuffer cb) {
              const std::uint64_t h = spec_.bytes / 2, off = lane ? h : 0, n = lane ? spec_.bytes - h : h;
              VkBufferCopy region{off, off, n};
              vk().vkCmdCopyBuffer(cb, src.get(), dst.get(), 1, &region);
            }, {}, {}};
  }
  op to_device(std::size_t lane, host_side& h, const buffer& d) {
    return {lane, [this, &h, &d](VkCommandBuffer cb) { chunked(cb, h.buf, d); }, stage_in(h), {}};
  }
  op to_host(std::size_t lane, const buffer& d, host_side& h) {
    return {lane, [this, &h, &d](VkCommandBuffer cb) { chunked(cb, d, h.buf); }, {}, stage_out(h)};
  }
};

// Route blocks-list: every block of the array moved by the fixed-seed
// scattered list (core/block_route.hpp) as one vkCmdCopyBuffer with a region
// per block: Vulkan's list of copies in one command buffer, beside the block
// copier's ways on the other backends.
class block_list_transfer final : public vulkan_transfer {
 public:
  block_list_transfer(const point_spec& p, const device_context& dev, const mem::kind_options& kinds)
      : vulkan_transfer(p, dev, kinds, {dev.copy_queue(0)}) {
    const std::size_t b = p.block_bytes;
    pairs_ = scattered_blocks(p);
    for (const auto& q : pairs_)
      regions_.push_back({std::uint64_t(q.src) * b, std::uint64_t(q.dst) * b, b});
    const auto list = [this](VkCommandBuffer cb, const buffer& src, const buffer& dst) {
      vk().vkCmdCopyBuffer(cb, src.get(), dst.get(), static_cast<std::uint32_t>(regions_.size()), regions_.data());
    };
    if (p.dir == direction::h2d)
      set_ops({{0, [this, list](VkCommandBuffer cb) { list(cb, host_a_->buf, dev_a_); }, stage_in(*host_a_), {}}});
    else
      set_ops({{0, [this, list](VkCommandBuffer cb) { list(cb, dev_a_, host_a_->buf); }, {}, stage_out(*host_a_)}});
  }

  // The source holds the pattern in place, so destination block dst holds
  // its block src: core's check reads the destination put back in source
  // order (every block is in the permutation, so the pattern is whole).
  void reach_place(const sample_destination& d, place_access a,
                   const std::function<void(std::span<std::byte>)>& use) override {
    vulkan_transfer::reach_place(
        d, a, [&](std::span<std::byte> whole) { reach_in_source_order(pairs_, spec_.block_bytes, a, whole, use); });
  }
  std::string note() const override {
    return fmt::format("{} blocks of {} B (scattered, fixed seed), one vkCmdCopyBuffer with a region each",
                       pairs_.size(), spec_.block_bytes);
  }

 private:
  std::vector<mem::block_pair> pairs_;
  std::vector<VkBufferCopy> regions_;
};

}  // namespace

std::unique_ptr<transfer> make_block_list_transfer(const point_spec& p, const device_context& dev,
                                                   const mem::kind_options& kinds) {
  if (p.dir != direction::h2d && p.dir != direction::d2h)
    throw std::logic_error("blocks-list moves h2d or d2h");
  if (p.block_bytes == 0 || p.bytes % p.block_bytes)
    throw std::logic_error(fmt::format("blocks-list was handed blocks of {} B for {} B", p.block_bytes, p.bytes));
  return std::make_unique<block_list_transfer>(p, dev, kinds);
}

std::unique_ptr<transfer> make_copy_transfer(const point_spec& p, const device_context& dev,
                                             const mem::kind_options& kinds) {
  return std::make_unique<copy_transfer>(p, dev, kinds);
}

}  // namespace xfer::vulkan
