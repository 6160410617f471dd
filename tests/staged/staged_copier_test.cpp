#include <sched.h>
// The staged copier on the host step: the pipeline for real (lanes are
// threads of their own), every fault the issue lists, and bad input.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <xfer/mem/staged/host_step.hpp>

#include "faulty_step.hpp"
#include "staged_conformance.hpp"
#include "thread_count.hpp"

namespace xfer::test {
namespace {

using mem::staged_direction;
using mem::staged_error;

TEST(SpinWait, PollsOnlyWithFourCpusOrMore) {
  cpu_set_t set;
  ASSERT_EQ(::sched_getaffinity(0, sizeof set, &set), 0);
  const auto spin = mem::spin_before_sleep();
  if (CPU_COUNT(&set) >= 4)
    EXPECT_EQ(spin.count(), 200);
  else
    EXPECT_EQ(spin.count(), 0) << "a poller would hold one of too few CPUs";
  int calls = 0;
  EXPECT_FALSE(mem::spin_until([&] { return ++calls > 1000000; }, std::chrono::microseconds{0}));
  EXPECT_EQ(calls, 1) << "no budget: one look, no polling";
}

TEST(StagedHost, EveryChunkBoundary) {
  mem::host_step step;
  every_boundary(step);
}

TEST(StagedHost, UnalignedStarts) {
  mem::host_step step;
  unaligned_starts(step);
}

TEST(StagedHost, ConcurrentCopiesThroughOneCopier) {
  mem::host_step step;
  concurrent_copies(step);
}

TEST(StagedHost, AsyncCopiesInFlight) {
  mem::host_step step;
  async_in_flight(step);
}

TEST(StagedHost, OneThreadAndOneSlot) {
  // The degenerate ring: no overlap at all, still correct.
  mem::host_step step;
  mem::staged_copier c(step, with_tuning(small_chunks(4096, 1, 1)));
  round_trip(c, 3 * 4096 + 1, 1, 1);
}

TEST(StagedHost, MoreThreadsThanSlotsShareEachChunk) {
  // Eight threads on two slots: each chunk is cut into eight 512-byte pieces.
  mem::host_step step;
  mem::staged_copier c(step, with_tuning(small_chunks(4096, 2, 8)));
  EXPECT_EQ(c.tuning().piece_bytes(), 512u);
  round_trip(c, 9 * 4096 - 1, 0, 3);
}

TEST(StagedHost, RampedChunksAtTheirBoundaries) {
  // 512 KiB chunks ramp 64, 128, 256 KiB up and down: 1408 KiB is the
  // shortest copy with both ramps; either side of it and of each ramp step.
  mem::host_step step;
  mem::staged_copier c(step, with_tuning(small_chunks(512 * 1024, 4, 3)));
  constexpr std::size_t K = 1024;
  for (std::size_t bytes : {1408 * K - 1, 1408 * K, 1408 * K + 1, 1920 * K + 64 * K - 1, 5 * 512 * K + 17})
    round_trip(c, bytes, 3, 1);
}

TEST(StagedHost, PiecesThatDoNotDivideTheChunk) {
  // 4096 / 5 threads: pieces of 832 bytes, the fifth only 768; and a last
  // chunk shorter than one piece.
  mem::host_step step;
  for (const bool stream : {true, false}) {
    auto t = small_chunks(4096, 3, 5);
    t.stream_stores = stream;
    mem::staged_copier c(step, with_tuning(t));
    for (std::size_t bytes : {std::size_t{4096}, std::size_t{4 * 4096 + 100}, std::size_t{7 * 4096 + 831}})
      round_trip(c, bytes, 5, 3);
  }
}

TEST(StagedHost, LargeChunksRoundTrip) {
  mem::host_step step;
  mem::staged_copier c(step, with_tuning(small_chunks(std::size_t{1} << 20, 4, 2)));
  round_trip(c, (std::size_t{5} << 20) + 12345, 7, 9);
}

TEST(StagedHost, SmallCopiesGoToThePlainApi) {
  mem::host_step step;
  auto t = small_chunks();
  t.handoff_to_device_bytes = t.handoff_to_host_bytes = 10000;
  mem::staged_copier c(step, with_tuning(t));
  round_trip(c, 9000, 1, 1);  // its poison fill and read-back too (9065 bytes)
  EXPECT_EQ(c.staging_stats().misses + c.staging_stats().hits, 0u) << "no staging buffer was taken";
  round_trip(c, 10000, 0, 0);  // at the handoff size: staged (the pool served the ring)
  EXPECT_GT(c.staging_stats().misses, 0u);
}

TEST(StagedHost, EachDirectionHasItsOwnHandoff) {
  mem::host_step step;
  auto t = small_chunks();
  t.handoff_to_device_bytes = 10000;
  t.handoff_to_host_bytes = 0;
  mem::staged_copier c(step, with_tuning(t));
  device_buffer dev(step, 9000);
  std::vector<unsigned char> host(9000, 3);
  c.copy_to_device(dev.ref(), 0, host.data(), host.size());
  EXPECT_EQ(c.staging_stats().misses + c.staging_stats().hits, 0u) << "to the device: plain";
  c.copy_to_host(host.data(), dev.ref(), 0, host.size());
  EXPECT_GT(c.staging_stats().misses, 0u) << "to the host: staged";
}

TEST(StagedHost, StagingIsReusedFromThePool) {
  mem::host_step step;
  mem::staged_copier c(step, with_tuning(small_chunks()));
  round_trip(c, 20 * 4096, 0, 0);
  const auto first = c.staging_stats();
  round_trip(c, 20 * 4096, 0, 0);
  const auto second = c.staging_stats();
  EXPECT_EQ(second.misses, first.misses) << "the second copy pinned nothing new";
  EXPECT_GT(second.hits, first.hits);
  EXPECT_EQ(second.handed_out_bytes, 0u);
  // One ring at most: the deeper one, a copy to the host's (staged_ring_slots).
  EXPECT_LE(second.peak_reserved_bytes,
            mem::caching_pool::class_size(4096) * mem::staged_ring_slots(small_chunks(), mem::staged_direction::to_host));
}

TEST(StagedHost, AfterAQueueRunsBothPaths) {
  // The host step has no device work: any queue is done, and both the
  // staged path and the one below the handoff carry the copy.
  mem::host_step step;
  auto t = small_chunks();
  t.handoff_to_device_bytes = t.handoff_to_host_bytes = 10000;
  mem::staged_copier c(step, with_tuning(t));
  device_buffer dev(step, 50000);
  std::vector<unsigned char> src(50000), back(50000);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = pattern_byte(i, 4);
  int queue = 0;
  for (std::size_t n : {std::size_t{9000}, std::size_t{50000}}) {
    std::fill(back.begin(), back.end(), 0);
    c.copy_to_device_async(dev.ref(), 0, src.data(), n, &queue).wait();
    c.copy_to_host_async(back.data(), dev.ref(), 0, n, &queue).wait();
    EXPECT_TRUE(std::equal(src.begin(), src.begin() + n, back.begin())) << n << " bytes";
  }
  EXPECT_GT(c.staging_stats().misses, 0u) << "the larger copy was staged";
}

TEST(StagedHost, SizeZeroIsRefused) {
  mem::host_step step;
  mem::staged_copier c(step, with_tuning(small_chunks()));
  device_buffer dev(step, 16);
  unsigned char host[16] = {};
  for (int way = 0; way < 3; ++way) {
    try {
      if (way == 0) c.copy_to_device(dev.ref(), 0, host, 0);
      if (way == 1) c.copy_to_host(host, dev.ref(), 0, 0);
      if (way == 2) (void)c.copy_to_device_async(dev.ref(), 0, host, 0);
      FAIL() << "no error, way " << way;
    } catch (const staged_error& e) {
      EXPECT_EQ(e.why(), staged_error::reason::bad_argument);
      EXPECT_EQ(e.bytes(), 0u);
      EXPECT_NE(std::string(e.what()).find("a size of 0 bytes"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(c.staging_stats().misses, 0u);
  c.copy_to_device(dev.ref(), 0, host, 16);  // usable afterwards
}

TEST(StagedHost, RangeBeyondTheDeviceBufferIsRefused) {
  mem::host_step step;
  mem::staged_copier c(step, with_tuning(small_chunks()));
  device_buffer dev(step, 4096);
  std::vector<unsigned char> host(8192);
  try {
    c.copy_to_device(dev.ref(), 100, host.data(), 4000);
    FAIL() << "no error";
  } catch (const staged_error& e) {
    EXPECT_EQ(e.why(), staged_error::reason::bad_argument);
    EXPECT_EQ(e.bytes(), 4000u);
    EXPECT_EQ(e.direction(), staged_direction::to_device);
    EXPECT_NE(std::string(e.what()).find("4000 bytes"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("beyond the device buffer's 4096 bytes"), std::string::npos) << e.what();
  }
  // offset + bytes overflowing size_t must not wrap into "fits".
  EXPECT_THROW(c.copy_to_host(host.data(), dev.ref(), SIZE_MAX, 2), staged_error);
  EXPECT_THROW((void)c.copy_to_host_async(host.data(), dev.ref(), 4097, 1), staged_error);
  EXPECT_EQ(c.staging_stats().misses, 0u);
}

TEST(StagedHost, NullPointersAreRefused) {
  mem::host_step step;
  mem::staged_copier c(step, with_tuning(small_chunks()));
  device_buffer dev(step, 4096);
  std::vector<unsigned char> host(4096);
  EXPECT_THROW(c.copy_to_device(dev.ref(), 0, nullptr, 10), staged_error);
  EXPECT_THROW(c.copy_to_host(nullptr, dev.ref(), 0, 10), staged_error);
  EXPECT_THROW(c.copy_to_device({nullptr, 4096}, 0, host.data(), 10), staged_error);
}

TEST(StagedHost, OverlappingSourceAndDestinationAreRefused) {
  mem::host_step step;  // "device" memory is host memory: the copier can tell
  mem::staged_copier c(step, with_tuning(small_chunks()));
  device_buffer dev(step, 8 * 4096);
  auto* base = static_cast<unsigned char*>(dev.ref().handle);
  try {
    c.copy_to_device(dev.ref(), 4096, base + 100, 5000);
    FAIL() << "no error";
  } catch (const staged_error& e) {
    EXPECT_EQ(e.why(), staged_error::reason::bad_argument);
    EXPECT_NE(std::string(e.what()).find("overlap"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("5000 bytes"), std::string::npos) << e.what();
  }
  EXPECT_THROW(c.copy_to_host(base + 4096 + 4999, dev.ref(), 4096, 5000), staged_error);
  // Adjacent ranges do not overlap.
  EXPECT_NO_THROW(c.copy_to_device(dev.ref(), 4096, base, 4096));
}

class StagedFault : public ::testing::TestWithParam<std::tuple<staged_direction, fault_at>> {};

// An error in a middle chunk: a typed error naming the size, the failing
// chunk's offset and the cause; all staging back in the pool; no thread
// left over; the next copy through the same copier works.
TEST_P(StagedFault, ErrorInAMiddleChunk) {
  const auto [dir, when] = GetParam();
  // ThreadSanitizer starts a thread of its own at the process's first
  // thread creation: start (and end) one before counting.
  std::thread([] {}).join();
  // (That one may still be listed: the count after is held to at most this.)
  const int threads_before = thread_count();
  {
    faulty_step step;
    mem::staged_copier c(step, with_tuning(small_chunks()));
    const int threads_running = thread_count();
    const std::size_t chunk = 4096, bytes = 10 * chunk + 7, bad = 5 * chunk;
    device_buffer dev(step, bytes);
    std::vector<unsigned char> host(bytes, 1);
    step.fail(bad, when);
    try {
      if (dir == staged_direction::to_device)
        c.copy_to_device(dev.ref(), 0, host.data(), bytes);
      else
        c.copy_to_host(host.data(), dev.ref(), 0, bytes);
      FAIL() << "no error";
    } catch (const staged_error& e) {
      EXPECT_EQ(e.why(), staged_error::reason::device);
      EXPECT_EQ(e.direction(), dir);
      EXPECT_EQ(e.bytes(), bytes);
      EXPECT_EQ(e.at_offset(), bad);
      EXPECT_NE(e.cause().find("injected"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(std::to_string(bytes) + " bytes"), std::string::npos) << e.what();
    }
    const auto s = c.staging_stats();
    EXPECT_EQ(s.handed_out_bytes, 0u) << "staging buffers held after the failure";
    EXPECT_EQ(s.requested_bytes, 0u);
    EXPECT_EQ(thread_count(), threads_running) << "a thread started or ended with the failed copy";

    step.fail(SIZE_MAX, when);
    round_trip(c, bytes, 0, 0, 9);  // usable afterwards
  }
  EXPECT_LE(thread_count_down_to(threads_before), threads_before) << "a thread outlived the copier";
}

INSTANTIATE_TEST_SUITE_P(Faults, StagedFault,
                         ::testing::Combine(::testing::Values(staged_direction::to_device, staged_direction::to_host),
                                            ::testing::Values(fault_at::enqueue, fault_at::wait)),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param) == staged_direction::to_device ? "ToDevice"
                                                                                                     : "ToHost") +
                                  (std::get<1>(info.param) == fault_at::enqueue ? "Enqueue" : "Wait");
                         });

TEST(StagedHost, AsyncFailureIsReportedByEveryWait) {
  faulty_step step;
  mem::staged_copier c(step, with_tuning(small_chunks()));
  device_buffer dev(step, 8 * 4096);
  std::vector<unsigned char> host(8 * 4096);
  step.fail(3 * 4096, fault_at::wait);
  auto done = c.copy_to_device_async(dev.ref(), 0, host.data(), host.size());
  EXPECT_THROW(done.wait(), staged_error);
  EXPECT_TRUE(done.ready());
  EXPECT_THROW(done.wait(), staged_error);
}

// wait_for: false while the copy is held (the Python Copier checks for
// Ctrl-C between such waits), then its outcome, as wait() gives it.
TEST(StagedHost, WaitForSaysWhetherTheCopyFinished) {
  faulty_step step;
  mem::staged_copier c(step, with_tuning(small_chunks()));
  device_buffer dev(step, 8 * 4096);
  std::vector<unsigned char> host(8 * 4096, 5);
  step.stall(true);
  auto done = c.copy_to_device_async(dev.ref(), 0, host.data(), host.size());
  EXPECT_FALSE(done.wait_for(std::chrono::milliseconds(20)));
  EXPECT_FALSE(done.ready());
  step.stall(false);
  EXPECT_TRUE(done.wait_for(std::chrono::seconds(60)));
  EXPECT_EQ(0, std::memcmp(dev.ref().handle, host.data(), host.size()));
  step.fail(3 * 4096, fault_at::wait);
  auto failed = c.copy_to_device_async(dev.ref(), 0, host.data(), host.size());
  EXPECT_THROW((void)failed.wait_for(std::chrono::seconds(60)), staged_error);
}

TEST(StagedHost, StagingPoolUnableToGrow) {
  refusing_resource staging;
  faulty_step step(&staging);
  mem::staged_copier c(step, with_tuning(small_chunks()));
  device_buffer dev(step, 8 * 4096);
  std::vector<unsigned char> host(8 * 4096, 3);
  staging.refusing = true;
  try {
    c.copy_to_device(dev.ref(), 0, host.data(), host.size());
    FAIL() << "no error";
  } catch (const staged_error& e) {
    EXPECT_EQ(e.why(), staged_error::reason::staging);
    EXPECT_EQ(e.bytes(), host.size());
    EXPECT_NE(e.cause().find("Cannot allocate memory"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("32768 bytes"), std::string::npos) << e.what();
  }
  EXPECT_EQ(c.staging_stats().handed_out_bytes, 0u);
  EXPECT_EQ(c.staging_stats().reserved_bytes, 0u);
  staging.refusing = false;
  round_trip(c, 8 * 4096, 0, 0);
}

TEST(StagedHost, StagingRefusedHalfWayReturnsWhatItGot) {
  // The pool grants 4 of the ring's 6 buffers, then refuses: the 4 must go
  // back (cached in the pool, none handed out) and the error say so.
  refusing_resource staging;
  faulty_step step(&staging);
  mem::staged_copier c(step, with_tuning(small_chunks(4096, 6, 3)));
  device_buffer dev(step, 8 * 4096);
  std::vector<unsigned char> host(8 * 4096);
  staging.grant = 4;
  EXPECT_THROW(c.copy_to_device(dev.ref(), 0, host.data(), host.size()), staged_error);
  const auto s = c.staging_stats();
  EXPECT_EQ(s.handed_out_bytes, 0u);
  EXPECT_EQ(s.reserved_bytes, 4 * mem::caching_pool::class_size(4096)) << "the 4 granted, cached";
  staging.grant = -1;
  staging.refusing = false;
  round_trip(c, 8 * 4096, 0, 0);
}

TEST(StagedHost, DestructorFinishesQueuedCopies) {
  mem::host_step step;
  const std::size_t bytes = 30 * 4096 + 5;
  std::vector<unsigned char> src(bytes), back(bytes);
  for (std::size_t i = 0; i < bytes; ++i) src[i] = pattern_byte(i, 77);
  device_buffer dev(step, bytes);
  mem::staged_completion done;
  {
    mem::staged_copier c(step, with_tuning(small_chunks()));
    done = c.copy_to_device_async(dev.ref(), 0, src.data(), bytes);
  }
  EXPECT_TRUE(done.ready());
  EXPECT_NO_THROW(done.wait());
  EXPECT_EQ(0, std::memcmp(dev.ref().handle, src.data(), bytes));
}

TEST(StagedHost, ThreadStartHookRunsOnEveryCopierThread) {
  mem::host_step step;
  std::atomic<int> started{0};
  {
    auto o = with_tuning(small_chunks(4096, 6, 3));
    o.thread_start = [&] { ++started; };
    mem::staged_copier c(step, o);
    round_trip(c, 4096 * 3, 0, 0);
  }
  EXPECT_EQ(started.load(), 3) << "the leader and two helpers";
}

}  // namespace
}  // namespace xfer::test
