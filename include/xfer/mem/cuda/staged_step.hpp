#pragma once
// The staged copier's device step for CUDA (xfer/mem/staged/staged_copier.hpp):
// each of the copier's threads gets a stream of its own and an event per
// staging slot; staging buffers are page-locked with cudaHostAlloc (or
// cuMemHostAlloc). Device memory is a device pointer (device_ref::handle),
// from cudaMalloc, cuMemAlloc or the step's allocate().
//
//   auto step = xfer::cuda::make_staged_step(0);
//   xfer::mem::staged_copier copier(*step);
//   copier.copy_to_device({d_ptr, d_bytes}, 0, host_vector.data(), n);
//
// No CUDA header here, like the rest of libxfer's public interface.
#include <memory>
#include <xfer/mem/cuda/host_kinds.hpp>
#include <xfer/mem/staged/device_step.hpp>

namespace xfer::cuda {

// A step on device `device` that calls the runtime API or the driver API
// (the primary context, which the runtime shares). Throws std::runtime_error
// saying why when CUDA cannot start (no driver, no device) or there is no
// such device.
std::unique_ptr<mem::device_step> make_staged_step(int device = 0, allocating_api api = allocating_api::runtime);

}  // namespace xfer::cuda
