#include "device.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <map>
#include <vector>

namespace xfer::vulkan {
namespace {

constexpr VkQueueFlags graphics_or_compute = VK_QUEUE_GRAPHICS_BIT | VK_QUEUE_COMPUTE_BIT;

// A family with all of `need`; with `transfer_only`, one that has no
// graphics or compute (a copy engine's). Families with timestamps first.
const queue_family* pick(const device_caps& c, VkQueueFlags need, bool transfer_only) {
  const queue_family* best = nullptr;
  for (const auto& f : c.families) {
    if ((f.flags & need) != need || f.count == 0) continue;
    if (transfer_only && (f.flags & graphics_or_compute)) continue;
    if (!best || (f.timestamp_bits && !best->timestamp_bits)) best = &f;
  }
  return best;
}

}  // namespace

device_context::device_context(std::shared_ptr<instance> inst, const device_caps& caps)
    : inst_(std::move(inst)), caps_(caps) {
  const api& a = vk();
  const queue_family* compute = pick(caps_, VK_QUEUE_COMPUTE_BIT, false);
  if (!compute) throw std::runtime_error(fmt::format("device '{}' has no compute queue", caps_.name));
  const queue_family* copy = pick(caps_, VK_QUEUE_TRANSFER_BIT, true);
  transfer_only_ = copy != nullptr;
  if (!copy) copy = compute;  // compute families copy too (the spec says so, flag or not)

  // Up to two queues of each family used: one per lane.
  std::map<std::uint32_t, std::uint32_t> wanted;
  wanted[compute->index] = std::min<std::uint32_t>(2, compute->count);
  if (copy != compute) wanted[copy->index] = std::min<std::uint32_t>(2, copy->count);
  std::vector<float> priorities(2, 1.0f);
  std::vector<VkDeviceQueueCreateInfo> queues;
  for (auto [family, count] : wanted) {
    VkDeviceQueueCreateInfo q{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    q.queueFamilyIndex = family;
    q.queueCount = count;
    q.pQueuePriorities = priorities.data();
    queues.push_back(q);
  }
  std::vector<const char*> extensions;
  if (caps_.host_import) {
    extensions.push_back(VK_KHR_EXTERNAL_MEMORY_EXTENSION_NAME);  // core in 1.1; named for older drivers
    extensions.push_back(VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME);
  }
  VkPhysicalDeviceTimelineSemaphoreFeatures timeline{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES};
  timeline.timelineSemaphore = VK_TRUE;
  // vkCmdResetQueryPool is not a transfer queue's command: timestamps there
  // are reset from the host.
  VkPhysicalDeviceHostQueryResetFeatures reset{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_HOST_QUERY_RESET_FEATURES};
  reset.hostQueryReset = caps_.host_query_reset ? VK_TRUE : VK_FALSE;
  timeline.pNext = &reset;
  VkDeviceCreateInfo info{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  info.pNext = &timeline;
  info.queueCreateInfoCount = static_cast<std::uint32_t>(queues.size());
  info.pQueueCreateInfos = queues.data();
  info.enabledExtensionCount = static_cast<std::uint32_t>(extensions.size());
  info.ppEnabledExtensionNames = extensions.data();
  check(a.vkCreateDevice(caps_.handle, &info, nullptr, &dev_), "vkCreateDevice", caps_.name);

  auto take = [&](const queue_family& f, queue_ref (&out)[2]) {
    for (std::uint32_t lane = 0; lane < 2; ++lane) {
      out[lane].family = f.index;
      out[lane].timestamps = f.timestamp_bits > 0 && caps_.host_query_reset;
      a.vkGetDeviceQueue(dev_, f.index, std::min(lane, wanted[f.index] - 1), &out[lane].queue);
    }
  };
  take(*copy, copy_);
  take(*compute, compute_);
  try {
    for (auto [family, count] : wanted) {
      VkCommandPoolCreateInfo p{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
      p.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
      p.queueFamilyIndex = family;
      VkCommandPool pool = VK_NULL_HANDLE;
      check(a.vkCreateCommandPool(dev_, &p, nullptr, &pool), "vkCreateCommandPool");
      pools_.emplace_back(family, pool);
      families_.push_back(family);
    }
  } catch (...) {
    for (auto& [f, p] : pools_) a.vkDestroyCommandPool(dev_, p, nullptr);
    a.vkDestroyDevice(dev_, nullptr);
    throw;
  }
}

device_context::~device_context() {
  const api& a = vk();
  a.vkDeviceWaitIdle(dev_);
  for (auto& [f, p] : pools_) a.vkDestroyCommandPool(dev_, p, nullptr);
  a.vkDestroyDevice(dev_, nullptr);
}

VkCommandPool device_context::pool(std::uint32_t family) const {
  for (auto& [f, p] : pools_)
    if (f == family) return p;
  throw std::logic_error(fmt::format("no command pool for queue family {}", family));
}

void device_context::run_once(const queue_ref& q, const std::function<void(VkCommandBuffer)>& record) const {
  const api& a = vk();
  VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  ai.commandPool = pool(q.family);
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  VkCommandBuffer cb = VK_NULL_HANDLE;
  check(a.vkAllocateCommandBuffers(dev_, &ai, &cb), "vkAllocateCommandBuffers");
  VkFence fence = VK_NULL_HANDLE;
  VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  VkResult rc = a.vkCreateFence(dev_, &fi, nullptr, &fence);
  if (rc == VK_SUCCESS) {
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    rc = a.vkBeginCommandBuffer(cb, &bi);
    if (rc == VK_SUCCESS) {
      record(cb);
      rc = a.vkEndCommandBuffer(cb);
    }
    if (rc == VK_SUCCESS) {
      VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
      si.commandBufferCount = 1;
      si.pCommandBuffers = &cb;
      rc = a.vkQueueSubmit(q.queue, 1, &si, fence);
      if (rc == VK_SUCCESS) rc = a.vkWaitForFences(dev_, 1, &fence, VK_TRUE, UINT64_MAX);
    }
    a.vkDestroyFence(dev_, fence, nullptr);
  }
  a.vkFreeCommandBuffers(dev_, ai.commandPool, 1, &cb);
  check(rc, "a one-off submission", "filling or checking a device buffer");
}

std::string device_context::queue_text() const {
  return fmt::format("copies on queue family {}{}, kernels on family {}", copy_[0].family,
                     transfer_only_ ? " (transfer only: a copy engine)" : " (no transfer-only family)",
                     compute_[0].family);
}

}  // namespace xfer::vulkan
