// Pageable memory at pinned speed: a std::vector copied to device memory and
// back through libxfer's staged copier. Uses the CUDA step where this xfer
// has CUDA and a GPU is present, else the host step (whose "device" memory is
// host memory), so it runs everywhere. Built and run by the tests.
#include <cstdio>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>
#include <xfer/config.hpp>
#include <xfer/mem/staged/host_step.hpp>
#include <xfer/mem/staged/staged_copier.hpp>
#if XFER_HAVE_CUDA && defined(XFER_EXAMPLE_CUDA)
#include <xfer/mem/cuda/staged_step.hpp>
#endif

int main() {
  std::unique_ptr<xfer::mem::device_step> step;
#if XFER_HAVE_CUDA && defined(XFER_EXAMPLE_CUDA)
  try {
    step = xfer::cuda::make_staged_step(0);
  } catch (const std::exception& e) {
    std::printf("CUDA: %s; using the host step\n", e.what());
  }
#endif
  if (!step) step = std::make_unique<xfer::mem::host_step>();

  std::vector<int> data(24 << 20), back(data.size());  // 96 MiB of ordinary, pageable memory
  std::iota(data.begin(), data.end(), 0);
  const std::size_t bytes = data.size() * sizeof(int);

  xfer::mem::staged_copier copier(*step);  // the tuning cached for this machine and device
  const xfer::mem::device_ref dev = step->allocate(bytes);
  try {
    copier.copy_to_device(dev, 0, data.data(), bytes);
    auto done = copier.copy_to_host_async(back.data(), dev, 0, bytes);
    // ... other work; back and the device buffer stay untouched until:
    done.wait();
  } catch (const xfer::mem::staged_error& e) {
    step->deallocate(dev);
    std::printf("%s\n", e.what());
    return 1;
  }
  step->deallocate(dev);
  const auto s = copier.staging_stats();
  std::printf("%s: %zu bytes there and back %s; staging: %zu bytes held, %llu misses, %llu hits\n",
              std::string(step->name()).c_str(), bytes, back == data ? "intact" : "CORRUPTED", s.reserved_bytes,
              static_cast<unsigned long long>(s.misses), static_cast<unsigned long long>(s.hits));
  return back == data ? 0 : 1;
}
