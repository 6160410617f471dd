// Route peer on CUDA: device memory of one device to another's, one copy
// queued on the source device's stream and timed by its events. Where the two
// devices can reach each other (cudaDeviceCanAccessPeer) peer access is
// turned on and the copy goes over the devices' own link (NVLink or PCIe
// peer-to-peer); where not, the same call still works under unified
// addressing, and the driver stages it through host memory: the point says
// which.
#include <chrono>
#include <fmt/format.h>
#include <vector>
#include <xfer/core/errors.hpp>
#include <xfer/core/pattern.hpp>
#include <xfer/core/sample_check.hpp>
#include <xfer/core/timing.hpp>

#include "cuda_backend.hpp"
#include "device_context.hpp"

namespace xfer::cuda {
namespace {

using clock = std::chrono::steady_clock;
constexpr std::uint64_t seed_peer = 7;

class peer_transfer final : public transfer {
 public:
  peer_transfer(const point_spec& p, device_context& src, device_context& dst)
      : spec_(p), src_(src), dst_(dst), a_(src.a) {
    const auto n = static_cast<std::size_t>(p.bytes);
    const auto t0 = clock::now();
    dst_.make_current();
    dst_.require_device_memory(p.bytes, "the peer copy's destination");
    dst_buf_ = device_buffer(a_, n);
    src_.make_current();
    src_.require_device_memory(p.bytes, "the peer copy's source");
    src_buf_ = device_buffer(a_, n);
    costs_.alloc_s = seconds_since(t0);
    const auto t1 = clock::now();
    host_.resize(n);
    fill_pattern(host_.data(), n, seed_peer);
    a_.copy(src_buf_.data(), host_.data(), n, copy_kind::h2d);
    a_.synchronize();
    costs_.touch_s = seconds_since(t1);
  }

  sample run(std::size_t reps) override {
    const auto n = static_cast<std::size_t>(spec_.bytes);
    src_.make_current();
    event_timer timer(src_);
    return loop_.run(timer, reps, [&](std::size_t, std::size_t) {
      a_.copy_async(dst_buf_.data(), src_buf_.data(), n, copy_kind::unified, src_.s0.get());
    });
  }
  // Core verifies (src/core/verify.cpp) the one place, the destination
  // device's buffer: poisoned by a memset there, read through host_.
  std::span<const sample_destination> places() const override {
    static constexpr sample_destination dst[] = {{true, 1, seed_peer, true, "peer copy destination"}};
    return dst;
  }
  std::uint64_t place_bytes() const override { return spec_.bytes; }
  void poison_place(const sample_destination&) override {
    dst_.make_current();
    a_.fill_device(dst_buf_.data(), 0, static_cast<std::size_t>(spec_.bytes));
    a_.synchronize();
  }
  void reach_place(const sample_destination&, place_access a,
                   const std::function<void(std::span<std::byte>)>& use) override {
    const auto n = static_cast<std::size_t>(spec_.bytes);
    dst_.make_current();
    a_.synchronize();
    if (a != place_access::overwrite) a_.copy(host_.data(), dst_buf_.data(), n, copy_kind::d2h);
    use({reinterpret_cast<std::byte*>(host_.data()), n});
    if (a != place_access::read) a_.copy(dst_buf_.data(), host_.data(), n, copy_kind::h2d);
    a_.synchronize();
  }
  first_use setup_costs() const override { return costs_; }
  clock_kind timer_kind() const override { return clock_kind::event; }
  double timer_resolution_s() const override { return event_resolution_s; }
  std::uint64_t bytes_per_rep() const override { return spec_.bytes; }

 private:
  point_spec spec_;
  device_context& src_;
  device_context& dst_;
  api& a_;
  device_buffer src_buf_, dst_buf_;
  std::vector<unsigned char> host_;
  first_use costs_;
  no_gate gate_;  // copies of 256 MiB dwarf their enqueue; the spin gate is the source device's alone
  timed_batches loop_{gate_};
};

}  // namespace

backend::peer_copy cuda_backend::prepare_peer(const point_spec& p) {
  if (p.device < 0 || p.device >= device_count_ || p.peer < 0 || p.peer >= device_count_)
    throw std::logic_error(fmt::format("{} was handed an unplanned peer copy: {} to {}", name_, p.device, p.peer));
  if (p.device == p.peer) {
    device_context& ctx = context(p.device);
    return {std::make_unique<peer_transfer>(p, ctx, ctx), "local (device memory to device memory on one device)"};
  }
  device_context& dst = context(p.peer);
  device_context& src = context(p.device);
  std::string path;
  if (api_->can_access_peer(p.device, p.peer)) {
    src.make_current();
    api_->enable_peer_access(p.peer);
    path = "peer (peer access on: the devices' own link)";
  } else {
    path = "staged via host (no peer access between these devices: the driver copies through host memory)";
  }
  return {std::make_unique<peer_transfer>(p, src, dst), path};
}

}  // namespace xfer::cuda
