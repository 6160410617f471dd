// The GPU workloads of `xferbench beside` (cuda_sides.hpp): kernels on a
// stream of their own, a step one launch waited for.
#include <algorithm>
#include <cuda_runtime.h>
#include <string>
#include <stdexcept>

#include "gpu_workloads.hpp"

namespace xfer::beside {

namespace {

// Each thread: this many multiply-adds in each of 8 independent chains a
// launch (well under a millisecond with every multiprocessor busy: short
// steps, so a round holds many).
constexpr int compute_iterations = 4096;
constexpr int block_threads = 256;

__global__ void fma_chains(float* sink, int iterations) {
  float a[8];
  for (int k = 0; k < 8; ++k) a[k] = 1.0f + 1e-6f * static_cast<float>(threadIdx.x + k);
  for (int i = 0; i < iterations; ++i)
#pragma unroll
    for (int k = 0; k < 8; ++k) a[k] = fmaf(a[k], 0.999999f, 1e-7f);
  float s = 0;
  for (int k = 0; k < 8; ++k) s += a[k];
  if (s == 12345.0f) sink[blockIdx.x] = s;  // never true: keeps the chains
}

__global__ void stream_copy(const float4* __restrict__ in, float4* __restrict__ out, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n; i += std::size_t{gridDim.x} * blockDim.x)
    out[i] = in[i];
}

void check(cudaError_t e, const char* what) {
  // Plain strings: nvcc's front end rejects fmt's compile-time format checks.
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

class gpu_side : public activity {
 public:
  explicit gpu_side(int device) : device_(device) {
    check(cudaSetDevice(device_), "cudaSetDevice");
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    check(cudaDeviceGetAttribute(&sms_, cudaDevAttrMultiProcessorCount, device_), "cudaDeviceGetAttribute");
  }
  ~gpu_side() override { cudaStreamDestroy(stream_); }

 protected:
  void finish(const char* kernel) {
    check(cudaGetLastError(), kernel);
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  }
  int device_;
  cudaStream_t stream_ = nullptr;
  int sms_ = 0;
};

class gpu_compute final : public gpu_side {
 public:
  explicit gpu_compute(int device) : gpu_side(device) { check(cudaMalloc(&sink_, 4096 * sizeof(float)), "cudaMalloc"); }
  ~gpu_compute() override { cudaFree(sink_); }
  std::string name() const override { return "gpu-compute"; }
  double amount_per_step() const override {  // FLOP: 2 a multiply-add
    return 2.0 * 8 * compute_iterations * blocks() * block_threads;
  }
  void step() override {
    check(cudaSetDevice(device_), "cudaSetDevice");
    fma_chains<<<blocks(), block_threads, 0, stream_>>>(sink_, compute_iterations);
    finish("fma_chains");
  }

 private:
  int blocks() const { return 4 * sms_; }  // every multiprocessor, several blocks each
  float* sink_ = nullptr;
};

class gpu_memory final : public gpu_side {
 public:
  gpu_memory(int device, std::size_t bytes) : gpu_side(device), n_(std::max<std::size_t>(bytes / sizeof(float4), 1)) {
    check(cudaMalloc(&in_, n_ * sizeof(float4)), "cudaMalloc");
    check(cudaMalloc(&out_, n_ * sizeof(float4)), "cudaMalloc");
    check(cudaMemsetAsync(in_, 0, n_ * sizeof(float4), stream_), "cudaMemsetAsync");
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  }
  ~gpu_memory() override {
    cudaFree(in_);
    cudaFree(out_);
  }
  std::string name() const override { return "gpu-memory"; }
  double amount_per_step() const override { return 2.0 * static_cast<double>(n_ * sizeof(float4)); }  // read + written
  void step() override {
    check(cudaSetDevice(device_), "cudaSetDevice");
    stream_copy<<<8 * sms_, block_threads, 0, stream_>>>(in_, out_, n_);
    finish("stream_copy");
  }

 private:
  std::size_t n_;
  float4* in_ = nullptr;
  float4* out_ = nullptr;
};

}  // namespace

std::unique_ptr<activity> make_gpu_workload(const std::string& name, int device, std::size_t bytes) {
  if (name == "gpu-compute") return std::make_unique<gpu_compute>(device);
  if (name == "gpu-memory") return std::make_unique<gpu_memory>(device, bytes);
  throw std::invalid_argument("workload '" + name + "': not a GPU workload");
}

}  // namespace xfer::beside
