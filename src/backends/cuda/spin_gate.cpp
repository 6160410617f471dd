#include "spin_gate.hpp"

#include <atomic>
#include <fmt/format.h>

#include "kernels.hpp"

namespace xfer::cuda {

spin_gate::spin_gate(api& a, stream_t s, std::uint64_t timeout_ns) : api_(a), stream_(s), timeout_ns_(timeout_ns) {
  host_ = static_cast<shared_words*>(a.host_alloc(sizeof(shared_words), {.mapped = true, .write_combined = false}));
  host_->flag = 0;
  host_->timed_out = 0;
  try {
    device_ = static_cast<shared_words*>(a.mapped_device_pointer(host_));
  } catch (...) {
    a.host_free(host_);
    throw;
  }
}

spin_gate::~spin_gate() {
  if (closed_) open();
  // The spin kernel may still be reading the flag: let it finish first.
  try {
    api_.synchronize_stream(stream_);
  } catch (...) {
  }
  api_.host_free(host_);
}

void spin_gate::close() {
  if (closed_) return;
  const std::uint32_t target = generation_ + 1;
  kernels::spin_until(stream_, &device_->flag, target, timeout_ns_, &device_->timed_out);
  generation_ = target;
  closed_ = true;
}

void spin_gate::open() {
  if (!closed_) return;
  // Release order: everything queued before is visible before the flag flips.
  std::atomic_ref<std::uint32_t>(host_->flag).store(generation_, std::memory_order_release);
  closed_ = false;
}

bool spin_gate::timed_out() const noexcept {
  return std::atomic_ref<std::uint32_t>(host_->timed_out).load(std::memory_order_acquire) == generation_ &&
         generation_ != 0;
}

std::string spin_gate::give_way_rule() const {
  return fmt::format("its spin kernel gives up after {} s", static_cast<double>(timeout_ns_) / 1e9);
}

}  // namespace xfer::cuda
