#pragma once
// What every CUDA transfer shares: its point, its host kind, first-use costs,
// the helpers that fill sources, and how core's verification reaches a place
// on either side: a transfer names only the address of each place.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <xfer/core/backend.hpp>
#include <xfer/core/sample_check.hpp>
#include <xfer/mem/buffer.hpp>
#include <xfer/mem/resource.hpp>

#include "batch_copy.hpp"
#include "cuda/api.hpp"
#include "device_context.hpp"

namespace xfer::cuda {

// Core's seeds (seed_h2d, seed_d2h), and one for a device buffer that is a
// source of its own.
inline constexpr std::uint64_t seed_device = 3;

class cuda_transfer : public transfer {
 public:
  first_use setup_costs() const override { return costs_; }

  // Core's verification (src/core/verify.cpp), through place_ptr: device
  // memory is poisoned by a device memset and checked by a kernel where it
  // is large (never a GiB copied back for one CPU core to read).
  std::uint64_t place_bytes() const override { return spec_.bytes; }
  void reach_place(const sample_destination& d, place_access a,
                   const std::function<void(std::span<std::byte>)>& use) override;
  void poison_place(const sample_destination& d) override;
  std::optional<place_mismatch> find_mismatch(const sample_destination& d) override;

 protected:
  cuda_transfer(device_context& ctx, const point_spec& p, std::unique_ptr<mem::host_resource> kind);

  // skip_point unless `buffers` host buffers of the point's size (plus a
  // staging copy for checks) fit in the host memory available now.
  void require_host_memory(std::uint64_t buffers) const;
  mem::buffer host_buffer() { return mem::buffer(*kind_, spec_.bytes, kind_->natural_alignment()); }
  device_buffer device_buf() { return device_buffer(ctx_.a, spec_.bytes); }
  // Copy kinds between the point's host memory and the device (managed memory
  // is not host memory to the driver: it takes the unified path).
  copy_kind up() const { return managed_ ? copy_kind::unified : copy_kind::h2d; }
  copy_kind down() const { return managed_ ? copy_kind::unified : copy_kind::d2h; }

  // Where place d is: a device address (d.on_device) or a host one.
  virtual void* place_ptr(const sample_destination& d) = 0;

  // Pattern into device memory, through a host staging buffer (blocking).
  void fill_device(void* dev, std::uint64_t seed);
  // Zeroes device memory (never equal to a pattern).
  void poison_device(void* dev);
  // The first byte of device memory that differs from the pattern.
  std::optional<place_mismatch> device_mismatch(const void* dev, std::uint64_t seed);
  // The same for host memory of the point's kind; write-combined memory is
  // read back through the device (CPU reads of it are uncached and very slow).
  std::optional<place_mismatch> host_mismatch(const void* host, std::uint64_t seed);

  device_context& ctx_;
  point_spec spec_;
  std::unique_ptr<mem::host_resource> kind_;
  first_use costs_;
  bool managed_;  // the host kind is managed memory

 private:
  // Kept between checks (they run after every timed sample): where the
  // check kernel reports a mismatch, and a device copy of large host buffers.
  device_buffer first_bad_;
  std::unique_ptr<device_buffer> host_copy_;
  bool host_copy_refused_ = false;  // no room on the device: the CPU checks
};

// route copy-sync (async = false) or copy-async (async = true)
std::unique_ptr<transfer> make_copy_transfer(device_context& ctx, const point_spec& p,
                                             std::unique_ptr<mem::host_resource> kind, bool async);
// routes kernel-host, kernel-device, kernel-device-read, kernel-device-write
std::unique_ptr<transfer> make_kernel_transfer(device_context& ctx, const point_spec& p,
                                               std::unique_ptr<mem::host_resource> kind);
// route staged (h2d, d2h; pageable kinds)
std::unique_ptr<transfer> make_staged_transfer(device_context& ctx, const point_spec& p,
                                               std::unique_ptr<mem::host_resource> kind);
// route batch-any-order (h2d, d2h): cudaMemcpyBatchAsync or cuMemcpyBatchAsync.
// require_batch_copy decides before the device is touched: skip_point for
// no kind or one that is not pageable, and where this build or the driver
// lacks the call (with what is missing).
std::unique_ptr<batch_copy> require_batch_copy(api& a, const mem::host_resource* kind);
std::unique_ptr<transfer> make_batch_transfer(device_context& ctx, const point_spec& p,
                                              std::unique_ptr<mem::host_resource> kind,
                                              std::unique_ptr<batch_copy> batch);
// route latency
std::unique_ptr<transfer> make_latency_transfer(device_context& ctx, const point_spec& p,
                                                std::unique_ptr<mem::host_resource> kind);

}  // namespace xfer::cuda
