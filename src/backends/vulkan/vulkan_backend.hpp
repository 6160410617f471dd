#pragma once
// One Vulkan physical device as an xferbench backend: its routes, host
// memory kinds, and the checks that turn an impossible point into a skip.
#include <memory>
#include <string>
#include <vector>
#include <xfer/core/backend.hpp>
#include <xfer/mem/kinds.hpp>

#include "device.hpp"
#include "kernel.hpp"

namespace xfer::vulkan {

class vulkan_backend final : public backend {
 public:
  vulkan_backend(std::shared_ptr<instance> inst, device_caps caps, std::string token, mem::kind_options kinds);
  ~vulkan_backend() override;

  std::string name() const override { return "vulkan:" + token_; }
  std::string description() const override;
  std::vector<device_info> devices() const override;
  std::vector<route_info> routes() const override;
  std::vector<kind_support> host_memory_kinds() const override;
  std::map<std::string, std::string> versions() const override;
  std::unique_ptr<transfer> prepare(const point_spec& point) override;
  std::string pairing_gap(route_kind route, const std::string& kind) const override;
  // The core kinds as every backend has them, and the mapped Vulkan kinds as
  // vk_host_resource (for the CPU study); "imported" is no resource of its own.
  std::unique_ptr<mem::host_resource> host_memory(const std::string& kind) const override;

  const device_caps& caps() const noexcept { return caps_; }
  // The logical device, created on first use.
  device_context& context() const;

 private:
  std::shared_ptr<instance> inst_;
  device_caps caps_;
  std::string token_;
  mem::kind_options kinds_;
  mutable std::unique_ptr<device_context> ctx_;  // made by the first point or resource that needs it
  std::unique_ptr<compute_pipeline> pipe_;  // after ctx_: destroyed first
  std::string pipe_error_;               // a failed pipeline is not rebuilt per point
  std::unique_ptr<compute_pipeline> poll_pipe_;  // cpu-store(-nt)-latency's, likewise
  std::string poll_pipe_error_;
};

}  // namespace xfer::vulkan
