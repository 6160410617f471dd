#pragma once
// One physical device opened for measuring: the logical device, the queues
// each route runs on (copies on a transfer-only family where the device has
// one, so they go to a copy engine; kernels on a compute family), a command
// pool per family, and one-off submissions for the data helpers.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "instance.hpp"

namespace xfer::vulkan {

struct queue_ref {
  VkQueue queue = VK_NULL_HANDLE;
  std::uint32_t family = 0;
  bool timestamps = false;  // the family writes timestamps
};

class device_context {
 public:
  device_context(std::shared_ptr<instance> inst, const device_caps& caps);
  ~device_context();
  device_context(const device_context&) = delete;
  device_context& operator=(const device_context&) = delete;

  VkDevice get() const noexcept { return dev_; }
  const device_caps& caps() const noexcept { return caps_; }
  // Two lanes each (bidir runs one direction on each); the same queue twice
  // where the family has only one.
  const queue_ref& copy_queue(std::size_t lane) const { return copy_[lane]; }
  const queue_ref& compute_queue(std::size_t lane) const { return compute_[lane]; }
  bool copy_on_transfer_family() const noexcept { return transfer_only_; }
  // The family's command pool (command buffers may be reset one by one).
  VkCommandPool pool(std::uint32_t family) const;
  // Records with `record` into a fresh command buffer, submits it to `q` and
  // waits for it (fill, poison and check of device buffers; never timed).
  void run_once(const queue_ref& q, const std::function<void(VkCommandBuffer)>& record) const;
  // The queue families in use: buffers are shared between them (concurrent
  // sharing), so a route may copy on one and check on another.
  const std::vector<std::uint32_t>& families() const noexcept { return families_; }
  // What `xferbench list` shows about the queues.
  std::string queue_text() const;

 private:
  std::shared_ptr<instance> inst_;
  device_caps caps_;
  VkDevice dev_ = VK_NULL_HANDLE;
  queue_ref copy_[2], compute_[2];
  bool transfer_only_ = false;
  std::vector<std::pair<std::uint32_t, VkCommandPool>> pools_;
  std::vector<std::uint32_t> families_;
};

}  // namespace xfer::vulkan
