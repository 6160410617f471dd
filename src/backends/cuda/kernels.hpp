#pragma once
// The device kernels behind a plain C++ interface: the rest of the backend is
// compiled by the host compiler (with fmt), only kernels.cu by nvcc. Streams
// are passed as void* (cudaStream_t and CUstream are the same handle), so the
// runtime and driver backends launch the same kernels. Launch failures throw
// std::runtime_error naming the kernel and the sizes.
#include <cstddef>
#include <cstdint>

namespace xfer::cuda::kernels {

// The gate: one thread spins until *flag reaches `target` (wrapping 32-bit
// generations), or until timeout_ns of device time have passed, in which case
// it writes `target` to *timed_out so the host can tell. flag and timed_out
// must be device views of mapped pinned host memory.
void spin_until(void* stream, const std::uint32_t* flag, std::uint32_t target, std::uint64_t timeout_ns,
                std::uint32_t* timed_out);

// dst[0..n) = src[0..n) by device threads (either side may be device memory or
// a device view of host memory).
void copy(void* stream, void* dst, const void* src, std::size_t n, int multiprocessors);

// XOR of src read as little-endian 64-bit words (a partial last word padded
// with zeros) is XORed into *sink (device memory): a read nobody can elide.
void read_xor(void* stream, const void* src, std::size_t n, std::uint64_t* sink, int multiprocessors);

// Writes xfer's byte pattern (the one fill_pattern writes) for `seed` into dst.
void write_pattern(void* stream, void* dst, std::size_t n, std::uint64_t seed, int multiprocessors);

// Offset of the first byte of src[0..n) that differs from the pattern for
// `seed`, lowered into *first_bad by atomicMin (so the caller presets it to
// all ones: none). Lets large device buffers be checked where they are.
void find_pattern_mismatch(void* stream, const void* src, std::size_t n, std::uint64_t seed,
                           std::uint64_t* first_bad, int multiprocessors);

// c[i] = a[i] + b[i] (uint32, wrapping) for i in [0, n): the vadd
// application's kernel. Any of the three may be device memory or a device
// view of host memory (mapped, managed).
void vadd(void* stream, const std::uint32_t* a, const std::uint32_t* b, std::uint32_t* c, std::size_t n,
          int multiprocessors);

// Loads every kernel now. With lazy loading (CUDA's default), the first launch
// of a kernel may wait for the whole context to go idle: behind a closed gate,
// with the spin kernel running, that is a deadlock. Call once per context.
void preload();

// Whether this binary holds code the current device runs: real code for its
// architecture, or PTX the driver can compile for it. A GPU newer than the
// PTX, or older than the oldest architecture built, has none.
bool image_for_current_device();

// One thread follows `steps` links of a ring of 32-bit element indices,
// one dependent uncached load at a time, starting at state->index; it leaves
// the final index there and adds the indices visited to state->sum.
struct chase_state {
  std::uint64_t index;
  std::uint64_t sum;
};
void chase(void* stream, const std::uint32_t* ring, std::uint64_t steps, chase_state* state);

}  // namespace xfer::cuda::kernels
