// Kernels for the staged copier's stream tests (staged_stream_test.cpp):
// launched on the caller's stream between staged copies, plain C++ entry
// points so the test itself stays a .cpp file.
#include <cuda_runtime.h>

#include <cstddef>

#include "stream_kernels.hpp"

namespace xfer::test {
namespace {

__global__ void add_one_kernel(const unsigned char* in, unsigned char* out, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x)
    out[i] = static_cast<unsigned char>(in[i] + 1);
}

// Keeps the stream busy for about `cycles` clock ticks: the copy queued
// after it must wait for it.
__global__ void spin_kernel(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

}  // namespace

int launch_add_one(const void* in, void* out, std::size_t n, void* stream) {
  add_one_kernel<<<256, 256, 0, static_cast<cudaStream_t>(stream)>>>(static_cast<const unsigned char*>(in),
                                                                    static_cast<unsigned char*>(out), n);
  return static_cast<int>(cudaGetLastError());
}

int launch_spin(long long cycles, void* stream) {
  spin_kernel<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(cycles);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace xfer::test
