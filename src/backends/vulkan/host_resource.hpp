#pragma once
// The mapped Vulkan kinds (host-coherent, host-cached,
// device-local-host-visible) as host memory resources, for the studies that
// use memory without a transfer (the CPU study's stores and loads): each
// allocation is a buffer of its own memory, mapped for the CPU.
#include <map>
#include <mutex>
#include <string>
#include <xfer/mem/resource.hpp>

#include "memory.hpp"

namespace xfer::vulkan {

class vk_host_resource final : public mem::host_resource {
 public:
  // `dev` outlives the resource (the backend owns both).
  vk_host_resource(std::string kind, const device_context& dev, mem_class cls);
  ~vk_host_resource() override;

  std::string_view kind() const noexcept override { return kind_; }
  mem::properties props() const noexcept override { return props_; }
  std::size_t max_alignment() const noexcept override { return 4096; }
  // What vkMapMemory guarantees (minMemoryMapAlignment, at least 64).
  std::size_t natural_alignment() const noexcept override { return natural_; }
  std::string describe() const override;
  std::size_t live() const;

 private:
  void* do_allocate(std::size_t bytes, std::size_t alignment) override;
  void do_deallocate(void* p, std::size_t bytes, std::size_t alignment) noexcept override;

  std::string kind_;
  const device_context& dev_;
  mem_class cls_;
  mem::properties props_{};
  std::size_t natural_ = 64;
  std::uint32_t type_ = 0;
  mutable std::mutex m_;
  std::map<void*, buffer> blocks_;
};

}  // namespace xfer::vulkan
