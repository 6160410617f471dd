// The base every Vulkan route builds on (transfer.hpp).
#include "transfer.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fmt/format.h>
#include <xfer/core/errors.hpp>
#include <xfer/core/pattern.hpp>
#include <xfer/core/sample_check.hpp>

namespace xfer::vulkan {
namespace {

using clock = std::chrono::steady_clock;

std::uint64_t round_up(std::uint64_t n, std::uint64_t to) { return (n + to - 1) / to * to; }

}  // namespace

host_side::~host_side() {
  buf = buffer();  // the import goes before the memory it imports
  if (block && res) res->deallocate(block, block_bytes, block_align);
}

vulkan_transfer::vulkan_transfer(const point_spec& p, const device_context& dev, const mem::kind_options& kinds,
                                 std::vector<queue_ref> lanes)
    : spec_(p), dev_(dev), lanes_(std::move(lanes)) {
  allocate(kinds);
  touch();
  std::vector<std::string> names;
  if (spec_.dir == direction::bidir && lanes_.size() > 1) names = {"h2d", "d2h"};
  if (staged_) {
    // One command at a time, with the application's copies between them.
    timer_ = std::make_unique<batch_timer>(dev_, std::vector<queue_ref>{lanes_[0]}, nullptr);
    loop_ = std::make_unique<timed_batches>(no_gate_);
  } else {
    gate_ = std::make_unique<timeline_gate>(dev_);
    timer_ = std::make_unique<batch_timer>(dev_, lanes_, gate_.get(), names);
    loop_ = std::make_unique<timed_batches>(*gate_);
  }
}

vulkan_transfer::~vulkan_transfer() {
  if (gate_) gate_->open();
  timer_.reset();
  vk().vkDeviceWaitIdle(dev_.get());
}

clock_kind vulkan_transfer::timer_kind() const { return staged_ ? clock_kind::wall : timer_->kind(); }

double vulkan_transfer::timer_resolution_s() const {
  return staged_ ? wall_timer().resolution_s() : timer_->resolution_s();
}

std::uint64_t vulkan_transfer::bytes_per_rep() const {
  return spec_.dir == direction::bidir || spec_.dir == direction::rw ? 2 * spec_.bytes : spec_.bytes;
}

// ---- setup ----

std::unique_ptr<host_side> vulkan_transfer::make_host(const mem::kind_options& kinds, bool cpu_reads) {
  auto h = std::make_unique<host_side>();
  const std::uint64_t n = spec_.bytes;
  if (auto cls = kind_class(spec_.host_memory)) {
    h->buf = buffer::allocate(dev_, n, *cls);
    return h;
  }
  if (spec_.host_memory == "imported") {
    const std::uint64_t align = std::max<std::uint64_t>(4096, dev_.caps().import_alignment);
    h->res = mem::make_host_kind("aligned", {static_cast<std::size_t>(align), kinds.unaligned_offset});
    h->block_bytes = round_up(std::max<std::uint64_t>(n, 1), align);
    h->block_align = align;
    h->block = h->res->allocate(h->block_bytes, align);
    h->buf = buffer::import(dev_, h->block, h->block_bytes);
    return h;
  }
  h->res = mem::make_host_kind(spec_.host_memory, kinds);
  if (!h->res) throw skip_point(fmt::format("the vulkan backend has no host memory kind '{}'", spec_.host_memory));
  h->block_bytes = std::max<std::uint64_t>(n, 1);
  h->block_align = std::min<std::size_t>(h->res->natural_alignment(), h->res->max_alignment());
  h->block = h->res->allocate(h->block_bytes, h->block_align);
  // What a careful program stages through: uncached (write-combined) memory
  // for what the CPU writes, cached memory for what it reads back.
  h->buf = buffer::allocate(dev_, n, cpu_reads ? mem_class::host_cached : mem_class::host_coherent);
  h->staged = true;
  staged_ = true;
  return h;
}

void vulkan_transfer::allocate(const mem::kind_options& kinds) {
  const auto t0 = clock::now();
  const bool host = spec_.host_memory != "none" && spec_.dir != direction::d2d;
  if (host) host_a_ = make_host(kinds, spec_.dir == direction::d2h || spec_.dir == direction::rw);
  if (host && spec_.dir == direction::bidir) host_b_ = make_host(kinds, true);
  dev_a_ = buffer::allocate(dev_, spec_.bytes, mem_class::device);
  if (spec_.dir == direction::bidir || spec_.dir == direction::d2d)
    dev_b_ = buffer::allocate(dev_, spec_.bytes, mem_class::device);
  costs_.alloc_s = std::chrono::duration<double>(clock::now() - t0).count();
}

// Sources get the pattern and destinations the poison, so that memory a
// driver allocates lazily is there (or the point is skipped) before sampling.
void vulkan_transfer::touch() {
  const auto t0 = clock::now();
  fill_sources(spec_.dir, spec_.bytes, [&](int b, std::uint64_t seed) { fill_device(b ? dev_b_ : dev_a_, seed); },
               [&](int b) { return (b ? host_b_ : host_a_)->data(); });
  poison_sample();  // every poisoned destination, through poison_place
  if (host_a_) host_a_->buf.flush();
  costs_.touch_s = std::chrono::duration<double>(clock::now() - t0).count();
}

void vulkan_transfer::set_ops(std::vector<op> ops) {
  ops_ = std::move(ops);
  std::size_t per_lane = 0;
  for (std::size_t l = 0; l < lanes_.size(); ++l)
    per_lane = std::max<std::size_t>(per_lane, std::count_if(ops_.begin(), ops_.end(), [&](const op& o) { return o.lane == l; }));
  if (!staged_) loop_ = std::make_unique<timed_batches>(*gate_, per_lane);
}

// ---- running ----

void vulkan_transfer::serialize(VkCommandBuffer cb) {
  VkMemoryBarrier b{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  b.srcAccessMask = VK_ACCESS_MEMORY_WRITE_BIT;
  b.dstAccessMask = VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT;
  vk().vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, 0, 1, &b, 0,
                            nullptr, 0, nullptr);
}

void vulkan_transfer::copy_cmd(VkCommandBuffer cb, const buffer& src, const buffer& dst) const {
  VkBufferCopy region{0, 0, std::max<std::uint64_t>(spec_.bytes, 1)};
  vk().vkCmdCopyBuffer(cb, src.get(), dst.get(), 1, &region);
}

sample vulkan_transfer::run(std::size_t reps) {
  if (!staged_) {
    return loop_->run(*timer_, reps, [&](std::size_t, std::size_t) {
      for (const auto& o : ops_) {
        const VkCommandBuffer cb = timer_->cmd(lanes_.size() > 1 ? o.lane : 0);
        serialize(cb);
        o.record(cb);
      }
    });
  }
  // What a Vulkan program does with memory the device cannot reach: copy it
  // through a host-visible buffer, one command at a time.
  // bidir runs its directions one after the other here; each is timed as a part.
  const bool bidir = spec_.dir == direction::bidir;
  double part[2] = {0, 0};
  wall_timer wall;
  sample s = loop_->run(wall, reps, [&](std::size_t, std::size_t) {
    for (std::size_t k = 0; k < ops_.size(); ++k) {
      const auto t0 = clock::now();
      run_step(k);
      if (bidir) part[ops_[k].lane] += std::chrono::duration<double>(clock::now() - t0).count();
    }
  });
  if (bidir) s.parts = {{"h2d", part[0]}, {"d2h", part[1]}};
  return s;
}

void vulkan_transfer::run_step(std::size_t k) {
  const op& o = ops_.at(k);
  if (o.pre) o.pre();
  dev_.run_once(lanes_[staged_ || lanes_.size() == 1 ? 0 : o.lane], [&](VkCommandBuffer cb) { o.record(cb); });
  if (o.post) o.post();
}

std::function<void()> vulkan_transfer::stage_in(host_side& h) const {
  if (!h.staged) return {};
  const std::size_t n = spec_.bytes;
  return [&h, n] { std::memcpy(h.buf.mapped(), h.block, n); };
}

std::function<void()> vulkan_transfer::stage_out(host_side& h) const {
  if (!h.staged) return {};
  const std::size_t n = spec_.bytes;
  return [&h, n] { std::memcpy(h.block, h.buf.mapped(), n); };
}

// ---- verification ----
// Core verifies (src/core/verify.cpp) the places of the direction; this is
// how they are reached.

std::span<const sample_destination> vulkan_transfer::places() const { return sample_destinations(spec_.dir); }

void vulkan_transfer::reach_place(const sample_destination& d, place_access a,
                                  const std::function<void(std::span<std::byte>)>& use) {
  const std::size_t n = spec_.bytes;
  const bool reads = a != place_access::overwrite, writes = a != place_access::read;
  if (d.on_device) {
    const buffer& b = d.buffer ? dev_b_ : dev_a_;
    if (b.mapped()) {
      if (reads) b.invalidate();
      use({b.mapped(), n});
      if (writes) b.flush();
      return;
    }
    // Not mappable: through the host-cached io buffer, copied by the device.
    const buffer& s = io(n);
    if (reads) copy_out(b);
    use({s.mapped(), n});
    if (writes) {
      s.flush();
      dev_.run_once(lanes_[0], [&](VkCommandBuffer cb) { copy_cmd(cb, s, b); });
    }
    return;
  }
  host_side& h = d.buffer ? *host_b_ : *host_a_;
  // Uncached memory (host-coherent on a GPU: write-combined) reads at a
  // trickle by the CPU; a GiB would take seconds a sample. The device copies
  // it into cached memory at link speed instead.
  if (a == place_access::read && !h.block && !(h.buf.flags() & VK_MEMORY_PROPERTY_HOST_CACHED_BIT)) {
    use({copy_out(h.buf).mapped(), n});
    return;
  }
  if (reads) h.buf.invalidate();
  use({h.data(), n});
  if (writes) h.buf.flush();
}

void vulkan_transfer::poison_place(const sample_destination& d) {
  if (d.on_device)
    poison_device(d.buffer ? dev_b_ : dev_a_);
  else
    poison_host(d.buffer ? *host_b_ : *host_a_);
}

// ---- data ----

const buffer& vulkan_transfer::io(std::uint64_t bytes) {
  if (!io_ || io_.size() < bytes) io_ = buffer::allocate(dev_, bytes, mem_class::host_cached);
  return io_;
}

void vulkan_transfer::fill_device(const buffer& b, std::uint64_t seed) {
  if (b.mapped()) {
    fill_pattern(b.mapped(), spec_.bytes, seed);
    b.flush();
    return;
  }
  const buffer& s = io(spec_.bytes);
  fill_pattern(s.mapped(), spec_.bytes, seed);
  s.flush();
  dev_.run_once(lanes_[0], [&](VkCommandBuffer cb) { copy_cmd(cb, s, b); });
}

void vulkan_transfer::poison_device(const buffer& b) {
  if (b.mapped()) {
    poison(b.mapped(), spec_.bytes);
    b.flush();
    return;
  }
  const buffer& s = io(spec_.bytes);
  poison(s.mapped(), spec_.bytes);
  s.flush();
  dev_.run_once(lanes_[0], [&](VkCommandBuffer cb) { copy_cmd(cb, s, b); });
}

const buffer& vulkan_transfer::copy_out(const buffer& b) {
  const buffer& s = io(spec_.bytes);
  dev_.run_once(lanes_[0], [&](VkCommandBuffer cb) { copy_cmd(cb, b, s); });
  s.invalidate();
  return s;
}

void vulkan_transfer::poison_host(host_side& h) {
  poison(h.data(), spec_.bytes);
  h.buf.flush();
  // Staged d2h lands in the staging buffer first: poison it too, so a copy
  // that never ran cannot pass on what an earlier one left there.
  if (h.staged) poison(h.buf.mapped(), spec_.bytes);
}

}  // namespace xfer::vulkan
