// cudaMemcpyBatchAsync and cuMemcpyBatchAsync behind batch_copy.hpp. Their
// signatures changed in CUDA 13.0: 12.8 and 12.9 take a `size_t* failIdx`
// (the index of the copy that failed) before the stream, 13.0 dropped it
// (cuda_runtime_api.h and cudaTypedefs.h of 13.0: PFN_cuMemcpyBatchAsync_v12080
// has it, _v13000 has not). The runtime form follows the headers it is built
// with; the driver's entry point is asked for by ABI version, the newest this
// build knows first.
#include "batch_copy.hpp"

#include <cstdint>
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <vector>

namespace xfer::cuda {
namespace {

// 12080 -> "12.8"
std::string version_text(int v) { return fmt::format("{}.{}", v / 1000, (v % 1000) / 10); }

constexpr int batch_min_version = 12080;

#if CUDART_VERSION >= 12080

class runtime_batch final : public batch_copy {
 public:
  std::string_view call() const noexcept override { return "cudaMemcpyBatchAsync"; }

  void copy(void* const* dsts, const void* const* srcs, const std::size_t* sizes, std::size_t count,
            stream_t s) override {
    // One attribute for every copy (attrsIdxs {0}): the source any order.
    cudaMemcpyAttributes attr{};
    attr.srcAccessOrder = cudaMemcpySrcAccessOrderAny;
    std::size_t first = 0;
#if CUDART_VERSION >= 13000
    const cudaError_t e =
        cudaMemcpyBatchAsync(dsts, srcs, sizes, count, &attr, &first, 1, static_cast<cudaStream_t>(s));
#else
    // 12.8/12.9 take the arrays non-const (they only read them).
    std::size_t failed = 0;
    const cudaError_t e = cudaMemcpyBatchAsync(const_cast<void**>(dsts), const_cast<void**>(srcs),
                                               const_cast<std::size_t*>(sizes), count, &attr, &first, 1, &failed,
                                               static_cast<cudaStream_t>(s));
#endif
    if (e != cudaSuccess) {
      (void)cudaGetLastError();  // not sticky: clear it for the next call
      throw api_error("cudaMemcpyBatchAsync", int(e), fmt::format("{}: {}", cudaGetErrorName(e), cudaGetErrorString(e)),
                      fmt::format("{} copies", count));
    }
  }

  bool unsupported(int code) const noexcept override {
    return code == cudaErrorNotSupported || code == cudaErrorCallRequiresNewerDriver;
  }
};

#endif

#if CUDA_VERSION >= 12080

class driver_batch final : public batch_copy {
 public:
  std::string_view call() const noexcept override { return "cuMemcpyBatchAsync"; }

  // Looks the entry points up; false (with why) where the driver lacks them.
  bool load(std::string& why) {
    cudaDriverEntryPointQueryResult found{};
#if CUDA_VERSION >= 13000
    if (cudaGetDriverEntryPointByVersion("cuMemcpyBatchAsync", reinterpret_cast<void**>(&batch13_), 13000,
                                         cudaEnableDefault, &found) != cudaSuccess ||
        found != cudaDriverEntryPointSuccess)
      batch13_ = nullptr;
    (void)cudaGetLastError();
#endif
    if (cudaGetDriverEntryPointByVersion("cuMemcpyBatchAsync", reinterpret_cast<void**>(&batch12_), 12080,
                                         cudaEnableDefault, &found) != cudaSuccess ||
        found != cudaDriverEntryPointSuccess)
      batch12_ = nullptr;
    (void)cudaGetLastError();
    if (cudaGetDriverEntryPointByVersion("cuGetErrorName", reinterpret_cast<void**>(&error_name_), 6000,
                                         cudaEnableDefault, &found) != cudaSuccess ||
        found != cudaDriverEntryPointSuccess)
      error_name_ = nullptr;
    (void)cudaGetLastError();
    if (batch13_ || batch12_) return true;
    why = "the driver has no cuMemcpyBatchAsync entry point (CUDA 12.8 or later)";
    return false;
  }

  void copy(void* const* dsts, const void* const* srcs, const std::size_t* sizes, std::size_t count,
            stream_t s) override {
    // The driver takes every operand as a CUdeviceptr (a host pointer is one
    // under unified addressing), in non-const arrays it only reads.
    dsts_.resize(count);
    srcs_.resize(count);
    sizes_.assign(sizes, sizes + count);
    for (std::size_t i = 0; i < count; ++i) {
      dsts_[i] = static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(dsts[i]));
      srcs_[i] = static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(srcs[i]));
    }
    CUmemcpyAttributes attr{};
    attr.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_ANY;
    std::size_t first = 0;
    CUresult r = CUDA_SUCCESS;
    if (batch13_) {
#if CUDA_VERSION >= 13000
      r = batch13_(dsts_.data(), srcs_.data(), sizes_.data(), count, &attr, &first, 1, static_cast<CUstream>(s));
#endif
    } else {
      std::size_t failed = 0;
      r = batch12_(dsts_.data(), srcs_.data(), sizes_.data(), count, &attr, &first, 1, &failed,
                   static_cast<CUstream>(s));
    }
    if (r != CUDA_SUCCESS) {
      const char* name = nullptr;
      if (error_name_) error_name_(r, &name);
      throw api_error("cuMemcpyBatchAsync", int(r), name ? name : fmt::format("CUresult {}", int(r)),
                      fmt::format("{} copies", count));
    }
  }

  bool unsupported(int code) const noexcept override { return code == CUDA_ERROR_NOT_SUPPORTED; }

 private:
#if CUDA_VERSION >= 13000
  PFN_cuMemcpyBatchAsync_v13000 batch13_ = nullptr;
#else
  void* batch13_ = nullptr;
#endif
  PFN_cuMemcpyBatchAsync_v12080 batch12_ = nullptr;
  PFN_cuGetErrorName_v6000 error_name_ = nullptr;
  std::vector<CUdeviceptr> dsts_, srcs_;
  std::vector<std::size_t> sizes_;
};

#endif

}  // namespace

std::unique_ptr<batch_copy> make_batch_copy(api& a, std::string& why) {
  const bool runtime = a.name() == "runtime";
  const char* call = runtime ? "cudaMemcpyBatchAsync" : "cuMemcpyBatchAsync";
  const int built = runtime ? CUDART_VERSION : CUDA_VERSION;
  if (built < batch_min_version) {
    why = fmt::format("{} needs CUDA 12.8 or later; this build's CUDA headers are {}", call, version_text(built));
    return nullptr;
  }
  const int driver = a.driver_version();
  if (driver < batch_min_version) {
    why = fmt::format("{} needs a CUDA 12.8 driver or later; this driver is CUDA {}", call, version_text(driver));
    return nullptr;
  }
#if CUDART_VERSION >= 12080
  if (runtime) return std::make_unique<runtime_batch>();
#endif
#if CUDA_VERSION >= 12080
  if (!runtime) {
    auto d = std::make_unique<driver_batch>();
    if (d->load(why)) return d;
  }
#endif
  return nullptr;
}

}  // namespace xfer::cuda
