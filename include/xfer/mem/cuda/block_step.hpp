#pragma once
// The block copier's step for CUDA (xfer/mem/blocks/block_copier.hpp), over
// the runtime API: a queue is the caller's stream (or the step's own), the
// batch way is cudaMemcpyBatchAsync, the kernel and pack ways use a
// gather/scatter kernel of libxfer's (src/mem/cuda/block_kernels.cu).
//
//   auto step = xfer::cuda::make_block_step(0);
//   xfer::mem::block_copier copier(*step);
//
// No CUDA header here, like the rest of libxfer's public interface.
#include <memory>
#include <xfer/mem/blocks/block_step.hpp>

namespace xfer::cuda {

// Throws std::runtime_error saying why when CUDA cannot start (no driver,
// no device) or there is no such device.
std::unique_ptr<mem::block_step> make_block_step(int device = 0);

}  // namespace xfer::cuda
