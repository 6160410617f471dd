// Device kernels. No fmt here: fmt 9 does not compile under nvcc in C++20.
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "kernels.hpp"

namespace xfer::cuda::kernels {
namespace {

constexpr int threads_per_block = 256;
// Enough resident blocks to keep every SM's memory pipeline full, few enough
// that small transfers are not dominated by launching idle blocks.
constexpr int blocks_per_sm = 8;

__device__ std::uint64_t global_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Must stay equal to word_at() in src/core/pattern.cpp (tests/cuda checks it):
// device-written data is verified with the host's check_pattern.
__device__ std::uint64_t pattern_word(std::uint64_t word_index, std::uint64_t seed) {
  std::uint64_t x = (word_index + 1) * 0x9E3779B97F4A7C15ull ^ (seed * 0xD1B54A32D192ED03ull);
  x ^= x >> 29;
  return x | 0x0101010101010101ull;
}

__device__ bool aligned16(const void* p) { return (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0; }

// This thread's place in a grid-stride loop, and the loop's step.
struct grid_stride {
  std::size_t first, step;
};
__device__ grid_stride this_thread() {
  return {std::size_t(blockIdx.x) * blockDim.x + threadIdx.x, std::size_t(gridDim.x) * blockDim.x};
}

// The byte kernels' wide part: f(i, chunk i) for this thread's share of the
// whole 16-byte chunks of [p, p + n), read and written as one Chunk each.
// Returns where the byte loop takes over: 0 when p is not 16-byte aligned.
template <class Chunk, class Byte, class F>
__device__ std::size_t for_each_chunk(Byte* p, std::size_t n, grid_stride g, F f) {
  if (!aligned16(p)) return 0;
  const std::size_t chunks = n / 16;
  auto* c = reinterpret_cast<Chunk*>(p);
  for (std::size_t i = g.first; i < chunks; i += g.step) f(i, c[i]);
  return chunks * 16;
}

// globaltimer (ns) rather than clock64: it does not depend on the SM clock,
// which changes under boost and power management.
__global__ void spin_kernel(const volatile std::uint32_t* flag, std::uint32_t target, std::uint64_t timeout_ns,
                            volatile std::uint32_t* timed_out) {
  const std::uint64_t t0 = global_ns();
  while (static_cast<std::int32_t>(*flag - target) < 0) {
    if (global_ns() - t0 > timeout_ns) {
      *timed_out = target;
      return;
    }
    // Each poll is a read across the link: don't flood it.
    __nanosleep(200);
  }
}

__global__ void copy_kernel(unsigned char* dst, const unsigned char* src, std::size_t n) {
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  const std::size_t tid = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  std::size_t head = 0;
  if (aligned16(dst) && aligned16(src)) {
    const std::size_t chunks = n / 16;
    auto* d = reinterpret_cast<uint4*>(dst);
    const auto* s = reinterpret_cast<const uint4*>(src);
    for (std::size_t i = tid; i < chunks; i += stride) d[i] = s[i];
    head = chunks * 16;
  }
  for (std::size_t i = head + tid; i < n; i += stride) dst[i] = src[i];
}

__global__ void read_xor_kernel(const unsigned char* src, std::size_t n, unsigned long long* sink) {
  const grid_stride g = this_thread();
  std::uint64_t acc = 0;
  const std::size_t head =
      for_each_chunk<const ulonglong2>(src, n, g, [&](std::size_t, const ulonglong2 v) { acc ^= v.x ^ v.y; });
  // Bytes outside whole 16-byte chunks land in their little-endian word position.
  for (std::size_t i = head + g.first; i < n; i += g.step) acc ^= std::uint64_t(src[i]) << (8 * (i % 8));
  for (int offset = 16; offset > 0; offset /= 2) acc ^= __shfl_xor_sync(0xffffffffu, acc, offset);
  if ((threadIdx.x & 31) == 0 && acc) atomicXor(sink, static_cast<unsigned long long>(acc));
}

__global__ void write_pattern_kernel(unsigned char* dst, std::size_t n, std::uint64_t seed) {
  const grid_stride g = this_thread();
  const std::size_t head = for_each_chunk<ulonglong2>(dst, n, g, [&](std::size_t i, ulonglong2& d) {
    d = make_ulonglong2(pattern_word(2 * i, seed), pattern_word(2 * i + 1, seed));
  });
  for (std::size_t i = head + g.first; i < n; i += g.step)
    dst[i] = static_cast<unsigned char>(pattern_word(i / 8, seed) >> (8 * (i % 8)));
}

__device__ std::uint64_t first_differing_byte(std::uint64_t got, std::uint64_t want) {
  return static_cast<std::uint64_t>(__ffsll(static_cast<long long>(got ^ want)) - 1) / 8;
}

__global__ void find_mismatch_kernel(const unsigned char* src, std::size_t n, std::uint64_t seed,
                                     unsigned long long* first_bad) {
  const grid_stride g = this_thread();
  const std::size_t head = for_each_chunk<const ulonglong2>(src, n, g, [&](std::size_t i, const ulonglong2 v) {
    const std::uint64_t w0 = pattern_word(2 * i, seed), w1 = pattern_word(2 * i + 1, seed);
    if (v.x != w0)
      atomicMin(first_bad, static_cast<unsigned long long>(16 * i + first_differing_byte(v.x, w0)));
    else if (v.y != w1)
      atomicMin(first_bad, static_cast<unsigned long long>(16 * i + 8 + first_differing_byte(v.y, w1)));
  });
  for (std::size_t i = head + g.first; i < n; i += g.step)
    if (src[i] != static_cast<unsigned char>(pattern_word(i / 8, seed) >> (8 * (i % 8))))
      atomicMin(first_bad, static_cast<unsigned long long>(i));
}

// Four elements per thread step where all three are 16-byte aligned: over the
// link (mapped, managed) wide loads matter; the tail (and unaligned views) one
// element at a time.
__global__ void vadd_kernel(const std::uint32_t* a, const std::uint32_t* b, std::uint32_t* c, std::size_t n) {
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  const std::size_t tid = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  std::size_t head = 0;
  if (aligned16(a) && aligned16(b) && aligned16(c)) {
    const std::size_t chunks = n / 4;
    const auto* a4 = reinterpret_cast<const uint4*>(a);
    const auto* b4 = reinterpret_cast<const uint4*>(b);
    auto* c4 = reinterpret_cast<uint4*>(c);
    for (std::size_t i = tid; i < chunks; i += stride) {
      const uint4 x = a4[i], y = b4[i];
      c4[i] = make_uint4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
    }
    head = chunks * 4;
  }
  for (std::size_t i = head + tid; i < n; i += stride) c[i] = a[i] + b[i];
}

// One thread: the point is a single dependent access at a time. __ldcv
// (ld.global.cv) refetches every load, so no cache hides the link.
__global__ void chase_kernel(const unsigned int* ring, std::uint64_t steps, chase_state* state) {
  std::uint64_t index = state->index;
  std::uint64_t sum = state->sum;
  for (std::uint64_t i = 0; i < steps; ++i) {
    index = __ldcv(ring + index);
    sum += index;
  }
  state->index = index;
  state->sum = sum;
}

int blocks_for(std::size_t n, int multiprocessors) {
  const std::size_t work_items = (n + 15) / 16;
  const std::size_t wanted = (work_items + threads_per_block - 1) / threads_per_block;
  const std::size_t cap = std::size_t(multiprocessors > 0 ? multiprocessors : 1) * blocks_per_sm;
  return static_cast<int>(wanted < 1 ? 1 : (wanted < cap ? wanted : cap));
}

void check_launch(const char* kernel, std::size_t n) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    throw std::runtime_error(std::string("launching ") + kernel + " over " + std::to_string(n) +
                             " bytes failed: " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
}

cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }

}  // namespace

void spin_until(void* stream, const std::uint32_t* flag, std::uint32_t target, std::uint64_t timeout_ns,
                std::uint32_t* timed_out) {
  spin_kernel<<<1, 1, 0, as_stream(stream)>>>(flag, target, timeout_ns, timed_out);
  check_launch("the gate's spin kernel", 0);
}

void copy(void* stream, void* dst, const void* src, std::size_t n, int multiprocessors) {
  if (n == 0) return;
  copy_kernel<<<blocks_for(n, multiprocessors), threads_per_block, 0, as_stream(stream)>>>(
      static_cast<unsigned char*>(dst), static_cast<const unsigned char*>(src), n);
  check_launch("the copy kernel", n);
}

void read_xor(void* stream, const void* src, std::size_t n, std::uint64_t* sink, int multiprocessors) {
  if (n == 0) return;
  read_xor_kernel<<<blocks_for(n, multiprocessors), threads_per_block, 0, as_stream(stream)>>>(
      static_cast<const unsigned char*>(src), n, reinterpret_cast<unsigned long long*>(sink));
  check_launch("the read kernel", n);
}

void write_pattern(void* stream, void* dst, std::size_t n, std::uint64_t seed, int multiprocessors) {
  if (n == 0) return;
  write_pattern_kernel<<<blocks_for(n, multiprocessors), threads_per_block, 0, as_stream(stream)>>>(
      static_cast<unsigned char*>(dst), n, seed);
  check_launch("the write kernel", n);
}

void find_pattern_mismatch(void* stream, const void* src, std::size_t n, std::uint64_t seed,
                           std::uint64_t* first_bad, int multiprocessors) {
  if (n == 0) return;
  find_mismatch_kernel<<<blocks_for(n, multiprocessors), threads_per_block, 0, as_stream(stream)>>>(
      static_cast<const unsigned char*>(src), n, seed, reinterpret_cast<unsigned long long*>(first_bad));
  check_launch("the pattern-check kernel", n);
}

void vadd(void* stream, const std::uint32_t* a, const std::uint32_t* b, std::uint32_t* c, std::size_t n,
          int multiprocessors) {
  if (n == 0) return;
  vadd_kernel<<<blocks_for(n * sizeof(std::uint32_t), multiprocessors), threads_per_block, 0, as_stream(stream)>>>(
      a, b, c, n);
  check_launch("the vadd kernel", n * sizeof(std::uint32_t));
}

void preload() {
  cudaFuncAttributes a{};
  const void* all[] = {reinterpret_cast<const void*>(&spin_kernel),
                       reinterpret_cast<const void*>(&copy_kernel),
                       reinterpret_cast<const void*>(&read_xor_kernel),
                       reinterpret_cast<const void*>(&write_pattern_kernel),
                       reinterpret_cast<const void*>(&find_mismatch_kernel),
                       reinterpret_cast<const void*>(&chase_kernel),
                       reinterpret_cast<const void*>(&vadd_kernel)};
  for (const void* f : all) {
    const cudaError_t e = cudaFuncGetAttributes(&a, f);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      throw std::runtime_error(std::string("loading the kernels (cudaFuncGetAttributes) failed: ") +
                               cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
    }
  }
}

bool image_for_current_device() {
  cudaFuncAttributes a{};
  const cudaError_t e = cudaFuncGetAttributes(&a, reinterpret_cast<const void*>(&spin_kernel));
  if (e == cudaSuccess) return true;
  (void)cudaGetLastError();
  if (e == cudaErrorNoKernelImageForDevice || e == cudaErrorInvalidDeviceFunction) return false;
  throw std::runtime_error(std::string("looking for the kernels' code (cudaFuncGetAttributes) failed: ") +
                           cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
}

void chase(void* stream, const std::uint32_t* ring, std::uint64_t steps, chase_state* state) {
  chase_kernel<<<1, 1, 0, as_stream(stream)>>>(ring, steps, state);
  check_launch("the pointer-chase kernel", steps);
}

}  // namespace xfer::cuda::kernels
