#include "kernel.hpp"

#include <algorithm>
#include <fmt/format.h>

namespace xfer::vulkan {

compute_pipeline::compute_pipeline(const device_context& dev, std::span<const std::uint32_t> code, const char* what,
                                   std::uint32_t push_bytes)
    : dev_(dev.get()), max_groups_(std::max<std::uint32_t>(1, dev.caps().max_group_count_x)), push_bytes_(push_bytes) {
  const api& a = vk();
  if (code.empty()) throw std::logic_error(std::string("compute_pipeline: this build has no SPIR-V for ") + what);
  try {
    VkShaderModuleCreateInfo mi{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    mi.codeSize = code.size_bytes();
    mi.pCode = code.data();
    check(a.vkCreateShaderModule(dev_, &mi, nullptr, &module_), "vkCreateShaderModule", what);

    VkDescriptorSetLayoutBinding binds[2]{};
    for (std::uint32_t i = 0; i < 2; ++i) {
      binds[i].binding = i;
      binds[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      binds[i].descriptorCount = 1;
      binds[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
    }
    VkDescriptorSetLayoutCreateInfo li{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    li.bindingCount = 2;
    li.pBindings = binds;
    check(a.vkCreateDescriptorSetLayout(dev_, &li, nullptr, &set_layout_), "vkCreateDescriptorSetLayout");

    VkPushConstantRange pc{VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes_};
    VkPipelineLayoutCreateInfo pli{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    pli.setLayoutCount = 1;
    pli.pSetLayouts = &set_layout_;
    pli.pushConstantRangeCount = 1;
    pli.pPushConstantRanges = &pc;
    check(a.vkCreatePipelineLayout(dev_, &pli, nullptr, &layout_), "vkCreatePipelineLayout");

    VkComputePipelineCreateInfo ci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
    ci.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
    ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    ci.stage.module = module_;
    ci.stage.pName = "main";
    ci.layout = layout_;
    check(a.vkCreateComputePipelines(dev_, VK_NULL_HANDLE, 1, &ci, nullptr, &pipeline_), "vkCreateComputePipelines",
          what);

    VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 2 * max_sets};
    VkDescriptorPoolCreateInfo di{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
    di.flags = VK_DESCRIPTOR_POOL_CREATE_FREE_DESCRIPTOR_SET_BIT;
    di.maxSets = max_sets;
    di.poolSizeCount = 1;
    di.pPoolSizes = &size;
    check(a.vkCreateDescriptorPool(dev_, &di, nullptr, &pool_), "vkCreateDescriptorPool");
  } catch (...) {
    destroy();
    throw;
  }
}

compute_pipeline::~compute_pipeline() { destroy(); }

void compute_pipeline::destroy() noexcept {
  const api& a = vk();
  destroy_handle(dev_, pool_, a.vkDestroyDescriptorPool);
  destroy_handle(dev_, pipeline_, a.vkDestroyPipeline);
  destroy_handle(dev_, layout_, a.vkDestroyPipelineLayout);
  destroy_handle(dev_, set_layout_, a.vkDestroyDescriptorSetLayout);
  destroy_handle(dev_, module_, a.vkDestroyShaderModule);
}

VkDescriptorSet compute_pipeline::bind(VkBuffer a_buf, VkDeviceSize a_range, VkBuffer b_buf, VkDeviceSize b_range) {
  const api& a = vk();
  VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  ai.descriptorPool = pool_;
  ai.descriptorSetCount = 1;
  ai.pSetLayouts = &set_layout_;
  VkDescriptorSet set = VK_NULL_HANDLE;
  check(a.vkAllocateDescriptorSets(dev_, &ai, &set), "vkAllocateDescriptorSets");
  VkDescriptorBufferInfo infos[2] = {{a_buf, 0, a_range}, {b_buf, 0, b_range}};
  VkWriteDescriptorSet w[2]{};
  for (std::uint32_t i = 0; i < 2; ++i) {
    w[i].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
    w[i].dstSet = set;
    w[i].dstBinding = i;
    w[i].descriptorCount = 1;
    w[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    w[i].pBufferInfo = &infos[i];
  }
  a.vkUpdateDescriptorSets(dev_, 2, w, 0, nullptr);
  return set;
}

void compute_pipeline::release(VkDescriptorSet set) noexcept { vk().vkFreeDescriptorSets(dev_, pool_, 1, &set); }

void compute_pipeline::dispatch(VkCommandBuffer cb, VkDescriptorSet set, const void* push, std::uint32_t groups) const {
  const api& a = vk();
  a.vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline_);
  a.vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, layout_, 0, 1, &set, 0, nullptr);
  a.vkCmdPushConstants(cb, layout_, VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes_, push);
  a.vkCmdDispatch(cb, std::clamp<std::uint32_t>(groups, 1, max_groups_), 1, 1);
}

VkDescriptorSet bind_copy(compute_pipeline& p, VkBuffer src, VkBuffer dst, std::uint64_t bytes) {
  // Whole words: the shader reads the last partial word and keeps its extra bytes.
  const VkDeviceSize range = (bytes + 3) / 4 * 4;
  return p.bind(src, range, dst, range);
}

void record_copy(const compute_pipeline& p, VkCommandBuffer cb, VkDescriptorSet set, std::uint64_t bytes) {
  const std::uint32_t range[2] = {static_cast<std::uint32_t>(bytes / 4), static_cast<std::uint32_t>(bytes % 4)};
  // Enough groups to fill a large GPU (each invocation strides), no more than the device allows.
  const std::uint64_t groups = std::clamp<std::uint64_t>((range[0] + copy_local_size - 1) / copy_local_size, 1, 4096);
  p.dispatch(cb, set, range, static_cast<std::uint32_t>(groups));
}

}  // namespace xfer::vulkan
