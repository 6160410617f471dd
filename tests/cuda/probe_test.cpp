// Runs everywhere (not labelled gpu): what the registry gets from the CUDA
// backends must match what the machine has, and without a GPU each entry must
// say why it is unavailable.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include "cuda/cuda_backends.hpp"

namespace {

int runtime_device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

}  // namespace

TEST(CudaProbe, BothApisAreListedInOrder) {
  const auto entries = xfer::cuda::make_cuda_backends({});
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].name, "cuda-rt");
  EXPECT_EQ(entries[1].name, "cuda-drv");
}

TEST(CudaProbe, EachEntryIsUsableOrSaysWhy) {
  const int devices = runtime_device_count();
  for (const auto& e : xfer::cuda::make_cuda_backends({})) {
    if (devices == 0) {
      EXPECT_EQ(e.impl, nullptr) << e.name;
      EXPECT_FALSE(e.reason.empty()) << e.name;
      std::printf("%s unavailable here: %s\n", e.name.c_str(), e.reason.c_str());
    } else {
      ASSERT_NE(e.impl, nullptr) << e.name << ": " << e.reason;
      EXPECT_TRUE(e.reason.empty());
      EXPECT_EQ(e.impl->name(), e.name);
      EXPECT_EQ(static_cast<int>(e.impl->devices().size()), devices);
    }
  }
}
