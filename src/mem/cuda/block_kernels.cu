// The block copier's gather/scatter kernel. No fmt here: fmt 9 does not
// compile under nvcc in C++20 (as in src/backends/cuda/kernels.cu).
#include <cuda_runtime.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "block_kernels.hpp"

namespace xfer::cuda::block_kernels {
namespace {

constexpr int threads_per_block = 256;
// A block of the list is cut into pieces of at most this size, one piece per
// thread block at a time: a few 2 MiB blocks still spread over every SM,
// and 4096 blocks of 16 KiB make 4096 items.
constexpr std::size_t max_piece_bytes = std::size_t{64} << 10;

// Item = (pair, piece): each thread block takes items in a grid-stride loop
// and its threads copy the piece, 16 bytes at a time where everything is
// 16-byte aligned (wide), else byte by byte.
__global__ void copy_blocks_kernel(unsigned char* dst, const unsigned char* src, std::size_t block_bytes,
                                   std::size_t piece_bytes, std::size_t pieces, const std::int64_t* src_index,
                                   const std::int64_t* dst_index, std::size_t items, bool wide) {
  for (std::size_t item = blockIdx.x; item < items; item += gridDim.x) {
    const std::size_t pair = item / pieces, piece = item % pieces;
    const std::size_t from = src_index ? std::size_t(src_index[pair]) : pair;
    const std::size_t to = dst_index ? std::size_t(dst_index[pair]) : pair;
    const std::size_t begin = piece * piece_bytes;
    const std::size_t n = min(piece_bytes, block_bytes - begin);
    const unsigned char* s = src + from * block_bytes + begin;
    unsigned char* d = dst + to * block_bytes + begin;
    if (wide) {
      const uint4* s4 = reinterpret_cast<const uint4*>(s);
      uint4* d4 = reinterpret_cast<uint4*>(d);
      for (std::size_t i = threadIdx.x; i < n / 16; i += blockDim.x) d4[i] = s4[i];
    } else {
      for (std::size_t i = threadIdx.x; i < n; i += blockDim.x) d[i] = s[i];
    }
  }
}

bool aligned16(const void* p) { return (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0; }

}  // namespace

void copy_blocks(void* stream, void* dst, const void* src, std::size_t block_bytes, const std::int64_t* src_index,
                 const std::int64_t* dst_index, std::size_t count, int multiprocessors) {
  if (count == 0 || block_bytes == 0) return;
  const bool wide = aligned16(dst) && aligned16(src) && block_bytes % 16 == 0;
  std::size_t piece = std::min(block_bytes, max_piece_bytes);
  if (wide) piece = (piece + 15) / 16 * 16;
  const std::size_t pieces = (block_bytes + piece - 1) / piece;
  const std::size_t items = count * pieces;
  const std::size_t most = std::size_t(std::max(multiprocessors, 1)) * 16;
  const unsigned grid = unsigned(std::min(items, most));
  copy_blocks_kernel<<<grid, threads_per_block, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<unsigned char*>(dst), static_cast<const unsigned char*>(src), block_bytes, piece, pieces, src_index,
      dst_index, items, wide);
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess)
    throw std::runtime_error("copy_blocks kernel launch (" + std::to_string(count) + " blocks of " +
                             std::to_string(block_bytes) + " bytes): " + cudaGetErrorName(e) + ": " +
                             cudaGetErrorString(e));
}

}  // namespace xfer::cuda::block_kernels
