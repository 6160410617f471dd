#pragma once
// What every CUDA transfer shares: its point, its host kind, first-use costs,
// and the helpers that fill sources and check destinations on either side.
#include <cstdint>
#include <memory>
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

  // Pattern into device memory, through a host staging buffer (blocking).
  void fill_device(void* dev, std::uint64_t seed);
  // Zeroes device memory (never equal to a pattern).
  void poison_device(void* dev);
  // Copies device memory back and checks it against the pattern.
  void check_device(const void* dev, std::uint64_t seed, const char* what);
  // Checks host memory of the point's kind; write-combined memory is read
  // back through the device (CPU reads of it are uncached and very slow).
  void check_host(const void* host, std::uint64_t seed, const char* what);

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
