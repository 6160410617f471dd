// The block copier's CUDA step on the GPU (issue 38): each way moves the
// right bytes for scattered blocks of 4 KiB to 2 MiB, from and to pinned
// and pageable host memory; the copier's choice runs and orders after the
// caller's stream. Each test skips, saying why, without a GPU.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>
#include <cuda_runtime.h>
#include <xfer/mem/blocks/block_copier.hpp>
#include <xfer/mem/cuda/block_step.hpp>

namespace xfer::test {
namespace {

using mem::block_pair;
using mem::block_way;
using dir = mem::staged_direction;

mem::block_step* gpu_step(std::string& why) {
  static std::unique_ptr<mem::block_step> step;
  static std::string reason;
  static bool tried = false;
  if (!tried) {
    tried = true;
    try {
      step = cuda::make_block_step(0);
    } catch (const std::exception& e) {
      reason = e.what();
    }
  }
  why = reason;
  return step.get();
}

// Host memory of either kind, filled with a pattern per block.
struct host_array {
  bool pinned;
  std::size_t bytes;
  unsigned char* p = nullptr;
  std::vector<unsigned char> pageable;
  host_array(bool pin, std::size_t n) : pinned(pin), bytes(n) {
    if (pinned) {
      EXPECT_EQ(cudaHostAlloc(reinterpret_cast<void**>(&p), n, cudaHostAllocMapped), cudaSuccess);
    } else {
      pageable.resize(n);
      p = pageable.data();
    }
  }
  ~host_array() {
    if (pinned) cudaFreeHost(p);
  }
};

void fill(unsigned char* p, std::size_t bytes, std::size_t block, unsigned salt) {
  for (std::size_t i = 0; i < bytes; ++i) p[i] = static_cast<unsigned char>((i / block) * 13 + (i * 7) % 253 + salt);
}

// Moves `n` scattered pairs of `block` bytes with mover m between a host
// array of host_blocks and a device array of device_blocks (seed: the list),
// then checks every block of the destination, moved or not. Where m refuses
// the job, `refused` says why and nothing moves.
void move_and_check(mem::block_step& step, mem::block_mover& m, dir d, bool pinned, std::size_t block,
                    std::size_t host_blocks, std::size_t device_blocks, std::size_t n, unsigned seed,
                    std::string& refused) {
  host_array host(pinned, host_blocks * block);
  fill(host.p, host.bytes, block, 1);
  const mem::device_ref dev = step.allocate(device_blocks * block);
  struct free_device {
    mem::block_step& s;
    mem::device_ref d;
    ~free_device() { s.deallocate(d); }
  } held{step, dev};
  std::vector<unsigned char> dev_init(device_blocks * block);
  fill(dev_init.data(), dev_init.size(), block, 2);
  ASSERT_EQ(cudaMemcpy(dev.handle, dev_init.data(), dev_init.size(), cudaMemcpyHostToDevice), cudaSuccess);
  const bool to_dev = d == dir::to_device;
  const auto pairs =
      mem::scattered_block_pairs(n, to_dev ? host_blocks : device_blocks, to_dev ? device_blocks : host_blocks, seed);
  const mem::block_job job{d, host.p, host.bytes, dev, block, pairs};
  const auto access = step.access(host.p, host.bytes);
  EXPECT_EQ(access.kind, pinned ? mem::host_block_kind::pinned : mem::host_block_kind::pageable);
  refused = m.refusal(job, access);
  if (!refused.empty()) return;
  const std::vector<unsigned char> host_before(host.p, host.p + host.bytes);
  m.move(job, access);
  std::vector<unsigned char> dev_after(dev_init.size());
  ASSERT_EQ(cudaMemcpy(dev_after.data(), dev.handle, dev_after.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  const unsigned char* src = to_dev ? host_before.data() : dev_init.data();
  std::vector<unsigned char> expect = to_dev ? dev_init : host_before;
  for (const auto& p : pairs) std::memcpy(expect.data() + p.dst * block, src + p.src * block, block);
  const unsigned char* got = to_dev ? dev_after.data() : host.p;
  for (std::size_t b = 0; b < expect.size() / block; ++b)
    ASSERT_EQ(0, std::memcmp(expect.data() + b * block, got + b * block, block)) << "block " << b;
}

mem::block_copier_options uncalibrated() {
  mem::block_copier_options o;
  o.calibrate = false;
  return o;
}

class BlocksCuda : public ::testing::TestWithParam<block_way> {
 protected:
  void SetUp() override {
    std::string why;
    step_ = gpu_step(why);
    if (!step_) GTEST_SKIP() << "no usable CUDA device: " << why;
  }
  mem::block_step* step_ = nullptr;
};

TEST_P(BlocksCuda, MovesScatteredBlocksBothWays) {
  mem::block_copier copier(*step_, uncalibrated());
  mem::block_mover& m = copier.mover(GetParam());
  for (std::size_t block : {std::size_t{4} << 10, std::size_t{64} << 10, std::size_t{2} << 20})
    for (bool pinned : {true, false})
      for (dir d : {dir::to_device, dir::to_host}) {
        SCOPED_TRACE(std::string(to_string(GetParam())) + " " + std::string(to_string(d)) + " " +
                     (pinned ? "pinned " : "pageable ") + std::to_string(block));
        std::string why;
        move_and_check(*step_, m, d, pinned, block, 24, 20, 16, 7, why);
        if (GetParam() == block_way::kernel && !pinned) {
          EXPECT_NE(why.find("pageable"), std::string::npos) << why;
          continue;
        }
        if (GetParam() == block_way::batch && !why.empty()) GTEST_SKIP() << why;
        ASSERT_EQ(why, "");
      }
}

INSTANTIATE_TEST_SUITE_P(Ways, BlocksCuda, ::testing::ValuesIn(mem::all_block_ways),
                         [](const auto& info) { return std::string(to_string(info.param)); });

// The pack way with more pairs than the step's first index space holds (a
// scatter or gather kernel per group of ~4 MiB, 16 bytes a pair each, in
// 64 KiB at first): the space runs out mid-copy and grows, and the next copy
// of the same shape fits it. Every block moved right each time.
TEST(BlocksCudaCopier, PackMovesMorePairsThanTheFirstIndexSpaceHolds) {
  std::string why;
  mem::block_step* step = gpu_step(why);
  if (!step) GTEST_SKIP() << "no usable CUDA device: " << why;
  mem::block_copier copier(*step, uncalibrated());
  for (dir d : {dir::to_device, dir::to_host})
    for (unsigned copy = 0; copy < 2; ++copy) {
      SCOPED_TRACE(std::string(to_string(d)) + " copy " + std::to_string(copy));
      std::string refused;
      move_and_check(*step, copier.mover(block_way::pack), d, false, 4096, 8192, 8192, 8192, 20 + copy, refused);
      ASSERT_EQ(refused, "");
    }
}

// The copier after the caller's stream: a fill queued on it comes first.
TEST(BlocksCudaCopier, ChoosesAndOrdersAfterTheCallersStream) {
  std::string why;
  mem::block_step* step = gpu_step(why);
  if (!step) GTEST_SKIP() << "no usable CUDA device: " << why;
  mem::block_copier copier(*step);
  const std::size_t block = 16 << 10, blocks = 256;
  host_array host(true, blocks * block);
  std::memset(host.p, 0, host.bytes);
  const mem::device_ref dev = step->allocate(blocks * block);
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaMemsetAsync(dev.handle, 0xAB, blocks * block, s), cudaSuccess);
  const auto pairs = mem::scattered_block_pairs(blocks, blocks, blocks, 3);
  const block_way w = copier.copy({dir::to_host, host.p, host.bytes, dev, block, pairs, s});
  for (std::size_t i = 0; i < host.bytes; i += 4093) ASSERT_EQ(host.p[i], 0xAB) << "byte " << i << " via " << to_string(w);
  cudaStreamDestroy(s);
  step->deallocate(dev);
}

// The batch way cuts its copies into parts on several streams (the CUDA
// step's batch_parts): whatever the count of pairs, whole parts or not,
// every block moves, after the work queued on the caller's stream (a memset
// the side streams must wait for) and before the copy returns (the caller's
// stream waits for the side streams).
TEST(BlocksCudaCopier, BatchPartsOnSeveralStreamsOrderAfterTheCallersStream) {
  std::string why;
  mem::block_step* step = gpu_step(why);
  if (!step) GTEST_SKIP() << "no usable CUDA device: " << why;
  if (const std::string no = step->batch_unavailable(); !no.empty()) GTEST_SKIP() << no;
  mem::block_copier_options o = uncalibrated();
  o.way = block_way::batch;
  mem::block_copier copier(*step, o);
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  const std::size_t block = 64 << 10;
  for (std::size_t n : {1, 3, 5, 16, 257}) {
    SCOPED_TRACE(std::to_string(n) + " pairs");
    host_array host(true, n * block);
    std::memset(host.p, 0, host.bytes);
    const mem::device_ref dev = step->allocate(n * block);
    ASSERT_EQ(cudaMemset(dev.handle, 0x11, n * block), cudaSuccess);
    ASSERT_EQ(cudaMemsetAsync(dev.handle, 0xAB, n * block, s), cudaSuccess);
    const auto pairs = mem::scattered_block_pairs(n, n, n, 5);
    EXPECT_EQ(copier.copy({dir::to_host, host.p, host.bytes, dev, block, pairs, s}), block_way::batch);
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < host.bytes; ++i) wrong += host.p[i] != 0xAB;
    EXPECT_EQ(wrong, 0u) << "bytes not 0xAB of " << host.bytes;
    step->deallocate(dev);
  }
  cudaStreamDestroy(s);
}

// The queue's end waits for what was queued after its last finish (the
// index buffers and the caller's arrays must outlive that work), and only
// for that: a queue closed right after a finish returns while the caller's
// stream is still held by work of the caller's own.
namespace stream_hold {
std::atomic<bool> released{false};
std::atomic<bool> gave_up{false};
// Holds the stream until released, or gives up after 5 s.
void CUDART_CB hold(void*) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!released.load()) {
    if (std::chrono::steady_clock::now() > end) {
      gave_up = true;
      return;
    }
    std::this_thread::yield();
  }
}
}  // namespace stream_hold

TEST(BlocksCudaQueue, ClosingWaitsForWhatWasQueuedAfterTheLastFinish) {
  std::string why;
  mem::block_step* step = gpu_step(why);
  if (!step) GTEST_SKIP() << "no usable CUDA device: " << why;
  const std::size_t bytes = 4 << 20;
  host_array host(true, bytes);
  std::memset(host.p, 0, bytes);
  const mem::device_ref dev = step->allocate(bytes);
  ASSERT_EQ(cudaMemset(dev.handle, 0x5A, bytes), cudaSuccess);
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  stream_hold::released = false;
  stream_hold::gave_up = false;
  {
    auto q = step->open_queue(s);
    q->copy(host.p, dev.handle, 4096);
    q->finish();
    // The caller's own work holds the stream; the queue's next copy waits
    // behind it, so it cannot have run before the queue's end waits.
    ASSERT_EQ(cudaLaunchHostFunc(s, stream_hold::hold, nullptr), cudaSuccess);
    q->copy(host.p, dev.handle, bytes);
    std::thread release([] {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      stream_hold::released = true;
    });
    q.reset();
    // The copy can run only after the release: a queue's end that waited
    // for it returns after the release, never before.
    const bool closed_after_release = stream_hold::released.load();
    release.join();
    EXPECT_TRUE(closed_after_release) << "the queue closed before its last copy had run";
  }
  EXPECT_FALSE(stream_hold::gave_up.load());
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < bytes; ++i) wrong += host.p[i] != 0x5A;
  EXPECT_EQ(wrong, 0u) << "bytes not yet copied when the queue closed, of " << bytes;
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  cudaStreamDestroy(s);
  step->deallocate(dev);
}

TEST(BlocksCudaQueue, ClosingRightAfterAFinishDoesNotWaitForTheCallersLaterWork) {
  std::string why;
  mem::block_step* step = gpu_step(why);
  if (!step) GTEST_SKIP() << "no usable CUDA device: " << why;
  host_array host(true, 4096);
  const mem::device_ref dev = step->allocate(4096);
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  stream_hold::released = false;
  stream_hold::gave_up = false;
  {
    auto q = step->open_queue(s);
    q->copy(dev.handle, host.p, 4096);
    q->finish();
    ASSERT_EQ(cudaLaunchHostFunc(s, stream_hold::hold, nullptr), cudaSuccess);
    q.reset();  // had it waited for the stream, the hold would have given up by now
  }
  const bool gave_up_before_release = stream_hold::gave_up.load();
  stream_hold::released = true;
  EXPECT_FALSE(gave_up_before_release) << "the queue's end waited for the caller's stream";
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_FALSE(stream_hold::gave_up.load());
  cudaStreamDestroy(s);
  step->deallocate(dev);
}

}  // namespace
}  // namespace xfer::test
