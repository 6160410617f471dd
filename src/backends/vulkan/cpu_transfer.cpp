// Routes cpu-store / cpu-store-nt and cpu-load / cpu-load-nt: the CPU itself
// writes into or reads from device memory it maps (device-local-host-visible:
// the BAR on a discrete GPU; ordinary memory on lavapipe, whose description
// says so), with memcpy or with non-temporal (streaming) instructions. No command runs on the device while timing; the
// wall clock times the copy and the fence that makes the stores globally
// visible. What is stored is checked by the device (it copies the mapped
// memory out), and what is loaded was put there by the device.
#include <atomic>
#include <cstring>
#include <fmt/format.h>
#include <memory>
#include <xfer/core/errors.hpp>
#include <xfer/core/pattern.hpp>
#include <xfer/core/sample_check.hpp>
#include <xfer/core/timing.hpp>
#include <xfer/mem/nontemporal.hpp>

#include "routes.hpp"
#include "transfer.hpp"

namespace xfer::vulkan {
namespace {

using clock = std::chrono::steady_clock;

class cpu_transfer final : public transfer {
 public:
  cpu_transfer(const point_spec& p, const device_context& dev, bool store, bool nt)
      : spec_(p), dev_(dev), store_(store), nt_(nt), loop_(no_gate_) {
    const auto cls = kind_class(p.host_memory);
    if (!cls) throw std::logic_error("cpu route prepared on a kind the device does not map");
    const auto t0 = clock::now();
    mapped_ = buffer::allocate(dev_, p.bytes, *cls);
    plain_res_ = mem::make_host_kind("aligned", {});
    plain_ = static_cast<std::byte*>(plain_res_->allocate(plain_bytes(), 4096));
    io_ = buffer::allocate(dev_, p.bytes, mem_class::host_cached);
    costs_.alloc_s = seconds_since(t0);
    const auto t1 = clock::now();
    if (store_) {
      fill_pattern(plain_, p.bytes, seed_h2d);
      poison(mapped_.mapped(), p.bytes);
    } else {
      device_writes_pattern();
      poison(plain_, p.bytes);
    }
    costs_.touch_s = seconds_since(t1);
  }
  ~cpu_transfer() override {
    vk().vkDeviceWaitIdle(dev_.get());
    plain_res_->deallocate(plain_, plain_bytes(), 4096);
  }

  sample run(std::size_t reps) override {
    wall_timer wall;
    std::byte* dst = store_ ? mapped_.mapped() : plain_;
    const std::byte* src = store_ ? plain_ : mapped_.mapped();
    const std::size_t n = spec_.bytes;
    return loop_.run(wall, reps, [&](std::size_t, std::size_t) {
      if (!store_) mapped_.invalidate();
      if (nt_ && store_)
        mem::nontemporal_copy(dst, src, n);  // ends with SFENCE
      else if (nt_)
        mem::stream_load_copy(dst, src, n);
      else
        std::memcpy(dst, src, n);
      // Stores leave the write-combining buffers and are globally visible
      // (to the device) before the repetition counts as done.
      std::atomic_thread_fence(std::memory_order_seq_cst);
      if (store_) mapped_.flush();
    });
  }

  // Core verifies (src/core/verify.cpp) the one place: what the CPU stored,
  // as a device reader finds it (copied out by the device), or what it loaded.
  std::span<const sample_destination> places() const override {
    static constexpr sample_destination stored[] = {
        {true, 0, seed_h2d, true, "cpu-store destination (mapped memory, as the device reads it)"}};
    static constexpr sample_destination loaded[] = {{false, 0, seed_d2h, true, "cpu-load destination (host memory)"}};
    return store_ ? std::span<const sample_destination>(stored) : loaded;
  }
  std::uint64_t place_bytes() const override { return spec_.bytes; }
  void reach_place(const sample_destination&, place_access a,
                   const std::function<void(std::span<std::byte>)>& use) override {
    const std::size_t n = spec_.bytes;
    if (!store_) {
      use({plain_, n});
      return;
    }
    if (a == place_access::read) {
      dev_.run_once(dev_.copy_queue(0), [&](VkCommandBuffer cb) {
        VkBufferCopy region{0, 0, spec_.bytes};
        vk().vkCmdCopyBuffer(cb, mapped_.get(), io_.get(), 1, &region);
      });
      io_.invalidate();
      use({io_.mapped(), n});
      return;
    }
    if (a == place_access::update) mapped_.invalidate();
    use({mapped_.mapped(), n});
    mapped_.flush();
  }
  first_use setup_costs() const override { return costs_; }
  clock_kind timer_kind() const override { return clock_kind::wall; }
  double timer_resolution_s() const override { return wall_timer().resolution_s(); }
  std::uint64_t bytes_per_rep() const override { return spec_.bytes; }

 private:
  std::size_t plain_bytes() const { return (spec_.bytes + 4095) / 4096 * 4096; }
  void device_writes_pattern() {
    fill_pattern(io_.mapped(), spec_.bytes, seed_d2h);
    io_.flush();
    dev_.run_once(dev_.copy_queue(0), [&](VkCommandBuffer cb) {
      VkBufferCopy region{0, 0, spec_.bytes};
      vk().vkCmdCopyBuffer(cb, io_.get(), mapped_.get(), 1, &region);
    });
  }

  point_spec spec_;
  const device_context& dev_;
  bool store_, nt_;
  buffer mapped_, io_;
  std::unique_ptr<mem::host_resource> plain_res_;
  std::byte* plain_ = nullptr;
  no_gate no_gate_;
  timed_batches loop_;
  first_use costs_;
};

}  // namespace

std::string cpu_route_kind_gap(route_kind route, const std::string& kind) {
  // Only device memory: the route is about stores and loads that cross the
  // link (the BAR). The CPU's stores into the host kinds never leave the
  // host, and the CPU study measures them beside regular memory.
  if (kind == "device-local-host-visible") return {};
  return fmt::format("route {} stores into or loads from device memory through the BAR "
                     "(device-local-host-visible); {} is host memory: `xferbench cpu --kinds {}` "
                     "measures the CPU on it",
                     to_string(route), kind,
                     // imported memory is the CPU's own page-aligned memory
                     kind == "imported" ? "aligned" : kind);
}

void require_cpu_route(const point_spec& p, const device_caps& caps) {
  (void)caps;
  if (auto why = cpu_route_kind_gap(p.route, p.host_memory); !why.empty()) throw skip_point(why);
}

std::unique_ptr<transfer> make_cpu_transfer(const point_spec& p, const device_context& dev) {
  const bool store = p.route == own_routes::cpu_store || p.route == own_routes::cpu_store_nt;
  const bool nt = p.route == own_routes::cpu_store_nt || p.route == own_routes::cpu_load_nt;
  return std::make_unique<cpu_transfer>(p, dev, store, nt);
}

}  // namespace xfer::vulkan
