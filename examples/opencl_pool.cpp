// OpenCL host memory for a program, from libxfer alone: a caching pool over
// CL_MEM_ALLOC_HOST_PTR buffers (page-locked on NVIDIA's and AMD's GPUs),
// serving a std::pmr container. Exits 77 (CTest's "skipped") where no OpenCL
// platform is installed, saying why.
#include <cstdio>
#include <exception>
#include <memory_resource>
#include <numeric>
#include <vector>
#include <xfer/mem/caching_pool.hpp>
#include <xfer/mem/opencl/host_kinds.hpp>

int main() {
  std::unique_ptr<xfer::mem::host_resource> host;
  try {
    host = xfer::opencl::make_opencl_host_kind("alloc-host-ptr");  // the first platform, its first device
  } catch (const std::exception& e) {
    std::printf("no OpenCL here: %s\n", e.what());
    return 77;
  }
  xfer::mem::caching_pool pool{*host};
  long long sum = 0;
  for (int frame = 0; frame < 10; ++frame) {
    std::pmr::vector<int> v(1 << 20, &pool);
    std::iota(v.begin(), v.end(), frame);
    sum += v.back();
  }
  const auto s = pool.stats();
  std::printf("%s: %llu hits, %llu misses\n", host->describe().c_str(), static_cast<unsigned long long>(s.hits),
              static_cast<unsigned long long>(s.misses));
  const long long expected = 10LL * ((1 << 20) - 1) + 45;
  return s.misses == 1 && sum == expected ? 0 : 1;
}
