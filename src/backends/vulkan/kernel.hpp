#pragma once
// The compute pipeline of route kernel-host: shaders/copy.comp, compiled to
// SPIR-V at build time, with two storage buffers (source, destination) and
// the range as push constants.
#include <cstdint>
#include <span>

#include "device.hpp"

namespace xfer::vulkan {

// Empty where this build had no SPIR-V compiler (XFER_VULKAN_SPIRV 0).
std::span<const std::uint32_t> copy_shader_spirv();

class copy_pipeline {
 public:
  explicit copy_pipeline(const device_context& dev);
  ~copy_pipeline();
  copy_pipeline(const copy_pipeline&) = delete;
  copy_pipeline& operator=(const copy_pipeline&) = delete;

  // A descriptor set from this pipeline's pool naming src and dst.
  VkDescriptorSet bind(VkBuffer src, VkBuffer dst, std::uint64_t bytes);
  void release(VkDescriptorSet set) noexcept;
  // Records the dispatch that copies `bytes` from the set's src to its dst.
  void record(VkCommandBuffer cb, VkDescriptorSet set, std::uint64_t bytes) const;

  static constexpr std::uint32_t local_size = 256;
  static constexpr std::uint32_t max_sets = 256;

 private:
  VkDevice dev_;
  std::uint32_t max_groups_;
  VkShaderModule module_ = VK_NULL_HANDLE;
  VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
  VkPipelineLayout layout_ = VK_NULL_HANDLE;
  VkPipeline pipeline_ = VK_NULL_HANDLE;
  VkDescriptorPool pool_ = VK_NULL_HANDLE;
  void destroy() noexcept;
};

}  // namespace xfer::vulkan
