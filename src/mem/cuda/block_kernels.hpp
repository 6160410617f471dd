#pragma once
// The block copier's kernel behind a plain C++ interface (only
// block_kernels.cu is compiled by nvcc), as the backend's kernels.hpp.
#include <cstddef>
#include <cstdint>

namespace xfer::cuda::block_kernels {

// Block dst_index[i] of dst <- block src_index[i] of src, block_bytes each,
// for i < count, queued on `stream`; a null index array is the identity.
// dst, src and the index arrays are addresses device code can use (device
// memory or mapped host memory). Throws std::runtime_error naming the
// kernel and the sizes when the launch fails.
void copy_blocks(void* stream, void* dst, const void* src, std::size_t block_bytes, const std::int64_t* src_index,
                 const std::int64_t* dst_index, std::size_t count, int multiprocessors);

}  // namespace xfer::cuda::block_kernels
