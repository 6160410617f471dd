#pragma once
// The Vulkan loader, opened at run time: a binary built with the headers
// starts on a machine without libvulkan.so.1 and reports the backend
// unavailable with the reason, instead of failing to start. The loader finds
// the drivers itself (its ICD search path, or VK_DRIVER_FILES /
// VK_ICD_FILENAMES, which is how NVIDIA's ICD under /usr/local/nvidia is
// named on the GPU machine).
#ifndef VK_NO_PROTOTYPES
#define VK_NO_PROTOTYPES
#endif
#include <stdexcept>
#include <string>
#include <string_view>
#include <vulkan/vulkan_core.h>

namespace xfer::vulkan {

// Functions taken before an instance exists.
#define XFER_VK_GLOBAL_FNS(X) \
  X(vkCreateInstance)         \
  X(vkEnumerateInstanceVersion)

// Every other function, through vkGetInstanceProcAddr of the one instance:
// the loader's trampolines dispatch device functions to any device's driver.
#define XFER_VK_INSTANCE_FNS(X)                 \
  X(vkDestroyInstance)                          \
  X(vkEnumeratePhysicalDevices)                 \
  X(vkGetPhysicalDeviceProperties)              \
  X(vkGetPhysicalDeviceProperties2)             \
  X(vkGetPhysicalDeviceFeatures2)               \
  X(vkGetPhysicalDeviceMemoryProperties)        \
  X(vkGetPhysicalDeviceQueueFamilyProperties)   \
  X(vkEnumerateDeviceExtensionProperties)       \
  X(vkCreateDevice)                             \
  X(vkDestroyDevice)                            \
  X(vkGetDeviceQueue)                           \
  X(vkCreateBuffer)                             \
  X(vkDestroyBuffer)                            \
  X(vkGetBufferMemoryRequirements)              \
  X(vkAllocateMemory)                           \
  X(vkFreeMemory)                               \
  X(vkBindBufferMemory)                         \
  X(vkMapMemory)                                \
  X(vkUnmapMemory)                              \
  X(vkFlushMappedMemoryRanges)                  \
  X(vkInvalidateMappedMemoryRanges)             \
  X(vkCreateCommandPool)                        \
  X(vkDestroyCommandPool)                       \
  X(vkAllocateCommandBuffers)                   \
  X(vkFreeCommandBuffers)                       \
  X(vkBeginCommandBuffer)                       \
  X(vkEndCommandBuffer)                         \
  X(vkResetCommandBuffer)                       \
  X(vkCmdCopyBuffer)                            \
  X(vkCmdWriteTimestamp)                        \
  X(vkResetQueryPool)                           \
  X(vkCmdPipelineBarrier)                       \
  X(vkCmdBindPipeline)                          \
  X(vkCmdBindDescriptorSets)                    \
  X(vkCmdPushConstants)                         \
  X(vkCmdDispatch)                              \
  X(vkCreateQueryPool)                          \
  X(vkDestroyQueryPool)                         \
  X(vkGetQueryPoolResults)                      \
  X(vkQueueSubmit)                              \
  X(vkQueueWaitIdle)                            \
  X(vkDeviceWaitIdle)                           \
  X(vkCreateFence)                              \
  X(vkDestroyFence)                             \
  X(vkWaitForFences)                            \
  X(vkResetFences)                              \
  X(vkCreateSemaphore)                          \
  X(vkDestroySemaphore)                         \
  X(vkSignalSemaphore)                          \
  X(vkCreateShaderModule)                       \
  X(vkDestroyShaderModule)                      \
  X(vkCreateDescriptorSetLayout)                \
  X(vkDestroyDescriptorSetLayout)               \
  X(vkCreatePipelineLayout)                     \
  X(vkDestroyPipelineLayout)                    \
  X(vkCreateComputePipelines)                   \
  X(vkDestroyPipeline)                          \
  X(vkCreateDescriptorPool)                     \
  X(vkDestroyDescriptorPool)                    \
  X(vkAllocateDescriptorSets)                   \
  X(vkFreeDescriptorSets)                       \
  X(vkUpdateDescriptorSets)

#define XFER_VK_DECLARE(name) PFN_##name name = nullptr;
struct api {
  PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr = nullptr;
  XFER_VK_GLOBAL_FNS(XFER_VK_DECLARE)
  XFER_VK_INSTANCE_FNS(XFER_VK_DECLARE)
  // VK_EXT_external_memory_host; null where no device offers it.
  PFN_vkGetMemoryHostPointerPropertiesEXT vkGetMemoryHostPointerPropertiesEXT = nullptr;
};
#undef XFER_VK_DECLARE

// A failed call: which, on what, and the VkResult by name.
class vk_error : public std::runtime_error {
 public:
  vk_error(VkResult rc, std::string_view call, std::string_view detail);
  VkResult code() const noexcept { return rc_; }

 private:
  VkResult rc_;
};

const char* result_name(VkResult rc);
bool is_out_of_memory(VkResult rc);
inline void check(VkResult rc, std::string_view call, std::string_view detail = {}) {
  if (rc != VK_SUCCESS) throw vk_error(rc, call, detail);
}

// Destroys a device-level handle through its vkDestroy*/vkFree* call (the
// device, the handle, no allocator) unless it is null, and nulls it, so
// that release code may run twice.
template <class Handle, class Destroy>
void destroy_handle(VkDevice dev, Handle& h, Destroy destroy) noexcept {
  if (h) destroy(dev, h, nullptr);
  h = VK_NULL_HANDLE;
}

// Opens the loader (once per process) and takes the global functions.
// Throws std::runtime_error saying why where there is no loader.
api& open_loader();
// The table, for code that runs after open_loader() and load_instance().
const api& vk();
// Fills the table's instance-level entries from `instance`.
void load_instance(VkInstance instance);

}  // namespace xfer::vulkan
