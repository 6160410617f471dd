// Page-locked staging buffers for a CUDA program, from libxfer alone: a
// caching pool over cudaHostAlloc'd memory, so the program pins once and
// reuses (pinning 256 MiB costs about 100 ms on a PCIe Gen5 GPU machine; a pool hit
// costs well under a microsecond). Exits 77 (CTest's "skipped") where CUDA
// cannot start, saying why.
#include <cstdio>
#include <cstring>
#include <exception>
#include <xfer/mem/caching_pool.hpp>
#include <xfer/mem/cuda/host_kinds.hpp>

int main() {
  std::unique_ptr<xfer::mem::host_resource> pinned;
  try {
    pinned = xfer::cuda::make_cuda_host_kind("pinned");
  } catch (const std::exception& e) {
    std::printf("no CUDA here: %s\n", e.what());
    return 77;
  }
  xfer::mem::caching_pool pool{*pinned};
  constexpr std::size_t frame = std::size_t{64} << 20;
  for (int i = 0; i < 10; ++i) {
    void* p = pool.allocate(frame, 4096);
    std::memset(p, i, frame);  // stands for filling a buffer the GPU then copies at full speed
    pool.deallocate(p, frame, 4096);
  }
  const auto s = pool.stats();
  std::printf("%s: %llu hits, %llu misses, %.1f ms pinning\n", pinned->describe().c_str(),
              static_cast<unsigned long long>(s.hits), static_cast<unsigned long long>(s.misses),
              s.upstream_seconds * 1e3);
  return s.misses == 1 && s.hits == 9 ? 0 : 1;
}
