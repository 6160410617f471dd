#pragma once
// The host backend's device step: "device memory" is host memory (the
// device_ref's handle is a host pointer), and each lane is a thread of its
// own that runs the lane's queued copies in order, as a device's copy engine
// does. So the staged pipeline runs for real, asynchrony included, on any
// machine: CI tests it (and ThreadSanitizer watches it) with no GPU.
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <xfer/mem/host_resources.hpp>
#include <xfer/mem/resource.hpp>
#include <xfer/mem/staged/device_step.hpp>

namespace xfer::mem {

class host_step final : public device_step {
 public:
  // Staging comes from `staging` when given (it must outlive the step; tests
  // pass one that fails), else from page-aligned host memory owned by the step.
  explicit host_step(host_resource* staging = nullptr);
  ~host_step() override;

  std::string_view name() const noexcept override { return "host"; }
  std::string device_key() const override { return "host"; }
  host_resource& staging_memory() override { return *staging_; }
  std::unique_ptr<staging_lane> open_lane(unsigned slots) override;
  void plain_to_device(device_ref dst, std::size_t offset, const void* src, std::size_t bytes) override;
  void plain_to_host(void* dst, device_ref src, std::size_t offset, std::size_t bytes) override;
  device_ref allocate(std::size_t bytes) override;  // page-aligned host memory
  void deallocate(device_ref d) noexcept override;
  const void* host_view(device_ref d) const noexcept override { return d.handle; }
  // There is no device work to wait for: any queue is already done.
  std::unique_ptr<queue_mark> mark(void* queue) override;

  // Registration, emulated: nothing is pinned, but the step keeps a table
  // of what was registered and refuses what a driver refuses (a range
  // overlapping a registration, as cudaHostRegister's "already registered";
  // more than the limit, as the locked-memory limit, ulimit -l), so CI tests
  // the registration cache's whole policy.
  std::string registration_unsupported() const override { return {}; }
  void register_host(void* p, std::size_t bytes) override;
  void unregister_host(void* p) noexcept override;
  int registered(const void* p, std::size_t bytes) const noexcept override;
  // The emulated locked-memory limit (default: none).
  void set_registration_limit(std::size_t bytes);
  std::size_t registered_bytes() const;
  std::size_t registrations() const;

 private:
  mutable std::mutex registry_mutex_;
  std::map<const unsigned char*, std::size_t> registry_;  // base -> bytes
  std::size_t registry_bytes_ = 0;
  std::size_t registry_limit_ = static_cast<std::size_t>(-1);
  std::unique_ptr<host_resource> owned_staging_;
  host_resource* staging_;
  aligned_resource device_memory_;
};

}  // namespace xfer::mem
