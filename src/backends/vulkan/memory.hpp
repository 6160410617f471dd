#pragma once
// Vulkan's host memory kinds, each a memory type chosen by what it is
// (host-coherent, host-cached, device-local-host-visible) or host memory the
// device imports (imported, VK_EXT_external_memory_host), and the buffer
// that every route moves data through: a VkBuffer bound to its memory,
// mapped for the CPU where the memory is host-visible.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "device.hpp"

namespace xfer::vulkan {

// What a buffer's memory must be.
enum class mem_class {
  host_coherent,              // HOST_VISIBLE | HOST_COHERENT, uncached where a type is (write-combined on NVIDIA)
  host_cached,                // HOST_VISIBLE | HOST_CACHED
  device_local_host_visible,  // DEVICE_LOCAL | HOST_VISIBLE: device memory the CPU maps (the BAR on a discrete GPU)
  device,                     // DEVICE_LOCAL, not host-visible where such a type exists
};

// This backend's own host kinds, in the order reports list them.
const std::vector<std::string>& vulkan_kind_names();
bool is_vulkan_kind(std::string_view kind);
// The memory class of a mapped kind; nullopt for "imported" and the core kinds.
std::optional<mem_class> kind_class(std::string_view kind);
// Empty when the device has the kind; else why not.
std::string kind_unavailable_reason(std::string_view kind, const device_caps& c);
std::string describe_kind(std::string_view kind);

// The memory type for `cls` among `allowed` (a buffer's memoryTypeBits).
std::optional<std::uint32_t> find_memory_type(const device_caps& c, mem_class cls, std::uint32_t allowed = ~0u);
// "DEVICE_LOCAL|HOST_VISIBLE|..." for a type's flags.
std::string memory_flags_text(VkMemoryPropertyFlags f);

// A VkBuffer with its own memory. Move-only; the device outlives it.
class buffer {
 public:
  buffer() = default;
  ~buffer();
  buffer(buffer&& o) noexcept;
  buffer& operator=(buffer&& o) noexcept;

  // Allocates `bytes` (rounded up to 16 for the compute shader's words) of
  // class `cls`. Throws vk_error (VK_ERROR_OUT_OF_*_MEMORY where it does not
  // fit) or skip_point where the device has no such memory.
  static buffer allocate(const device_context& dev, std::uint64_t bytes, mem_class cls);
  // Host memory at `p` imported (VK_EXT_external_memory_host): `p` and
  // `bytes` must both be multiples of the device's import alignment, else
  // skip_point with the rule. The memory stays the caller's; it must outlive
  // the buffer.
  static buffer import(const device_context& dev, void* p, std::uint64_t bytes);

  explicit operator bool() const noexcept { return buf_ != VK_NULL_HANDLE; }
  VkBuffer get() const noexcept { return buf_; }
  std::uint64_t size() const noexcept { return size_; }
  std::byte* mapped() const noexcept { return map_; }  // null where not host-visible
  VkMemoryPropertyFlags flags() const noexcept { return flags_; }
  std::uint32_t type_index() const noexcept { return type_; }
  // Makes CPU writes visible to the device / device writes visible to the
  // CPU, where the memory is not coherent (no-ops where it is).
  void flush() const;
  void invalidate() const;

 private:
  void release() noexcept;
  VkDevice dev_ = VK_NULL_HANDLE;
  VkBuffer buf_ = VK_NULL_HANDLE;
  VkDeviceMemory mem_ = VK_NULL_HANDLE;
  std::byte* map_ = nullptr;
  std::uint64_t size_ = 0;
  VkMemoryPropertyFlags flags_ = 0;
  std::uint32_t type_ = 0;
};

}  // namespace xfer::vulkan
