#pragma once
// The one Vulkan instance of the process and what each physical device
// offers: its memory types and heaps, queue families, timestamp clock and
// the host-pointer import rule. Everything the backend decides before it
// creates a logical device comes from device_caps.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "loader.hpp"

namespace xfer::vulkan {

// The instance, created on first use and kept for the process (the loader's
// device trampolines need it alive as long as any device).
class instance {
 public:
  explicit instance(VkInstance h) : h_(h) {}
  ~instance();
  instance(const instance&) = delete;
  instance& operator=(const instance&) = delete;
  VkInstance get() const noexcept { return h_; }
  std::uint32_t api_version() const noexcept { return version_; }

 private:
  friend std::shared_ptr<instance> shared_instance();
  VkInstance h_;
  std::uint32_t version_ = 0;
};

// Throws std::runtime_error (no loader, no driver) or vk_error.
std::shared_ptr<instance> shared_instance();

struct queue_family {
  std::uint32_t index = 0;
  VkQueueFlags flags = 0;
  std::uint32_t count = 0;
  std::uint32_t timestamp_bits = 0;  // 0: no timestamps on this family
};

struct device_caps {
  VkPhysicalDevice handle = VK_NULL_HANDLE;
  std::uint32_t index = 0;  // in vkEnumeratePhysicalDevices' order
  std::string name;         // deviceName
  std::string driver_name;  // VkPhysicalDeviceDriverProperties
  std::string driver_info;
  std::string type;         // "gpu", "cpu", "integrated-gpu", "virtual-gpu", "other"
  std::uint32_t api_version = 0;
  std::uint32_t vendor_id = 0;
  std::string driver_version;
  VkPhysicalDeviceMemoryProperties memory{};
  std::vector<queue_family> families;
  double timestamp_period_ns = 0;
  std::uint64_t max_alloc_bytes = 0;       // maxMemoryAllocationSize
  std::uint64_t max_storage_range = 0;     // maxStorageBufferRange
  std::uint32_t max_group_count_x = 0;     // maxComputeWorkGroupCount[0]
  std::uint64_t non_coherent_atom = 1;
  std::uint64_t min_map_alignment = 64;  // minMemoryMapAlignment
  bool timeline_semaphores = false;
  bool host_query_reset = false;          // timestamps are reset from the host (a transfer queue cannot)
  bool host_import = false;                // VK_EXT_external_memory_host
  std::uint64_t import_alignment = 0;      // minImportedHostPointerAlignment
  std::string pci_bus_id;                  // VK_EXT_pci_bus_info, where offered

  std::uint64_t device_local_bytes() const;  // the largest DEVICE_LOCAL heap
};

// Every physical device (throws where the instance cannot be made).
std::vector<device_caps> discover_devices(const instance& inst);

// The backend's name suffix: the driver's name in lower case ("llvmpipe",
// "nvidia"), made unique by the device index where two devices share it.
std::vector<std::string> device_tokens(const std::vector<device_caps>& devices);

std::string version_text(std::uint32_t v);

}  // namespace xfer::vulkan
