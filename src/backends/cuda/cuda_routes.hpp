#pragma once
// The routes only the CUDA backends have, declared to core by name and
// family; the shared ones (copy_sync, copy_async, staged, kernel_host,
// kernel_device, peer) are core's. A new route: declare it here, describe it
// in cuda_backend::routes() and build it in cuda_backend::prepare; core needs
// no edit.
#include <xfer/core/backend.hpp>

namespace xfer::cuda::own_routes {

// CUDA 12.8's cudaMemcpyBatchAsync, chunks of a pageable buffer, any-order source hint
inline const route_kind batch_any_order = route_kind::declare("batch-any-order", route_family::copy,
                                                                    route_role::driver_batch);
// A kernel reads device memory (XOR reduction)
inline const route_kind kernel_device_read = route_kind::declare("kernel-device-read", route_family::kernel_device);
// A kernel writes device memory
inline const route_kind kernel_device_write = route_kind::declare("kernel-device-write", route_family::kernel_device);
// One device thread chases a ring of indices in host memory
inline const route_kind latency = route_kind::declare("latency", route_family::latency);

}  // namespace xfer::cuda::own_routes
