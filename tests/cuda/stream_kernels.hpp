#pragma once
// Kernels for the staged copier's stream tests, launched on a stream given
// as a handle (a cudaStream_t). Each returns the launch's cudaError_t (0: queued).
#include <cstddef>

namespace xfer::test {

// out[i] = in[i] + 1 for n bytes.
int launch_add_one(const void* in, void* out, std::size_t n, void* stream);
// One thread spinning for about `cycles` GPU clock ticks.
int launch_spin(long long cycles, void* stream);

}  // namespace xfer::test
