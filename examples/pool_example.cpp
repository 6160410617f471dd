// Using libxfer's allocators from an application: a caching pool over
// page-aligned memory (and, with CUDA, page-locked through the registering
// adaptor), serving std::pmr containers. Built and run by the tests.
#include <cstdio>
#include <memory_resource>
#include <vector>
#include <xfer/config.hpp>
#include <xfer/mem/caching_pool.hpp>
#include <xfer/mem/host_resources.hpp>
#if XFER_HAVE_CUDA
#include <xfer/mem/cuda/registering_resource.hpp>
#endif

int main() {
  xfer::mem::aligned_resource pages{4096};  // page-aligned: no staging copy for DMA engines that need it
  xfer::mem::caching_pool pool{pages};       // reuse blocks instead of allocating again

  for (int frame = 0; frame < 100; ++frame) {
    std::pmr::vector<float> staging(1 << 20, 1.0f, &pool);  // 4 MiB a frame, one upstream allocation in all
    staging[0] = static_cast<float>(frame);
  }
  const auto s = pool.stats();
  std::printf("pool: %llu hits, %llu misses, %.0f us in the upstream allocator\n",
              static_cast<unsigned long long>(s.hits), static_cast<unsigned long long>(s.misses),
              s.upstream_seconds * 1e6);

#if XFER_HAVE_CUDA
  // With a GPU: the same pool over page-locked memory. Without one,
  // registration fails and says why.
  xfer::cuda::registering_resource pinned{pages};
  xfer::mem::caching_pool pinned_pool{pinned};
  try {
    void* p = pinned_pool.allocate(256 << 20, 4096);
    pinned_pool.deallocate(p, 256 << 20, 4096);
    std::printf("pinned pool: %s\n", pinned_pool.describe().c_str());
  } catch (const std::bad_alloc& e) {
    std::printf("no pinned memory here: %s\n", e.what());
  }
#endif
  return s.misses == 1 ? 0 : 1;
}
