#include "cuda_backend.hpp"

#include <algorithm>
#include <dlfcn.h>
#include <fmt/format.h>
#include <xfer/config.hpp>
#include <xfer/core/block_route.hpp>
#include <xfer/core/errors.hpp>
#include <xfer/core/staged_route.hpp>

#include "cuda_backends.hpp"
#include "cuda_transfer.hpp"
#include "device_context.hpp"
#include "kernels.hpp"
#include "cuda/resources.hpp"

namespace xfer::cuda {
namespace {

bool runtime(const api& a) { return a.name() == "runtime"; }

// 13000 -> "13.0", 12080 -> "12.8"
std::string cuda_version_text(int v) { return fmt::format("{}.{}", v / 1000, (v % 1000) / 10); }

// The runtime says "driver version is insufficient" both when the driver is
// too old and when there is none: tell the two apart for the user.
std::string why_unavailable() {
  void* driver = ::dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (!driver) return "no NVIDIA driver here (libcuda.so.1 not found)";
  ::dlclose(driver);
  return "the NVIDIA driver cannot run CUDA here (no device, or a driver older than this build's runtime)";
}

}  // namespace

std::string uncovered_device_reason(int device, const device_attributes& a, std::string_view built_for) {
  return fmt::format("device {} ({}, compute capability {}.{}) is not covered by this binary, whose CUDA kernels were "
                     "built for {}: rebuild with -DCMAKE_CUDA_ARCHITECTURES={}{}",
                     device, a.name, a.cc_major, a.cc_minor, built_for.empty() ? "nvcc's default" : built_for,
                     a.cc_major, a.cc_minor);
}

cuda_backend::cuda_backend(std::string name, std::unique_ptr<api> a, mem::kind_options kinds)
    : name_(std::move(name)), api_(std::move(a)), kinds_(kinds), device_count_(api_->device_count()) {
  for (int i = 0; i < device_count_; ++i) attrs_.push_back(api_->attributes(i));
}

cuda_backend::~cuda_backend() = default;

std::string cuda_backend::description() const {
  return runtime(*api_) ? "CUDA runtime API: cudaMemcpy[Async], cudaHostAlloc, cudaHostRegister, cudaEvent timing"
                        : "CUDA driver API: cuMemcpyHtoD/DtoH[Async], cuMemHostAlloc, cuMemHostRegister, cuEvent "
                          "timing, primary context";
}

std::vector<device_info> cuda_backend::devices() const {
  std::vector<device_info> out;
  for (int i = 0; i < device_count_; ++i) {
    api_->make_current(i);
    const device_attributes& a = attrs_[i];
    device_info d;
    d.index = i;
    d.name = a.name;
    d.type = "gpu";
    d.memory_bytes = a.total_memory;
    std::size_t free = 0, total = 0;
    api_->memory_info(free, total);
    d.max_alloc_bytes = free;
    d.details["pci_bus_id"] = a.pci_bus_id;
    d.details["compute_capability"] = fmt::format("{}.{}", a.cc_major, a.cc_minor);
    d.details["multiprocessors"] = std::to_string(a.multiprocessors);
    d.details["copy_engines"] = std::to_string(a.async_engines);
    d.details["free_memory_bytes"] = std::to_string(free);
    d.details["unified_addressing"] = a.unified_addressing ? "yes" : "no";
    d.details["can_map_host_memory"] = a.can_map_host_memory ? "yes" : "no";
    d.details["concurrent_managed_access"] = a.concurrent_managed_access ? "yes" : "no";
    d.details["timer_resolution_s"] = fmt::format("{:g}", event_resolution_s);
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<route_info> cuda_backend::routes() const {
  using enum direction;
  const bool rt = runtime(*api_);
  std::vector<route_info> out{
      {route_kind::copy_sync,
       fmt::format("blocking {} per transfer, wall clock (what a naive program sees)",
                   rt ? "cudaMemcpy" : "cuMemcpyHtoD/DtoH/DtoD"),
       {h2d, d2h, rw, d2d}, true},
      {route_kind::copy_async,
       fmt::format("{} queued behind a spin-kernel gate, device events (wall clock beside); pageable and managed kinds ungated",
                   rt ? "cudaMemcpyAsync" : "cuMemcpy*Async"),
       {h2d, d2h, bidir, rw, d2d}, true},
      {route_kind::staged,
       "libxfer's staged copier: pageable memory through a ring of pinned buffers, CPU threads and the copy engine "
       "overlapped (wall clock; the plain API below its handoff size)",
       {h2d, d2h}, true},
      {own_routes::batch_any_order,
       fmt::format("{} (CUDA 12.8+) with the any-order source hint: the pageable buffer as one batch of chunk-sized "
                   "copies (the staged copier's default chunk), the driver staging it its own way; wall clock",
                   rt ? "cudaMemcpyBatchAsync" : "cuMemcpyBatchAsync"),
       {h2d, d2h}, true},
      {route_kind::kernel_host,
       "a kernel reads (h2d) or writes (d2h) host memory across the link: zero copy (pinned, pinned-wc, mapped, "
       "registered, managed)",
       {h2d, d2h}, true},
      {route_kind::kernel_device, "a kernel copies device memory to device memory", {d2d}, false},
      {own_routes::kernel_device_read, "a kernel reads device memory (XOR reduction)", {d2d}, false},
      {own_routes::kernel_device_write, "a kernel writes device memory", {d2d}, false},
      {own_routes::latency,
       "one device thread chases pointers through host memory (pinned kinds, managed): time per dependent 4-byte load",
       {h2d}, true, {}, sizeof(std::uint32_t)},
  };
  // libxfer's block step is the runtime API's: the block routes are cuda-rt's.
  if (rt)
    for (auto& r : block_route_infos("the CUDA runtime, on the copier's own stream")) out.push_back(std::move(r));
  return out;
}

std::vector<kind_support> cuda_backend::host_memory_kinds() const {
  std::vector<kind_support> out;
  const device_attributes a = attrs_.empty() ? device_attributes{} : attrs_[0];
  for (const auto& name : host_kind_names()) {
    kind_support k{name, true, "", make_host_kind(name, *api_, kinds_)->describe()};
    if (name == "managed" && device_count_ > 0 && !a.managed_memory) {
      k.available = false;
      k.reason = "device 0 does not support managed memory";
    }
    if (name == "mapped" && device_count_ > 0 && !a.can_map_host_memory) {
      k.available = false;
      k.reason = "device 0 cannot map host memory";
    }
    out.push_back(std::move(k));
  }
  mark_overview(out, {"pinned"});
  return out;
}

std::string cuda_backend::pairing_gap(route_kind route, const std::string& kind) const {
  if (block_route_way(route) == mem::block_way::kernel) {
    const auto k = make_host_kind(kind, *api_, kinds_);
    return k ? block_pairing_gap(route, *k) : std::string();
  }
  const bool pageable_only = route == route_kind::staged || route == own_routes::batch_any_order;
  const bool device_reads = route == route_kind::kernel_host || route == own_routes::latency;
  if (!pageable_only && !device_reads) return {};
  const auto k = make_host_kind(kind, *api_, kinds_);
  if (!k) return {};
  if (pageable_only) return skip_reason_of([&] { require_pageable_for_staged(*k); });
  if (attrs_.empty()) return {};
  const std::string gap = device_access_gap(*k, attrs_[0]);
  return gap.empty() ? gap : fmt::format("{} needs host memory the device can address: {}", to_string(route), gap);
}

std::map<std::string, std::string> cuda_backend::versions() const {
  return {{"api", std::string(api_->name())},
          {"driver", cuda_version_text(api_->driver_version())},
          {"runtime", cuda_version_text(api_->runtime_version())}};
}

device_context& cuda_backend::context(int device) {
  auto it = contexts_.find(device);
  if (it == contexts_.end()) it = contexts_.emplace(device, std::make_unique<device_context>(*api_, device)).first;
  it->second->make_current();
  return *it->second;
}

// The plan (core/plan.hpp) has checked the device, route, direction and kind.
std::unique_ptr<transfer> cuda_backend::prepare(const point_spec& p) {
  const auto all = routes();
  const auto route = std::find_if(all.begin(), all.end(), [&](const route_info& r) { return r.name == p.route; });
  if (route == all.end() || p.device < 0 || p.device >= device_count_)
    throw std::logic_error(fmt::format("{} was handed an unplanned point: route '{}', device {}", name_, to_string(p.route), p.device));
  std::unique_ptr<mem::host_resource> kind;
  if (route->uses_host_memory && p.dir != direction::d2d) kind = make_host_kind(p.host_memory, *api_, kinds_);
  // Before the device is touched: a call this build or driver lacks skips.
  std::unique_ptr<batch_copy> batch;
  if (p.route == own_routes::batch_any_order) batch = require_batch_copy(*api_, kind.get());

  device_context& ctx = context(p.device);
  if (p.block_bytes) {
    // The array, and as much again for the pack way's scratch.
    ctx.require_device_memory(2 * p.bytes, "the block array and the pack way's scratch");
    return make_block_transfer(p, ctx.blocks(), std::move(kind));
  }
  if (p.route == route_kind::copy_sync) return make_copy_transfer(ctx, p, std::move(kind), false);
  if (p.route == route_kind::copy_async) return make_copy_transfer(ctx, p, std::move(kind), true);
  if (p.route == own_routes::latency) return make_latency_transfer(ctx, p, std::move(kind));
  if (p.route == route_kind::staged) return make_staged_transfer(ctx, p, std::move(kind));
  if (p.route == own_routes::batch_any_order) return make_batch_transfer(ctx, p, std::move(kind), std::move(batch));
  return make_kernel_transfer(ctx, p, std::move(kind));
}

std::unique_ptr<mem::host_resource> cuda_backend::host_memory(const std::string& kind) const {
  auto r = make_host_kind(kind, *api_, kinds_);
  if (!r) return backend::host_memory(kind);  // says, in the words every backend uses, that there is no such kind
  for (const auto& k : host_memory_kinds())
    if (k.name == kind && !k.available) throw skip_point(fmt::format("{}: {}", name_, k.reason));
  if (!mem::make_host_kind(kind, kinds_)) {
    // The driver API allocates pinned and managed memory in the current
    // context, and a thread has none until one is made current.
    try {
      api_->make_current(0);
    } catch (const api_error& e) {
      throw skip_point(fmt::format("{} memory from {}: {}", kind, name_, e.what()));
    }
  }
  return r;
}

// ---- the registry's entry point --------------------------------------------------

std::vector<backend_entry> make_cuda_backends(const mem::kind_options& kinds) {
  std::vector<backend_entry> out;
  const auto add = [&](const char* name, std::unique_ptr<api> (*make)()) {
    try {
      auto a = make();
      const int n = a->device_count();
      if (n <= 0) {
        out.push_back({name, nullptr, "no CUDA device: the driver reports none"});
        return;
      }
      // Every route needs the kernels (the gate is one): a device this build
      // has no code for makes the backend unavailable, said plainly.
      for (int d = 0; d < n; ++d) {
        a->make_current(d);
        if (!kernels::image_for_current_device()) {
          out.push_back({name, nullptr, uncovered_device_reason(d, a->attributes(d), XFER_CUDA_ARCHITECTURES)});
          return;
        }
      }
      out.push_back({name, std::make_unique<cuda_backend>(name, std::move(a), kinds), ""});
    } catch (const std::exception& e) {
      out.push_back({name, nullptr, fmt::format("{} ({})", why_unavailable(), e.what())});
    }
  };
  add("cuda-rt", &make_runtime_api);
  add("cuda-drv", &make_driver_api);
  return out;
}

}  // namespace xfer::cuda
