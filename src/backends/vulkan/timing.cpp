#include "timing.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <limits>

namespace xfer::vulkan {

// ---- gate ----

timeline_gate::timeline_gate(const device_context& dev) : dev_(dev.get()) {
  VkSemaphoreTypeCreateInfo type{VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO};
  type.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
  type.initialValue = 0;
  VkSemaphoreCreateInfo info{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
  info.pNext = &type;
  check(vk().vkCreateSemaphore(dev_, &info, nullptr, &sem_), "vkCreateSemaphore", "the gate's timeline semaphore");
}

timeline_gate::~timeline_gate() {
  // Nothing may wait on a value nobody will signal (an exception between close and open).
  if (pending_) open();
  vk().vkDestroySemaphore(dev_, sem_, nullptr);
}

void timeline_gate::close() {
  if (pending_) open();
  pending_ = ++value_;
}

void timeline_gate::open() {
  if (!pending_) return;
  VkSemaphoreSignalInfo s{VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO};
  s.semaphore = sem_;
  s.value = pending_;
  pending_ = 0;
  check(vk().vkSignalSemaphore(dev_, &s), "vkSignalSemaphore", "opening the gate");
}

// ---- timer ----

batch_timer::batch_timer(const device_context& dev, std::vector<queue_ref> lanes, const timeline_gate* g,
                         std::vector<std::string> lane_names)
    : dev_(dev), gate_(g), names_(std::move(lane_names)) {
  const api& a = vk();
  for (const auto& q : lanes) {
    lane l;
    l.q = q;
    timestamps_ = timestamps_ && q.timestamps;
    lanes_.push_back(l);
  }
  try {
    for (auto& l : lanes_) {
      VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
      ai.commandPool = dev_.pool(l.q.family);
      ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
      ai.commandBufferCount = 1;
      check(a.vkAllocateCommandBuffers(dev_.get(), &ai, &l.cb), "vkAllocateCommandBuffers");
      VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
      check(a.vkCreateFence(dev_.get(), &fi, nullptr, &l.fence), "vkCreateFence");
      VkQueryPoolCreateInfo qi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
      qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
      qi.queryCount = 2;
      check(a.vkCreateQueryPool(dev_.get(), &qi, nullptr, &l.queries), "vkCreateQueryPool");
    }
  } catch (...) {
    destroy();
    throw;
  }
}

batch_timer::~batch_timer() { destroy(); }

void batch_timer::destroy() noexcept {
  const api& a = vk();
  cancel();
  for (auto& l : lanes_) {
    if (l.queries) a.vkDestroyQueryPool(dev_.get(), l.queries, nullptr);
    if (l.fence) a.vkDestroyFence(dev_.get(), l.fence, nullptr);
    if (l.cb) a.vkFreeCommandBuffers(dev_.get(), dev_.pool(l.q.family), 1, &l.cb);
    l = {};
  }
}

double batch_timer::resolution_s() const {
  return timestamps_ ? std::max(1e-9, dev_.caps().timestamp_period_ns * 1e-9) : wall_timer().resolution_s();
}

void batch_timer::start() {
  const api& a = vk();
  t0_ = std::chrono::steady_clock::now();
  for (auto& l : lanes_) {
    check(a.vkResetCommandBuffer(l.cb, 0), "vkResetCommandBuffer");
    // The last batch has finished (seconds() waited for it): its queries are free.
    if (timestamps_) a.vkResetQueryPool(dev_.get(), l.queries, 0, 2);
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    check(a.vkBeginCommandBuffer(l.cb, &bi), "vkBeginCommandBuffer");
    l.recording = true;
    l.span_s = 0;
    if (timestamps_) {
      a.vkCmdWriteTimestamp(l.cb, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, l.queries, 0);
    }
  }
}

void batch_timer::stop() {
  const api& a = vk();
  for (auto& l : lanes_) {
    if (timestamps_) a.vkCmdWriteTimestamp(l.cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, l.queries, 1);
    l.recording = false;
    check(a.vkEndCommandBuffer(l.cb), "vkEndCommandBuffer");
  }
  for (auto& l : lanes_) {
    const std::uint64_t wait_value = gate_ ? gate_->pending() : 0;
    const VkSemaphore sem = gate_ ? gate_->semaphore() : VK_NULL_HANDLE;
    const VkPipelineStageFlags stage = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
    VkTimelineSemaphoreSubmitInfo ts{VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO};
    ts.waitSemaphoreValueCount = 1;
    ts.pWaitSemaphoreValues = &wait_value;
    VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    if (wait_value) {
      si.pNext = &ts;
      si.waitSemaphoreCount = 1;
      si.pWaitSemaphores = &sem;
      si.pWaitDstStageMask = &stage;
    }
    si.commandBufferCount = 1;
    si.pCommandBuffers = &l.cb;
    check(a.vkResetFences(dev_.get(), 1, &l.fence), "vkResetFences");
    check(a.vkQueueSubmit(l.q.queue, 1, &si, l.fence), "vkQueueSubmit", "a timed batch");
    l.submitted = true;
  }
}

double batch_timer::seconds() {
  const api& a = vk();
  for (auto& l : lanes_) {
    if (!l.submitted) continue;
    check(a.vkWaitForFences(dev_.get(), 1, &l.fence, VK_TRUE, UINT64_MAX), "vkWaitForFences", "a timed batch");
    l.submitted = false;
  }
  if (!timestamps_) return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  const double period = dev_.caps().timestamp_period_ns * 1e-9;
  std::uint64_t begin = std::numeric_limits<std::uint64_t>::max(), end = 0;
  for (auto& l : lanes_) {
    std::uint64_t t[2] = {0, 0};
    check(a.vkGetQueryPoolResults(dev_.get(), l.queries, 0, 2, sizeof t, t, sizeof t[0],
                                  VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
          "vkGetQueryPoolResults");
    l.span_s = t[1] > t[0] ? static_cast<double>(t[1] - t[0]) * period : 0.0;
    begin = std::min(begin, t[0]);
    end = std::max(end, t[1]);
  }
  return end > begin ? static_cast<double>(end - begin) * period : 0.0;
}

void batch_timer::add_parts(std::map<std::string, double>& parts) const {
  for (std::size_t i = 0; i < names_.size() && i < lanes_.size(); ++i) parts[names_[i]] += lanes_[i].span_s;
}

void batch_timer::cancel() noexcept {
  const api& a = vk();
  for (auto& l : lanes_) {
    if (l.recording) {
      a.vkEndCommandBuffer(l.cb);
      l.recording = false;
    }
    if (l.submitted) {
      a.vkWaitForFences(dev_.get(), 1, &l.fence, VK_TRUE, UINT64_MAX);
      l.submitted = false;
    }
  }
}

}  // namespace xfer::vulkan
