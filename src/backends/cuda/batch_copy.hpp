#pragma once
// The driver's own answer to copies from pageable memory (issue 15): a batch
// of copies queued in one call, cudaMemcpyBatchAsync (runtime) or
// cuMemcpyBatchAsync (driver), CUDA 12.8 and later, with the source access
// order "any": the driver may read the source out of stream order, even after
// the call returns, which is what lets it stage a malloc'd buffer its own way.
// Route batch-any-order measures it beside staged and copy-sync.
//
// Beside the api strategy (src/mem/cuda/api.hpp) rather than in it: one route
// uses it, and the two APIs find it apart (the runtime links the call; the
// driver's entry point is looked up by ABI version, as driver_api.cpp does).
// No CUDA header here.
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "cuda/api.hpp"

namespace xfer::cuda {

class batch_copy {
 public:
  virtual ~batch_copy() = default;
  // "cudaMemcpyBatchAsync" or "cuMemcpyBatchAsync", for messages.
  virtual std::string_view call() const noexcept = 0;
  // Queues `count` copies (dsts[i] <- srcs[i], sizes[i] bytes) as one batch
  // on `s` (never the legacy default stream), each with the any-order source
  // hint. The arrays are only read. Throws api_error.
  virtual void copy(void* const* dsts, const void* const* srcs, const std::size_t* sizes, std::size_t count,
                    stream_t s) = 0;
  // The error codes of the call's API that mean "not on this system" (not
  // supported, a driver too old) rather than a failure.
  virtual bool unsupported(int code) const noexcept = 0;
};

// The batch call of `a`'s API (a.name(): "runtime" or "driver"), or nullptr
// with `why` saying what is missing: a build against a CUDA older than 12.8,
// a driver older than 12.8, or a driver without the entry point.
std::unique_ptr<batch_copy> make_batch_copy(api& a, std::string& why);

}  // namespace xfer::cuda
