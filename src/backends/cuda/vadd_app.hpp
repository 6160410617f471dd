#pragma once
// The vector-add study's part (xfer/app/vadd.hpp, seeds 000/003) on one CUDA device: a
// vector add as a plain CUDA program would run it, one phase at a time, with
// the host buffers (a, b, c and the CPU's d) allocated by the strategy under
// test. Written once over the api strategy, so cuda-rt and cuda-drv each
// allocate, register, copy and synchronize with their own API's calls; the
// kernel is the shared one (kernels.cu), launched on the legacy default stream
// of the device's primary context.
//
// What each phase holds, by strategy (a negative time: the phase does not apply):
//   pageable, pageable-unaligned, aligned, huge: no map; write and read are
//     blocking copies that the driver stages through its own pinned buffers
//     (the cost the seed's unaligned example shows lands there);
//   registered: allocate takes page-aligned pageable memory, map page-locks
//     a, b and c in place (cudaHostRegister / cuMemHostRegister): what
//     making a program's own buffers usable by the device costs;
//   pinned, pinned-wc: page-locked at allocation (cudaHostAlloc), so no map;
//     pinned-wc's CPU reads (cpu_vadd, verify) are slow by design;
//   mapped: pinned and mapped at allocation; map gets the device's addresses
//     of a, b, c; no write or read: the kernel reads a and b and writes c
//     across the link (zero copy);
//   managed: managed memory advised to live on the host; no map, write or
//     read: the kernel works on it in place.
#include <string>
#include <vector>
#include <memory>
#include <xfer/app/vadd.hpp>
#include <xfer/mem/kinds.hpp>

#include "cuda/api.hpp"

namespace xfer::cuda {

class cuda_vadd final : public vadd_app {
 public:
  // `a` must outlive the app (the backend owns both).
  cuda_vadd(api& a, int device, device_attributes attrs, mem::kind_options kinds);

  std::vector<kind_support> strategies() const override;
  // Throws skip_point for an unknown or unavailable strategy, a size of 0,
  // sizes the host or the device's free memory cannot hold (with the
  // numbers), and allocations the host or device refuses.
  vadd_times run(const std::string& strategy, std::size_t n) override;

  // Why the strategy cannot run on this device; empty when it can.
  std::string unavailable_reason(const std::string& strategy) const;
  std::string describe(const std::string& strategy) const;

 private:
  api& api_;
  int device_;
  device_attributes attrs_;
  mem::kind_options kinds_;
};

class cuda_backend;

// The vector add on `device` of `b` (which must outlive it); usage_error for
// a device that does not exist.
std::unique_ptr<vadd_app> make_vadd_app(cuda_backend& b, int device);

}  // namespace xfer::cuda
