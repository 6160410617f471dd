// The registering adaptor through the real CUDA runtime (GPU): blocks come
// back page-locked (CUDA refuses to register them again), an async copy from
// one completes, and over an upstream whose blocks share pages the refusal
// arrives as an allocation_error with nothing leaked.
#include <cuda_runtime_api.h>
#include <cstring>
#include <xfer/mem/cuda/registering_resource.hpp>
#include <xfer/mem/error.hpp>
#include <xfer/mem/host_resources.hpp>

#include "gpu.hpp"

using namespace xfer;
using namespace xfer::cuda;

TEST(CudaRegistering, BlocksArePageLockedUntilDeallocated) {
  XFER_REQUIRE_GPU();
  api& a = test::gpu().backend("cuda-rt")->cuda_api();
  a.make_current(0);
  mem::aligned_resource upstream(4096);
  registering_resource r(upstream);
  EXPECT_TRUE(r.props().pinned);
  constexpr std::size_t bytes = (std::size_t{1} << 20) + 100;
  void* p = r.allocate(bytes, 64);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 4096, 0u);
  // Registered already: a second registration of the same pages is refused.
  EXPECT_EQ(cudaHostRegister(p, 4096, cudaHostRegisterDefault), cudaErrorHostMemoryAlreadyRegistered);
  (void)cudaGetLastError();
  std::memset(p, 0x5A, bytes);
  {
    stream s(a);
    device_buffer d(a, bytes);
    a.copy_async(d.data(), p, bytes, copy_kind::h2d, s.get());
    a.synchronize_stream(s.get());
    std::vector<unsigned char> back(bytes);
    a.copy(back.data(), d.data(), bytes, copy_kind::d2h);
    EXPECT_EQ(back.front(), 0x5A);
    EXPECT_EQ(back.back(), 0x5A);
  }
  r.deallocate(p, bytes, 64);
}

TEST(CudaRegistering, ARefusedRegistrationThrowsWithTheCudaError) {
  XFER_REQUIRE_GPU();
  test::gpu().backend("cuda-rt")->cuda_api().make_current(0);
  mem::aligned_resource upstream(4096);
  registering_resource r(upstream);
  void* p = r.allocate(8192, 4096);
  // Page-lock the same pages through a second adaptor over an upstream that
  // hands out exactly that memory: CUDA refuses, and the error says so.
  struct same_block final : mem::host_resource {
    void* block;
    int live = 0;
    explicit same_block(void* b) : block(b) {}
    std::string_view kind() const noexcept override { return "same-block"; }
    mem::properties props() const noexcept override { return {}; }
    std::size_t max_alignment() const noexcept override { return 4096; }
    std::size_t natural_alignment() const noexcept override { return 4096; }
    std::string describe() const override { return "test"; }
    void* do_allocate(std::size_t, std::size_t) override { return ++live, block; }
    void do_deallocate(void*, std::size_t, std::size_t) noexcept override { --live; }
  } again(p);
  registering_resource twice(again);
  try {
    (void)twice.allocate(4096, 4096);
    FAIL() << "registered the same pages twice";
  } catch (const mem::allocation_error& e) {
    EXPECT_EQ(e.bytes(), 4096u);
    EXPECT_NE(e.cause().find("cudaErrorHostMemoryAlreadyRegistered"), std::string::npos) << e.cause();
  }
  EXPECT_EQ(again.live, 0) << "the refused block was not returned upstream";
  r.deallocate(p, 8192, 4096);
}
