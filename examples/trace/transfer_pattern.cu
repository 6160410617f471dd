// A CUDA program whose transfers are known exactly, for checking `xferbench trace`
// (docs/trace.md): run it under the tracer and compare the trace's groups with the
// line it prints.
//
//   xferbench trace -- xfer_example_trace_pattern            # pageable host buffers
//   xferbench trace -- xfer_example_trace_pattern --fixed    # the same copies, pinned
//
// The copies, and no others (no cudaMemset, no other cudaMemcpy*):
//   64   x cudaMemcpy host-to-device of 16 MiB, a small kernel after each;
//   1024 x cudaMemcpy device-to-host of 64 KiB;
// from/to malloc'd (pageable) buffers, or with --fixed cudaMallocHost'd (pinned) ones.
//
// The kernel folds each 16 MiB upload into an accumulator (acc = 3 * acc + src, so
// the order of the uploads counts too); the downloads read the accumulator back a
// 64 KiB slice at a time, and the host checks every word and a checksum over all of
// them: exit 1 on any mismatch. Each copy is timed alone with std::chrono (the device
// is idle when it starts: the kernel is waited for outside the timed region), and
// their sum is printed as transfer_s.
//
// stdout carries exactly one line, at the end, in JSON:
//   {"program": "transfer_pattern", "variant": "pageable"|"pinned",
//    "expected": [{"direction": "h2d", "host_memory": ..., "bytes": 16777216, "count": 64, "call": "cudaMemcpy"},
//                 {"direction": "d2h", "host_memory": ..., "bytes": 65536, "count": 1024, "call": "cudaMemcpy"}],
//    "transfer_s": ...}
// Everything else goes to stderr. Exit 77 (CTest's "skipped") where no CUDA device
// can be used, 2 on a bad argument.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

namespace {

constexpr std::size_t kUpBytes = std::size_t{16} << 20;  // each host-to-device copy
constexpr int kUpCount = 64;
constexpr std::size_t kDownBytes = std::size_t{64} << 10;  // each device-to-host copy
constexpr int kDownCount = 1024;
constexpr std::size_t kUpWords = kUpBytes / sizeof(std::uint32_t);
constexpr std::size_t kDownWords = kDownBytes / sizeof(std::uint32_t);
constexpr std::size_t kSlices = kUpBytes / kDownBytes;  // 256 slices of the accumulator

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "transfer_pattern: %s failed: %s (%s)\n", what, cudaGetErrorString(e),
                 cudaGetErrorName(e));
    std::exit(1);
  }
}

// Word k of upload i: a cheap hash, different for every (i, k).
std::uint32_t pattern(int i, std::size_t k) {
  std::uint32_t x = static_cast<std::uint32_t>(k) ^ (static_cast<std::uint32_t>(i + 1) * 0x9E3779B9u);
  x *= 0x85EBCA6Bu;
  x ^= x >> 13;
  x *= 0xC2B2AE35u;
  x ^= x >> 16;
  return x;
}

std::uint64_t fold(std::uint64_t sum, std::uint32_t word) { return (sum ^ word) * 0x100000001B3ull; }

__global__ void zero(std::uint32_t* acc, std::size_t n) {
  for (std::size_t k = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; k < n;
       k += std::size_t{gridDim.x} * blockDim.x)
    acc[k] = 0;
}

__global__ void accumulate(std::uint32_t* acc, const std::uint32_t* src, std::size_t n) {
  for (std::size_t k = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; k < n;
       k += std::size_t{gridDim.x} * blockDim.x)
    acc[k] = 3u * acc[k] + src[k];
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  bool fixed = false;
  for (int a = 1; a < argc; ++a) {
    if (std::strcmp(argv[a], "--fixed") == 0) {
      fixed = true;
    } else {
      std::fprintf(stderr, "usage: %s [--fixed]\n  --fixed  the same copies from/to pinned (cudaMallocHost) buffers\n",
                   argv[0]);
      return std::strcmp(argv[a], "--help") == 0 || std::strcmp(argv[a], "-h") == 0 ? 0 : 2;
    }
  }

  int devices = 0;
  const cudaError_t probe = cudaGetDeviceCount(&devices);
  if (probe != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "skipped: no usable CUDA device (%s)\n",
                 probe != cudaSuccess ? cudaGetErrorString(probe) : "none found");
    return 77;
  }
  check(cudaFree(nullptr), "creating the CUDA context");  // not inside the first timed copy

  // Host buffers: the upload source and the download destination.
  std::uint32_t* up = nullptr;
  std::uint32_t* down = nullptr;
  if (fixed) {
    check(cudaMallocHost(&up, kUpBytes), "cudaMallocHost (16 MiB)");
    check(cudaMallocHost(&down, kDownBytes), "cudaMallocHost (64 KiB)");
  } else {
    up = static_cast<std::uint32_t*>(std::malloc(kUpBytes));
    down = static_cast<std::uint32_t*>(std::malloc(kDownBytes));
    if (!up || !down) {
      std::fprintf(stderr, "transfer_pattern: malloc of the host buffers failed\n");
      return 1;
    }
  }
  // What the accumulator must hold, computed on the host alongside.
  auto* expect = static_cast<std::uint32_t*>(std::calloc(kUpWords, sizeof(std::uint32_t)));
  if (!expect) {
    std::fprintf(stderr, "transfer_pattern: malloc of the expected values failed\n");
    return 1;
  }

  std::uint32_t* d_src = nullptr;
  std::uint32_t* d_acc = nullptr;
  check(cudaMalloc(&d_src, kUpBytes), "cudaMalloc (16 MiB)");
  check(cudaMalloc(&d_acc, kUpBytes), "cudaMalloc (16 MiB)");
  constexpr unsigned kBlocks = 1024, kThreads = 256;
  zero<<<kBlocks, kThreads>>>(d_acc, kUpWords);  // a kernel, not a cudaMemset: the pattern stays exact
  check(cudaGetLastError(), "launching zero");
  check(cudaDeviceSynchronize(), "zero");

  double transfer_s = 0.0;

  // 64 uploads of 16 MiB, a kernel after each.
  for (int i = 0; i < kUpCount; ++i) {
    for (std::size_t k = 0; k < kUpWords; ++k) {
      up[k] = pattern(i, k);
      expect[k] = 3u * expect[k] + up[k];
    }
    const auto t0 = std::chrono::steady_clock::now();
    check(cudaMemcpy(d_src, up, kUpBytes, cudaMemcpyHostToDevice), "cudaMemcpy host-to-device");
    transfer_s += seconds_since(t0);
    accumulate<<<kBlocks, kThreads>>>(d_acc, d_src, kUpWords);
    check(cudaGetLastError(), "launching accumulate");
    // Outside the timed region: the next copy would otherwise wait for this kernel
    // (a copy on the default stream starts after it) and time it too.
    check(cudaDeviceSynchronize(), "accumulate");
  }

  // 1024 downloads of 64 KiB: the accumulator's 256 slices, four times over.
  std::uint64_t got_sum = 0xCBF29CE484222325ull, want_sum = got_sum;
  std::size_t bad_words = 0;
  long first_bad_copy = -1;
  for (int j = 0; j < kDownCount; ++j) {
    const std::size_t slice = static_cast<std::size_t>(j) % kSlices;
    std::memset(down, 0xA5, kDownBytes);  // poison: a copy that did not happen shows
    const auto t0 = std::chrono::steady_clock::now();
    check(cudaMemcpy(down, d_acc + slice * kDownWords, kDownBytes, cudaMemcpyDeviceToHost),
          "cudaMemcpy device-to-host");
    transfer_s += seconds_since(t0);
    const std::uint32_t* want = expect + slice * kDownWords;
    for (std::size_t k = 0; k < kDownWords; ++k) {
      got_sum = fold(got_sum, down[k]);
      want_sum = fold(want_sum, want[k]);
      if (down[k] != want[k]) {
        ++bad_words;
        if (first_bad_copy < 0) first_bad_copy = j;
      }
    }
  }

  check(cudaFree(d_src), "cudaFree");
  check(cudaFree(d_acc), "cudaFree");
  if (fixed) {
    check(cudaFreeHost(up), "cudaFreeHost");
    check(cudaFreeHost(down), "cudaFreeHost");
  } else {
    std::free(up);
    std::free(down);
  }
  std::free(expect);

  if (got_sum != want_sum || bad_words != 0) {
    std::fprintf(stderr,
                 "transfer_pattern: data check failed: checksum %016llx, expected %016llx; %zu words wrong, "
                 "the first in download %ld\n",
                 static_cast<unsigned long long>(got_sum), static_cast<unsigned long long>(want_sum), bad_words,
                 first_bad_copy);
    return 1;
  }

  const char* host = fixed ? "pinned" : "pageable";
  std::fprintf(stderr, "transfer_pattern: %d uploads of 16 MiB and %d downloads of 64 KiB (%s), data checked, %.3f s in copies\n",
               kUpCount, kDownCount, host, transfer_s);
  std::printf("{\"program\": \"transfer_pattern\", \"variant\": \"%s\", \"expected\": ["
              "{\"direction\": \"h2d\", \"host_memory\": \"%s\", \"bytes\": %zu, \"count\": %d, \"call\": \"cudaMemcpy\"}, "
              "{\"direction\": \"d2h\", \"host_memory\": \"%s\", \"bytes\": %zu, \"count\": %d, \"call\": \"cudaMemcpy\"}], "
              "\"transfer_s\": %.9f}\n",
              host, host, kUpBytes, kUpCount, host, kDownBytes, kDownCount, transfer_s);
  return 0;
}
