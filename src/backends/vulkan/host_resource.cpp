#include "host_resource.hpp"

#include <bit>
#include <fmt/format.h>
#include <xfer/core/errors.hpp>
#include <xfer/mem/error.hpp>

namespace xfer::vulkan {

vk_host_resource::vk_host_resource(std::string kind, const device_context& dev, mem_class cls)
    : kind_(std::move(kind)), dev_(dev), cls_(cls) {
  const auto type = find_memory_type(dev_.caps(), cls_);
  if (!type) throw skip_point(kind_unavailable_reason(kind_, dev_.caps()));
  type_ = *type;
  const VkMemoryPropertyFlags f = dev_.caps().memory.memoryTypes[type_].propertyFlags;
  props_.host_accessible = true;
  props_.device_accessible = true;
  props_.pinned = true;  // the driver's own memory: resident for the device
  // Host-visible memory without HOST_CACHED is mapped uncached or write-combined (write-combined on x86 GPUs).
  props_.write_combined = !(f & VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
  natural_ = std::max<std::size_t>(64, dev_.caps().min_map_alignment);
}

vk_host_resource::~vk_host_resource() = default;

std::string vk_host_resource::describe() const {
  return fmt::format("{} (memory type {}: {})", describe_kind(kind_), type_,
                     memory_flags_text(dev_.caps().memory.memoryTypes[type_].propertyFlags));
}

std::size_t vk_host_resource::live() const {
  std::lock_guard lock(m_);
  return blocks_.size();
}

void* vk_host_resource::do_allocate(std::size_t bytes, std::size_t alignment) {
  if (!std::has_single_bit(alignment) || alignment > max_alignment())
    throw mem::allocation_error(kind_, bytes, fmt::format("alignment {} is not a power of two up to {}", alignment, max_alignment()));
  const auto& c = dev_.caps();
  const std::uint64_t heap = c.memory.memoryHeaps[c.memory.memoryTypes[type_].heapIndex].size;
  if (bytes > heap - alignment)
    throw mem::allocation_error(kind_, bytes, fmt::format("more than its heap's {} B", heap));
  // Over-allocated by the alignment where the mapping's own does not reach it.
  const std::size_t extra = alignment > natural_ ? alignment : 0;
  buffer b;
  try {
    b = buffer::allocate(dev_, bytes + extra, cls_);
  } catch (const std::exception& e) {
    throw mem::allocation_error(kind_, bytes, e.what());
  }
  const auto base = reinterpret_cast<std::uintptr_t>(b.mapped());
  void* p = reinterpret_cast<void*>((base + alignment - 1) / alignment * alignment);
  std::lock_guard lock(m_);
  blocks_.emplace(p, std::move(b));
  return p;
}

void vk_host_resource::do_deallocate(void* p, std::size_t, std::size_t) noexcept {
  buffer b;  // released outside the lock
  std::lock_guard lock(m_);
  auto it = blocks_.find(p);
  if (it == blocks_.end()) return;
  b = std::move(it->second);
  blocks_.erase(it);
}

}  // namespace xfer::vulkan
