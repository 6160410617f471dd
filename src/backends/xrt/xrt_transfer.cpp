// The xrt backend's routes. Each repetition is blocking XRT calls, timed by
// the wall clock: XRT's native API has no event timer for a bo.sync.
//   copy-sync: bo.write + bo.sync(to device); bo.sync(from device) + bo.read;
//   bo-sync:   bo.sync alone, of a buffer XRT allocated (bo-normal, bo-host-only);
//   user-ptr:  bo.sync of a buffer object made over the point's host memory.
// rw runs the h2d step then the d2h step (seed 002's consecutive WRITE/READ).
#include "xrt_transfer.hpp"

#include <chrono>
#include <cstdint>
#include <cstring>
#include <utility>
#include <fmt/format.h>
#include <xrt/xrt_bo.h>
#include <xrt/xrt_device.h>

#include <xfer/core/errors.hpp>
#include <xfer/core/pattern.hpp>
#include <xfer/core/sample_check.hpp>
#include <xfer/core/size.hpp>
#include <xfer/core/timing.hpp>
#include <xfer/mem/buffer.hpp>
#include <xfer/mem/kind_registry.hpp>

namespace xfer::xrt_backend {

const std::vector<bo_kind>& bo_kinds() {
  static const std::vector<bo_kind> k = [] {
    std::vector<bo_kind> out;
    for (const auto& e : mem::host_kinds())
      if (e.maker == mem::kind_maker::xrt) out.push_back({std::string(e.name), std::string(e.summary)});
    return out;
  }();
  return k;
}

namespace {

using clock = std::chrono::steady_clock;

bool is_bo_kind(const std::string& k) {
  for (const auto& b : bo_kinds())
    if (b.name == k) return true;
  return false;
}

class xrt_transfer final : public transfer {
 public:
  // kind: the point's host memory, made by make_xrt_transfer when it checked
  // the kind exists (null for bo-sync, whose memory XRT allocates).
  xrt_transfer(const point_spec& p, const std::string& mode, std::unique_ptr<mem::host_resource> kind)
      : spec_(p), emulated_(!mode.empty()), kind_(std::move(kind)) {
    const auto t0 = clock::now();
    try {
      dev_ = xrt::device(static_cast<unsigned>(p.device));
    } catch (const std::exception& e) {
      throw skip_point(fmt::format("XRT could not open device {}: {}", p.device, e.what()));
    }
    const std::size_t n = p.bytes;
    if (p.route == own_routes::bo_sync) {
      const auto flags = p.host_memory == "bo-host-only" ? xrt::bo::flags::host_only : xrt::bo::flags::normal;
      bo_ = make_bo([&] { return xrt::bo(dev_, n, flags, 0); });
      backing_ = bo_.map<std::byte*>();
    } else {
      host_ = mem::buffer(*kind_, n, kind_->natural_alignment());
      if (p.route == route_kind::copy_sync) {
        bo_ = make_bo([&] { return xrt::bo(dev_, n, xrt::bo::flags::normal, 0); });
        backing_ = bo_.map<std::byte*>();
      } else {
        bo_ = make_user_bo(host_.data(), n);
        backing_ = bo_.map<std::byte*>();
        if (backing_ != host_.data())
          note_ = fmt::format("XRT took the user pointer (address % 4096 = {}) and copies through a buffer of its own",
                              reinterpret_cast<std::uintptr_t>(host_.data()) % 4096);
      }
    }
    costs_.alloc_s = seconds_since(t0);
    const auto t1 = clock::now();
    // The source: the host side for h2d and rw, the device for d2h.
    std::byte* host_side = p.route == route_kind::copy_sync ? host_.bytes_ptr() : backing_;
    if (p.dir == direction::d2h) {
      fill_pattern(backing_, n, seed_d2h);
      bo_.sync(XCL_BO_SYNC_BO_TO_DEVICE);
    } else {
      fill_pattern(host_side, n, seed_h2d);
    }
    costs_.touch_s = seconds_since(t1);
  }

  sample run(std::size_t reps) override {
    wall_timer timer;
    return loop_.run(timer, reps, [&](std::size_t, std::size_t) {
      if (spec_.dir != direction::d2h) to_device();
      if (spec_.dir != direction::h2d) to_host();
    });
  }

  // bo.sync under emulation moves nothing; bo.write/bo.read (copy-sync) do
  // move bytes, within host memory, and those are checked.
  bool verifies_data() const override { return !emulated_ || spec_.route == route_kind::copy_sync; }

  // Core verifies (src/core/verify.cpp) the places of the direction. The
  // device's copy is reached through the buffer object's host backing: bo.sync
  // from the device before reading it, to the device after writing it.
  std::span<const sample_destination> places() const override { return sample_destinations(spec_.dir); }
  std::uint64_t place_bytes() const override { return spec_.bytes; }
  void reach_place(const sample_destination& d, place_access a,
                   const std::function<void(std::span<std::byte>)>& use) override {
    const std::size_t n = spec_.bytes;
    const bool copies = spec_.route == route_kind::copy_sync;  // bo.write/bo.read: the backing is no source
    if (!d.on_device) {
      use({copies ? host_.bytes_ptr() : backing_, n});
      return;
    }
    if (a == place_access::read) {
      if (!emulated_) bo_.sync(XCL_BO_SYNC_BO_FROM_DEVICE);
      use({backing_, n});
      return;
    }
    // Under emulation nothing reaches a device: the backing is bo.write's
    // destination (copy-sync), or the source itself, left whole.
    if (emulated_) {
      if (copies) use({backing_, n});
      return;
    }
    // Written through the backing, which is restored where it is the source.
    use({backing_, n});
    bo_.sync(XCL_BO_SYNC_BO_TO_DEVICE);
    if (!copies) fill_pattern(backing_, n, seed_h2d);
  }
  // rw: the write (0), then the read-back (1).
  void run_step(std::size_t k) override {
    if (k == 0)
      to_device();
    else
      to_host();
  }

  first_use setup_costs() const override { return costs_; }
  clock_kind timer_kind() const override { return clock_kind::wall; }
  double timer_resolution_s() const override { return wall_timer().resolution_s(); }
  std::uint64_t bytes_per_rep() const override { return spec_.dir == direction::rw ? 2 * spec_.bytes : spec_.bytes; }
  std::string note() const override { return note_; }

 private:
  void to_device() {
    if (spec_.route == route_kind::copy_sync) bo_.write(host_.data());
    bo_.sync(XCL_BO_SYNC_BO_TO_DEVICE);
  }
  void to_host() {
    bo_.sync(XCL_BO_SYNC_BO_FROM_DEVICE);
    if (spec_.route == route_kind::copy_sync) bo_.read(host_.data());
  }

  // A buffer larger than a memory bank, or more than the card holds, is
  // refused by XRT: a skipped point with its words.
  template <class Make>
  xrt::bo make_bo(Make&& make) {
    try {
      return make();
    } catch (const std::exception& e) {
      throw skip_point(fmt::format("XRT could not allocate a buffer object of {}: {}", format_size(spec_.bytes),
                                   e.what()));
    }
  }

  // Seed 000's question, asked of XRT: a pointer not 4 KiB-aligned is refused
  // (a skipped point saying so) or copied (the point's note says so, and its
  // time against an aligned kind's is the cost).
  xrt::bo make_user_bo(void* p, std::size_t n) {
    try {
      return xrt::bo(dev_, p, n, 0);
    } catch (const std::exception& e) {
      const auto off = reinterpret_cast<std::uintptr_t>(p) % 4096;
      if (off)
        throw skip_point(fmt::format("XRT refused the user pointer, {} B past a 4 KiB boundary ({}): its DMA needs "
                                     "4 KiB-aligned buffers (seed 000); use an aligned kind or route copy-sync",
                                     off, e.what()));
      throw skip_point(fmt::format("XRT refused a buffer object over the host memory: {}", e.what()));
    }
  }

  point_spec spec_;
  bool emulated_;
  xrt::device dev_;
  std::unique_ptr<mem::host_resource> kind_;
  mem::buffer host_;
  xrt::bo bo_;
  std::byte* backing_ = nullptr;  // the buffer object's host side
  std::string note_;
  first_use costs_;
  no_gate gate_;  // blocking calls: nothing is queued to hold
  timed_batches loop_{gate_};
};

}  // namespace

std::string bo_pairing_gap(route_kind route, const std::string& kind) {
  const bool bo_kind = is_bo_kind(kind);
  if (route == own_routes::bo_sync && !bo_kind)
    return "route bo-sync syncs a buffer XRT allocated: its kinds are bo-normal and bo-host-only";
  if (route != own_routes::bo_sync && bo_kind) return fmt::format("{} is XRT's own buffer: route bo-sync measures it", kind);
  return {};
}

std::unique_ptr<transfer> make_xrt_transfer(const point_spec& p, const device_info&, const std::string& mode,
                                            mem::kind_options kinds) {
  if (auto why = bo_pairing_gap(p.route, p.host_memory); !why.empty()) throw skip_point(why);
  // The kind is made once: the check that it exists hands it to the transfer.
  std::unique_ptr<mem::host_resource> kind;
  if (p.route != own_routes::bo_sync) {
    kind = mem::make_host_kind(p.host_memory, kinds);
    if (!kind) throw skip_point(fmt::format("backend xrt has no host memory kind '{}'", p.host_memory));
  }
  return std::make_unique<xrt_transfer>(p, mode, std::move(kind));
}

}  // namespace xfer::xrt_backend
