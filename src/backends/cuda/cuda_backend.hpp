#pragma once
// One backend class for both APIs: the api strategy decides which calls
// allocate, copy and time; routes, kinds and gates are shared.
#include <map>
#include <memory>
#include <string>
#include <vector>
#include <xfer/core/backend.hpp>
#include <xfer/mem/kinds.hpp>

#include "cuda/api.hpp"
#include "cuda_routes.hpp"

namespace xfer::cuda {

class device_context;

class cuda_backend final : public backend {
 public:
  cuda_backend(std::string name, std::unique_ptr<api> a, mem::kind_options kinds);
  ~cuda_backend() override;

  std::string name() const override { return name_; }
  std::string description() const override;
  std::vector<device_info> devices() const override;
  std::vector<route_info> routes() const override;
  std::vector<kind_support> host_memory_kinds() const override;
  std::map<std::string, std::string> versions() const override;
  std::unique_ptr<transfer> prepare(const point_spec& point) override;
  std::string pairing_gap(route_kind route, const std::string& kind) const override;
  // Peer access where the devices allow it, else staged by the driver (peer_transfer.cpp).
  peer_copy prepare_peer(const point_spec& point) override;
  // Every kind of host_kind_names(): the core ones with this backend's kind
  // options, the CUDA ones (registered, pinned, pinned-wc, mapped, managed)
  // allocating through this backend's API on device 0, whose context it makes
  // current for the calling thread. skip_point for unknown or unavailable kinds.
  std::unique_ptr<mem::host_resource> host_memory(const std::string& kind) const override;

  // What the vector add (vadd_app.hpp, built beside this backend) runs with.
  api& cuda_api() { return *api_; }
  int device_count() const noexcept { return device_count_; }
  const device_attributes& attributes(int device) const { return attrs_.at(static_cast<std::size_t>(device)); }
  const mem::kind_options& kind_options() const noexcept { return kinds_; }

 private:
  device_context& context(int device);

  std::string name_;
  std::unique_ptr<api> api_;
  mem::kind_options kinds_;
  int device_count_ = 0;
  std::vector<device_attributes> attrs_;  // read once: cudaGetDeviceProperties is slow
  std::map<int, std::unique_ptr<device_context>> contexts_;
};

// What `xferbench list` says of a device this binary has no kernel code for:
// the device, its architecture, what the build covers and how to cover it.
std::string uncovered_device_reason(int device, const device_attributes& a, std::string_view built_for);

}  // namespace xfer::cuda
