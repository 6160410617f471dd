// A caching pool over pinned memory, with a block freed while an async copy
// from it may still be running (deallocate_after with an event query): the
// pool must not hand that block out again until the copy's event completes,
// and must reuse it afterwards. The copy is held back deterministically by
// the spin-kernel gate on its stream.
#include <cuda_runtime_api.h>
#include <xfer/mem/caching_pool.hpp>

#include "cuda/kernels.hpp"
#include "cuda/resources.hpp"
#include "cuda/spin_gate.hpp"
#include "gpu.hpp"

using namespace xfer;
using namespace xfer::cuda;

TEST(CudaPool, BlockFreedBehindAnEventIsReusedOnlyOnceTheEventCompletes) {
  XFER_REQUIRE_GPU();
  api& a = test::gpu().backend("cuda-rt")->cuda_api();
  a.make_current(0);
  kernels::preload();  // no lazy module load behind the closed gate
  // Declared so that the pool (whose pending block asks the event) goes
  // before the event, and the gate's guard has opened it before anything
  // that synchronizes the device is destroyed.
  stream s(a);
  event copied(a);
  spin_gate gate(a, s.get());
  pinned_resource pinned(a);
  mem::caching_pool pool(pinned);
  constexpr std::size_t bytes = std::size_t{8} << 20;
  device_buffer dst(a, bytes);

  void* block = pool.allocate(bytes, 4096);
  void* other = nullptr;
  {
    gate_guard held(gate, true);
    a.copy_async(dst.data(), block, bytes, copy_kind::h2d, s.get());
    a.record(copied.get(), s.get());
    const auto ev = static_cast<cudaEvent_t>(copied.get());
    pool.deallocate_after(block, bytes, 4096, [ev] { return cudaEventQuery(ev) == cudaSuccess; });
    // The copy cannot have run: the gate holds its stream.
    ASSERT_EQ(cudaEventQuery(ev), cudaErrorNotReady);
    other = pool.allocate(bytes, 4096);
    EXPECT_NE(other, block) << "a block the pending copy still reads was handed out";
    EXPECT_EQ(pool.stats().hits, 0u);
    EXPECT_EQ(pool.stats().misses, 2u);
    held.release();
  }
  a.synchronize_event(copied.get());
  EXPECT_FALSE(gate.timed_out());
  // The copy is done: the block is the one free block of its class, and the
  // next request gets it without going upstream.
  void* again = pool.allocate(bytes, 4096);
  EXPECT_EQ(again, block) << "the block was not reused after its event completed";
  EXPECT_EQ(pool.stats().hits, 1u);
  EXPECT_EQ(pool.stats().misses, 2u);
  pool.deallocate(again, bytes, 4096);
  pool.deallocate(other, bytes, 4096);
  (void)cudaGetLastError();  // the not-ready queries must not surface in a later launch check
}
