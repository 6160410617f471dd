#include "host_backend.hpp"

#include <chrono>
#include <cstring>
#include <fmt/format.h>
#include <thread>
#include <xfer/core/block_route.hpp>
#include <xfer/core/errors.hpp>
#include <xfer/core/pattern.hpp>
#include <xfer/core/sample_check.hpp>
#include <xfer/core/size.hpp>
#include <xfer/core/staged_route.hpp>
#include <xfer/core/system_probe.hpp>
#include <xfer/core/timing.hpp>
#include <xfer/mem/buffer.hpp>
#include <xfer/mem/host_resources.hpp>


namespace xfer::host {
namespace {

using clock = std::chrono::steady_clock;

// Splits one copy across the pool's workers in cache-line-aligned chunks.
void parallel_copy(thread_team& pool, std::byte* dst, const std::byte* src, std::size_t n) {
  const std::size_t workers = pool.size();
  const std::size_t chunk = ((n + workers - 1) / workers + 63) & ~std::size_t{63};
  pool.run([&](unsigned i) {
    const std::size_t begin = std::min(n, i * chunk);
    const std::size_t end = std::min(n, begin + chunk);
    if (end > begin) std::memcpy(dst + begin, src + begin, end - begin);
  });
}

class host_transfer final : public transfer {
 public:
  // staged: route staged's copier (h2d and d2h then go through it).
  host_transfer(const point_spec& p, std::unique_ptr<mem::host_resource> host_kind, thread_team* pool,
                thread_team* duplex, mem::staged_copier* staged)
      : spec_(p), host_kind_(std::move(host_kind)), pool_(pool), duplex_(duplex), staged_(staged) {
    const std::size_t n = p.bytes;
    const auto t0 = clock::now();
    // "Device" buffers are page-aligned host memory; host buffers come from the kind under test.
    auto& host = host_kind_ ? static_cast<std::pmr::memory_resource&>(*host_kind_) : device_mem_;
    const std::size_t host_align = host_kind_ ? host_kind_->natural_alignment() : 4096;
    switch (p.dir) {
      case direction::h2d:
      case direction::d2h:
      case direction::rw:
        host_a_ = mem::buffer(host, n, host_align);
        dev_a_ = mem::buffer(device_mem_, n, 4096);
        break;
      case direction::bidir:
        host_a_ = mem::buffer(host, n, host_align);
        host_b_ = mem::buffer(host, n, host_align);
        dev_a_ = mem::buffer(device_mem_, n, 4096);
        dev_b_ = mem::buffer(device_mem_, n, 4096);
        break;
      case direction::d2d:
        dev_a_ = mem::buffer(device_mem_, n, 4096);
        dev_b_ = mem::buffer(device_mem_, n, 4096);
        break;
    }
    costs_.alloc_s = seconds_since(t0);
    const auto t1 = clock::now();
    switch (p.dir) {
      case direction::h2d:
      case direction::rw: fill_pattern(host_a_.data(), n, seed_h2d); break;
      case direction::d2h: fill_pattern(dev_a_.data(), n, seed_d2h); break;
      case direction::bidir:
        fill_pattern(host_a_.data(), n, seed_h2d);
        fill_pattern(dev_b_.data(), n, seed_d2h);
        break;
      case direction::d2d: fill_pattern(dev_a_.data(), n, seed_d2h); break;
    }
    costs_.touch_s = seconds_since(t1);
  }

  std::string note() const override { return staged_ ? staged_route_note(*staged_) : std::string(); }
  std::optional<settings_ref> settings_used() const override {
    if (!staged_) return std::nullopt;
    return staged_route_settings(*staged_);
  }

  sample run(std::size_t reps) override {
    const std::size_t n = spec_.bytes;
    if (spec_.dir == direction::bidir) return run_bidir(reps);
    wall_timer timer;
    return loop_.run(timer, reps, [&](std::size_t, std::size_t) {
      switch (spec_.dir) {
        case direction::h2d: to_device(); break;
        case direction::d2h: to_host(); break;
        case direction::rw:
          copy(dev_a_.bytes_ptr(), host_a_.bytes_ptr(), n);
          copy(host_a_.bytes_ptr(), dev_a_.bytes_ptr(), n);
          break;
        case direction::d2d: copy(dev_b_.bytes_ptr(), dev_a_.bytes_ptr(), n); break;
        case direction::bidir: break;
      }
    });
  }

  // Core verifies (src/core/verify.cpp): every place is host memory here.
  std::span<const sample_destination> places() const override { return sample_destinations(spec_.dir); }
  std::uint64_t place_bytes() const override { return spec_.bytes; }
  void reach_place(const sample_destination& d, place_access,
                   const std::function<void(std::span<std::byte>)>& use) override {
    mem::buffer& b = d.on_device ? (d.buffer ? dev_b_ : dev_a_) : (d.buffer ? host_b_ : host_a_);
    use({b.bytes_ptr(), spec_.bytes});
  }
  // rw: the write (0), then the read-back (1).
  void run_step(std::size_t k) override {
    if (k == 0)
      copy(dev_a_.bytes_ptr(), host_a_.bytes_ptr(), spec_.bytes);
    else
      copy(host_a_.bytes_ptr(), dev_a_.bytes_ptr(), spec_.bytes);
  }

  first_use setup_costs() const override { return costs_; }
  clock_kind timer_kind() const override { return clock_kind::wall; }
  double timer_resolution_s() const override { return wall_timer().resolution_s(); }
  std::uint64_t bytes_per_rep() const override {
    return spec_.dir == direction::bidir || spec_.dir == direction::rw ? 2 * spec_.bytes : spec_.bytes;
  }

 private:
  // The "device" buffer is host memory: the host step takes its address as
  // the device handle.
  void to_device() {
    const std::size_t n = spec_.bytes;
    if (staged_)
      staged_->copy_to_device({dev_a_.data(), n}, 0, host_a_.data(), n);
    else
      copy(dev_a_.bytes_ptr(), host_a_.bytes_ptr(), n);
  }
  void to_host() {
    const std::size_t n = spec_.bytes;
    if (staged_)
      staged_->copy_to_host(host_a_.data(), {dev_a_.data(), n}, 0, n);
    else
      copy(host_a_.bytes_ptr(), dev_a_.bytes_ptr(), n);
  }

  void copy(std::byte* dst, const std::byte* src, std::size_t n) {
    if (pool_)
      parallel_copy(*pool_, dst, src, n);
    else
      std::memcpy(dst, src, n);
  }

  // Each direction on its own worker, all `reps` of it in one go (one
  // "enqueue" of the loop); each times itself, the batch ends when both have.
  sample run_bidir(std::size_t reps) {
    const std::size_t n = spec_.bytes;
    double part[2] = {0, 0};
    wall_timer timer;
    sample s = loop_.run(timer, 1, [&](std::size_t, std::size_t) {
      duplex_->run([&](unsigned i) {
        const auto start = clock::now();
        for (std::size_t r = 0; r < reps; ++r) {
          if (i == 0)
            std::memcpy(dev_a_.data(), host_a_.data(), n);
          else
            std::memcpy(host_b_.data(), dev_b_.data(), n);
        }
        part[i] = seconds_since(start);
      });
    });
    s.parts = {{"h2d", part[0]}, {"d2h", part[1]}};
    return s;
  }

  point_spec spec_;
  std::unique_ptr<mem::host_resource> host_kind_;
  mem::aligned_resource device_mem_{4096};
  thread_team* pool_;
  thread_team* duplex_;
  mem::staged_copier* staged_;
  mem::buffer host_a_, host_b_, dev_a_, dev_b_;
  first_use costs_;
  no_gate gate_;  // the host does the work itself: nothing to hold
  timed_batches loop_{gate_};
};

unsigned resolve_threads(unsigned threads) {
  return threads ? threads : std::max(1u, std::thread::hardware_concurrency());
}

}  // namespace

host_backend::host_backend(unsigned threads, mem::kind_options kinds, int devices)
    : threads_(resolve_threads(threads)), kinds_(kinds), state_(static_cast<std::size_t>(std::max(devices, 1))) {}

host_backend::~host_backend() = default;

std::string host_backend::description() const {
  return "reference: device memory is a second host allocation, a transfer is memcpy (the CPU baseline)";
}

std::vector<device_info> host_backend::devices() const {
  const system_info s = probe_system();
  std::vector<device_info> out;
  for (std::size_t i = 0; i < state_.size(); ++i) {
    device_info d;
    d.index = static_cast<int>(i);
    d.name = s.cpu_model;
    d.type = "cpu";
    d.memory_bytes = s.memory_bytes;
    d.max_alloc_bytes = s.memory_available_bytes;
    d.details["logical_cpus"] = std::to_string(s.logical_cpus);
    if (state_.size() > 1) d.details["stand_in"] = fmt::format("{} of {} stand-in devices (--host-devices)", i + 1, state_.size());
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<route_info> host_backend::routes() const {
  using enum direction;
  std::vector<route_info> out{
      {route_kind::memcpy, "one thread's memcpy", {h2d, d2h, bidir, rw, d2d}, true},
      {own_routes::memcpy_mt, fmt::format("memcpy split across {} threads", threads_), {h2d, d2h, rw, d2d}, true},
      {route_kind::staged,
       "libxfer's staged copier over the host step: pageable memory through a ring of page-aligned staging buffers, "
       "CPU threads filling while lane threads drain (the pipeline tested for real; a CPU stand-in, not a link)",
       {h2d, d2h}, true},
  };
  for (auto& r : block_route_infos("the host block step: memcpy on the host, a CPU stand-in, not a link"))
    out.push_back(std::move(r));
  return out;
}

std::vector<kind_support> host_backend::host_memory_kinds() const {
  std::vector<kind_support> out;
  for (const auto& name : mem::host_kind_names())
    out.push_back({name, true, "", mem::make_host_kind(name, kinds_)->describe()});
  mark_overview(out, {});
  return out;
}

std::string host_backend::pairing_gap(route_kind route, const std::string& kind) const {
  if (block_route_way(route) == mem::block_way::kernel) {
    const auto k = mem::make_host_kind(kind, kinds_);
    return k ? block_pairing_gap(route, *k) : std::string();
  }
  if (route != route_kind::staged) return {};
  const auto k = mem::make_host_kind(kind, kinds_);
  return k ? skip_reason_of([&] { require_pageable_for_staged(*k); }) : std::string();
}

std::unique_ptr<mem::host_resource> host_backend::host_memory(const std::string& kind) const {
  if (auto r = mem::make_host_kind(kind, kinds_)) return r;
  throw skip_point(fmt::format("backend host has no host memory kind '{}'", kind));
}

// The plan (core/plan.hpp) has checked the route, direction and kind.
std::unique_ptr<transfer> host_backend::prepare(const point_spec& p) {
  auto kind = p.host_memory == "none" ? nullptr : mem::make_host_kind(p.host_memory, kinds_);
  if (!kind && p.host_memory != "none")
    throw std::logic_error(fmt::format("host was handed an unplanned point: host memory '{}'", p.host_memory));
  const std::uint64_t buffers = p.dir == direction::bidir ? 4 : 2;
  const std::uint64_t available = available_memory_bytes();
  if (available && p.bytes > available / buffers)
    throw skip_point(fmt::format("needs {} buffers of {} ({} B each); only {} B of host memory is available", buffers,
                                 format_size(p.bytes), p.bytes, available));
  if (p.device < 0 || static_cast<std::size_t>(p.device) >= state_.size())
    throw std::logic_error(fmt::format("host was handed an unplanned point: device {}", p.device));
  device_state& dev = state_[static_cast<std::size_t>(p.device)];
  if (p.block_bytes) {
    if (!dev.blocks) {
      dev.block_step = std::make_unique<mem::host_block_step>();
      dev.blocks = std::make_unique<mem::block_copier>(*dev.block_step);
    }
    return make_block_transfer(p, *dev.blocks, std::move(kind));
  }
  thread_team* pool = nullptr;
  if (p.route == own_routes::memcpy_mt) {
    if (!dev.pool) dev.pool = std::make_unique<thread_team>(threads_);
    pool = dev.pool.get();
  }
  if (p.dir == direction::bidir && !dev.duplex) dev.duplex = std::make_unique<thread_team>(2);
  mem::staged_copier* staged = nullptr;
  if (p.route == route_kind::staged) {
    if (!kind) throw skip_point("route staged needs a host memory kind");
    require_pageable_for_staged(*kind);
    if (!dev.copier) {
      auto step = std::make_unique<mem::host_step>();
      dev.copier = make_route_copier(*step);
      dev.staged_step = std::move(step);
    }
    staged = dev.copier.get();
  }
  return std::make_unique<host_transfer>(p, std::move(kind), pool, dev.duplex.get(), staged);
}

backend::peer_copy host_backend::prepare_peer(const point_spec& p) {
  const auto n = static_cast<int>(state_.size());
  if (p.device < 0 || p.device >= n || p.peer < 0 || p.peer >= n)
    throw std::logic_error(fmt::format("host was handed an unplanned peer copy: {} to {}", p.device, p.peer));
  point_spec copy = p;
  copy.route = route_kind::memcpy;
  copy.dir = direction::d2d;
  copy.host_memory = "none";
  return {std::make_unique<host_transfer>(copy, nullptr, nullptr, nullptr, nullptr),
          "peer (stand-in devices share the host's memory: one memcpy)"};
}

}  // namespace xfer::host
