#pragma once
// One OpenCL platform as an xferbench backend: its devices, routes and host
// memory kinds, and the checks that turn an impossible point into a skip.
#include <memory>
#include <string>
#include <vector>
#include <xfer/core/backend.hpp>
#include <xfer/mem/kinds.hpp>

#include "opencl/platform.hpp"
#include "routes.hpp"

namespace xfer::opencl {

class opencl_backend final : public backend {
 public:
  opencl_backend(platform_desc platform, std::vector<device_caps> devices, mem::kind_options kinds);
  ~opencl_backend() override;

  std::string name() const override { return "opencl:" + platform_.token; }
  std::string description() const override;
  std::vector<device_info> devices() const override;
  std::vector<route_info> routes() const override { return route_table(); }
  std::vector<kind_support> host_memory_kinds() const override;
  std::map<std::string, std::string> versions() const override;
  std::unique_ptr<transfer> prepare(const point_spec& point) override;
  std::string pairing_gap(route_kind route, const std::string& kind) const override;
  // Through a host buffer: each device has a context of its own here.
  peer_copy prepare_peer(const point_spec& point) override;
  // The core kinds as every backend has them (with this backend's options),
  // and OpenCL's own as cl_host_resource on the first device that offers them.
  std::unique_ptr<mem::host_resource> host_memory(const std::string& kind) const override;
  const platform_desc& platform() const noexcept { return platform_; }
  // What the vector add (vadd_app.hpp, built beside this backend) runs with.
  const std::vector<device_caps>& capabilities() const noexcept { return devices_; }
  const mem::kind_options& kind_options() const noexcept { return kinds_; }
  // The device's context and queues, created on first use.
  device_context& context_for(int device);

 private:
  // Builds the copy kernels once per device; a failed build fails every kernel point with its log.
  const program& copy_program(int device);
  // Route staged's copier for the device: made on first use (with its
  // tuning: cached, else calibrated once), in the device's context.
  mem::staged_copier& copier_for(int device);

  platform_desc platform_;
  std::vector<device_caps> devices_;
  mem::kind_options kinds_;
  std::vector<std::unique_ptr<device_context>> contexts_;  // by device index, null until used
  std::vector<std::string> build_errors_;                  // a failed build is not retried per point
};

}  // namespace xfer::opencl
