#pragma once
// The compute pipelines: shaders/copy.comp (route kernel-host) and
// shaders/poll.comp (routes cpu-store(-nt)-latency, store_latency.hpp),
// compiled to SPIR-V at build time, each over two storage buffers and a few
// push constants.
#include <cstdint>
#include <span>

#include "device.hpp"

namespace xfer::vulkan {

// Empty where this build had no SPIR-V compiler (XFER_VULKAN_SPIRV 0).
std::span<const std::uint32_t> copy_shader_spirv();
std::span<const std::uint32_t> poll_shader_spirv();

class compute_pipeline {
 public:
  compute_pipeline(const device_context& dev, std::span<const std::uint32_t> spirv, const char* what,
                   std::uint32_t push_bytes);
  ~compute_pipeline();
  compute_pipeline(const compute_pipeline&) = delete;
  compute_pipeline& operator=(const compute_pipeline&) = delete;

  // A descriptor set from this pipeline's pool naming buffers a and b (bindings 0 and 1).
  VkDescriptorSet bind(VkBuffer a, VkDeviceSize a_range, VkBuffer b, VkDeviceSize b_range);
  void release(VkDescriptorSet set) noexcept;
  void dispatch(VkCommandBuffer cb, VkDescriptorSet set, const void* push, std::uint32_t groups) const;
  std::uint32_t max_groups() const noexcept { return max_groups_; }

  static constexpr std::uint32_t max_sets = 256;

 private:
  VkDevice dev_;
  std::uint32_t max_groups_;
  std::uint32_t push_bytes_;
  VkShaderModule module_ = VK_NULL_HANDLE;
  VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
  VkPipelineLayout layout_ = VK_NULL_HANDLE;
  VkPipeline pipeline_ = VK_NULL_HANDLE;
  VkDescriptorPool pool_ = VK_NULL_HANDLE;
  void destroy() noexcept;
};

// Route kernel-host's copy of `bytes` from the set's buffer a to its buffer b.
inline constexpr std::uint32_t copy_local_size = 256;  // shaders/copy.comp's local_size_x
VkDescriptorSet bind_copy(compute_pipeline& p, VkBuffer src, VkBuffer dst, std::uint64_t bytes);
void record_copy(const compute_pipeline& p, VkCommandBuffer cb, VkDescriptorSet set, std::uint64_t bytes);

}  // namespace xfer::vulkan
