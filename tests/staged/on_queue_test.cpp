// The staged copier on the caller's queue (issue 37, item 3) on the host
// step: its queues are CPU threads running tasks in order, and a copy's
// DMAs are tasks there, each behind its gate (the order a CUDA stream
// gets), so the whole path (gates opened chunk by chunk, the final gate,
// every gate opened on failure and destruction) runs for real in CI. A task
// queued after a copy stands in for the kernel that reads what the copy
// brought.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <latch>
#include <memory>
#include <string>
#include <thread>
#include <vector>
#include <xfer/mem/staged/host_step.hpp>
#include <xfer/mem/staged/staging_budget.hpp>

#include "faulty_step.hpp"
#include "staged_conformance.hpp"

namespace xfer::test {
namespace {

using mem::staged_error;
using namespace std::chrono_literals;

std::vector<unsigned char> pattern(std::size_t bytes, unsigned seed) {
  std::vector<unsigned char> v(bytes);
  for (std::size_t i = 0; i < bytes; ++i) v[i] = pattern_byte(i, seed);
  return v;
}

// Every task queued so far has run within 10 s (a queue never released
// would hang: this fails instead).
void finishes(mem::host_step::queue& q) {
  auto f = std::async(std::launch::async, [&] { q.finish(); });
  ASSERT_EQ(f.wait_for(10s), std::future_status::ready) << "the caller's queue is still held";
}

// The call throws a staged_error of this reason whose cause names `text`.
#define EXPECT_THAT_REFUSED(call, reason, text)                                \
  try {                                                                        \
    (void)(call);                                                              \
    ADD_FAILURE() << "no error";                                               \
  } catch (const staged_error& e) {                                            \
    EXPECT_EQ(e.why(), reason) << e.what();                                    \
    EXPECT_NE(e.cause().find(text), std::string::npos) << e.what();            \
  }

// Many small chunks: the copy takes long enough (hundreds of DMAs, each a
// hand-off between threads) that a task not held back would run before it ends.
constexpr std::size_t many_chunks = 256 * 4096 + 13;

}  // namespace

// The host step, a copier of small chunks over it, and a queue of the caller's.
class StagedOnQueue : public ::testing::Test {
 protected:
  mem::host_step step;
  mem::staged_copier c{step, with_tuning(small_chunks(4096, 2, 2))};
  std::unique_ptr<mem::host_step::queue> q = step.make_queue();  // first to go: its tasks run before the copier ends
};

TEST_F(StagedOnQueue, TaskQueuedAfterACopyToTheDeviceSeesItsBytes) {
  const auto src = pattern(many_chunks, 3);
  device_buffer dev(step, many_chunks);
  std::memset(dev.ref().handle, 0, many_chunks);
  std::vector<unsigned char> seen(many_chunks);
  auto done = c.copy_to_device_on(dev.ref(), 0, src.data(), many_chunks, q->handle());
  q->enqueue([&] { std::memcpy(seen.data(), dev.ref().handle, many_chunks); });
  finishes(*q);
  EXPECT_NO_THROW(done.wait());
  EXPECT_EQ(seen, src) << "the task ran before the copy had ended";
  EXPECT_EQ(step.holds_held(), 0u);
}

TEST_F(StagedOnQueue, CopyToTheHostWaitsForTheTasksBeforeIt) {
  const auto want = pattern(many_chunks, 5);
  device_buffer dev(step, many_chunks);
  std::memset(dev.ref().handle, 0, many_chunks);
  // The producer of the copy's source, still running when the copy is queued.
  q->enqueue([&] {
    std::this_thread::sleep_for(50ms);
    std::memcpy(dev.ref().handle, want.data(), many_chunks);
  });
  std::vector<unsigned char> back(many_chunks);
  auto done = c.copy_to_host_on(back.data(), dev.ref(), 0, many_chunks, q->handle());
  done.wait();
  EXPECT_EQ(back, want);
}

TEST_F(StagedOnQueue, CopyTaskCopyChainsWithoutTheHostWaiting) {
  const auto src = pattern(many_chunks, 8);
  device_buffer dev(step, many_chunks);
  std::vector<unsigned char> back(many_chunks);
  auto in = c.copy_to_device_on(dev.ref(), 0, src.data(), many_chunks, q->handle());
  q->enqueue([&] {  // the "kernel": every byte plus one, in place
    auto* p = static_cast<unsigned char*>(dev.ref().handle);
    for (std::size_t i = 0; i < many_chunks; ++i) p[i] = static_cast<unsigned char>(p[i] + 1);
  });
  auto out = c.copy_to_host_on(back.data(), dev.ref(), 0, many_chunks, q->handle());
  out.wait();
  EXPECT_TRUE(in.ready());
  for (std::size_t i = 0; i < many_chunks; ++i)
    ASSERT_EQ(back[i], static_cast<unsigned char>(src[i] + 1)) << "byte " << i;
  finishes(*q);
  EXPECT_EQ(step.holds_held(), 0u);
}

// Below the handoff the plain API would have to wait for the queue on the
// calling thread: the copy goes through the pipeline instead, and the call
// returns while the queue is still busy.
TEST(StagedOnQueueOwnStep, SmallCopyDoesNotBlockTheCaller) {
  mem::host_step step;
  auto t = small_chunks();
  t.handoff_to_device_bytes = t.handoff_to_host_bytes = 1 << 20;
  mem::staged_copier c(step, with_tuning(t));
  auto q = step.make_queue();
  std::latch open(1);
  q->enqueue([&] { open.wait(); });
  const auto src = pattern(100, 1);
  device_buffer dev(step, 100);
  auto call = std::async(std::launch::async,
                         [&] { return c.copy_to_device_on(dev.ref(), 0, src.data(), 100, q->handle()); });
  const bool returned = call.wait_for(10s) == std::future_status::ready;
  open.count_down();
  ASSERT_TRUE(returned) << "the call waited for the caller's queue";
  auto done = call.get();
  done.wait();
  EXPECT_EQ(0, std::memcmp(dev.ref().handle, src.data(), 100));
}

TEST(StagedOnQueueOwnStep, FailedCopyStillReleasesTheQueue) {
  for (const auto when : {fault_at::enqueue, fault_at::wait}) {
    faulty_step step;
    mem::staged_copier c(step, with_tuning(small_chunks()));
    auto q = step.inner().make_queue();
    const std::size_t bytes = 10 * 4096;
    device_buffer dev(step, bytes);
    const auto src = pattern(bytes, 2);
    step.fail(5 * 4096, when);
    auto done = c.copy_to_device_on(dev.ref(), 0, src.data(), bytes, q->handle());
    bool ran = false;
    q->enqueue([&] { ran = true; });
    finishes(*q);
    EXPECT_TRUE(ran);
    try {
      done.wait();
      FAIL() << "no error";
    } catch (const staged_error& e) {
      EXPECT_EQ(e.why(), staged_error::reason::device) << e.what();
      EXPECT_EQ(e.at_offset(), 5 * 4096u);
    }
    EXPECT_EQ(step.inner().holds_held(), 0u);
    EXPECT_EQ(c.staging_stats().handed_out_bytes, 0u);
    step.fail(SIZE_MAX, when);
    c.copy_to_device_on(dev.ref(), 0, src.data(), bytes, q->handle()).wait();  // usable afterwards
    EXPECT_EQ(0, std::memcmp(dev.ref().handle, src.data(), bytes));
  }
}

// The ring is taken at the call: refused, the call throws and nothing is
// left on the queue.
TEST(StagedOnQueueOwnStep, StagingRefusedLeavesNothingOnTheQueue) {
  refusing_resource staging;
  faulty_step step(&staging);
  mem::staged_copier c(step, with_tuning(small_chunks()));
  auto q = step.inner().make_queue();
  device_buffer dev(step, 8 * 4096);
  std::vector<unsigned char> host(8 * 4096, 3);
  staging.refusing = true;
  EXPECT_THAT_REFUSED(c.copy_to_device_on(dev.ref(), 0, host.data(), host.size(), q->handle()),
                      staged_error::reason::staging, "no pinned staging memory");
  finishes(*q);
  EXPECT_EQ(step.inner().holds_held(), 0u);
  staging.refusing = false;
  c.copy_to_device_on(dev.ref(), 0, host.data(), host.size(), q->handle()).wait();  // usable afterwards
  EXPECT_EQ(0, std::memcmp(dev.ref().handle, host.data(), host.size()));
}

TEST(StagedOnQueueOwnStep, DestroyingTheCopierReleasesEveryQueue) {
  mem::host_step step;
  auto q1 = step.make_queue(), q2 = step.make_queue();
  const auto src = pattern(many_chunks, 4);
  device_buffer a(step, many_chunks), b(step, many_chunks);
  std::vector<mem::staged_completion> done;
  {
    mem::staged_copier c(step, with_tuning(small_chunks()));
    for (int i = 0; i < 3; ++i) {
      done.push_back(c.copy_to_device_on(a.ref(), 0, src.data(), many_chunks, q1->handle()));
      done.push_back(c.copy_to_device_on(b.ref(), 0, src.data(), many_chunks, q2->handle()));
    }
  }
  EXPECT_EQ(step.holds_held(), 0u);
  finishes(*q1);
  finishes(*q2);
  for (auto& d : done) EXPECT_NO_THROW(d.wait());
}

// The copier's lane and the caller's queue on one thread: one hardware
// queue, as CUDA streams beyond CUDA_DEVICE_MAX_CONNECTIONS share. Copies
// on the queue, a task between them, and blocking copies through the
// copier's lane from another thread all end, with the right bytes. When
// the copy held the caller's queue and moved its chunks on the copier's
// lane, the chunks queued behind the hold that waited for them, and this
// hung at the first copy.
TEST(StagedOnQueueOwnStep, NoCopyWaitsBehindItsOwnGatesOnASharedHardwareQueue) {
  mem::host_step step;
  auto q = step.make_queue();
  step.run_lanes_on(q.get());
  mem::staged_copier c(step, with_tuning(small_chunks(4096, 2, 2)));
  const std::size_t n = 64 * 4096 + 5;
  const auto src = pattern(n, 21), other = pattern(n, 22);
  device_buffer a(step, n), b(step, n);
  std::vector<unsigned char> back(n), back_other(n);
  auto run = std::async(std::launch::async, [&] {
    for (int round = 0; round < 4; ++round) {
      auto blocking = std::async(std::launch::async, [&] {
        c.copy_to_device(b.ref(), 0, other.data(), n);
        c.copy_to_host(back_other.data(), b.ref(), 0, n);
      });
      auto in = c.copy_to_device_on(a.ref(), 0, src.data(), n, q->handle());
      q->enqueue([&] {
        auto* p = static_cast<unsigned char*>(a.ref().handle);
        for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<unsigned char>(p[i] + 1);
      });
      auto out = c.copy_to_host_on(back.data(), a.ref(), 0, n, q->handle());
      out.wait();
      in.wait();
      blocking.get();
    }
  });
  if (run.wait_for(60s) != std::future_status::ready) {
    ADD_FAILURE() << "the copies did not end within 60 s: a copy waits behind its own gates";
    std::fflush(nullptr);
    std::_Exit(1);  // the hung threads cannot be joined
  }
  run.get();
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(back[i], static_cast<unsigned char>(src[i] + 1)) << "byte " << i;
  EXPECT_EQ(back_other, other);
  finishes(*q);
  EXPECT_EQ(step.holds_held(), 0u);
}

TEST_F(StagedOnQueue, NullQueueIsRefused) {
  device_buffer dev(step, 4096);
  std::vector<unsigned char> host(4096);
  EXPECT_THAT_REFUSED(c.copy_to_device_on(dev.ref(), 0, host.data(), host.size(), nullptr),
                      staged_error::reason::bad_argument, "queue is null");
  EXPECT_EQ(step.holds_held(), 0u);
}

TEST(StagedOnQueueOwnStep, AnotherDevicesQueueIsABadArgument) {
  faulty_step step;
  mem::staged_copier c(step, with_tuning(small_chunks()));
  auto q = step.inner().make_queue();
  device_buffer dev(step, 8 * 4096);
  std::vector<unsigned char> host(8 * 4096, 1);
  step.set_queues(faulty_step::queues::foreign);
  EXPECT_THAT_REFUSED(c.copy_to_host_on(host.data(), dev.ref(), 0, host.size(), q->handle()),
                      staged_error::reason::bad_argument, "device 7");
  step.set_queues(faulty_step::queues::unsupported);
  EXPECT_THAT_REFUSED(c.copy_to_device_on(dev.ref(), 0, host.data(), host.size(), q->handle()),
                      staged_error::reason::device, "faulty-host step cannot");
  EXPECT_EQ(step.inner().holds_held(), 0u);
  step.set_queues(faulty_step::queues::forward);
  c.copy_to_device_on(dev.ref(), 0, host.data(), host.size(), q->handle()).wait();  // usable afterwards
  finishes(*q);
}

// The rule that keeps the gates opening: copies on a caller's queue run on
// a team of the copier's own, never on its staging budget's threads. Here
// the budget has one place, taken by another copier's copy whose device has
// stopped answering (its leader waits inside a piece); an on-queue copy of a
// copier on the same budget must still end and let its queue go. Through
// the budget it would wait for that place for as long as the device hangs.
TEST(StagedOnQueueOwnStep, NoGateWaitsForTheStagingBudget) {
  mem::staging_budget_options bo;
  bo.threads = 1;
  auto budget = std::make_shared<mem::staging_budget>(bo);
  faulty_step stuck;
  mem::host_step step;
  auto o = with_tuning(small_chunks(4096, 2, 2));
  o.budget = budget;
  mem::staged_copier hung(stuck, o), c(step, o);
  auto q = step.make_queue();
  const auto src = pattern(many_chunks, 9);
  device_buffer dev_stuck(stuck, many_chunks), dev(step, many_chunks);
  stuck.stall(true);
  auto held = hung.copy_to_device_async(dev_stuck.ref(), 0, src.data(), many_chunks);
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (budget->runs() == 0 && std::chrono::steady_clock::now() < until) std::this_thread::yield();
  if (budget->runs() != 1) {
    stuck.stall(false);
    FAIL() << "the stalled copy never reached the budget";
  }
  std::vector<unsigned char> seen(many_chunks);
  auto done = c.copy_to_device_on(dev.ref(), 0, src.data(), many_chunks, q->handle());
  q->enqueue([&] { std::memcpy(seen.data(), dev.ref().handle, many_chunks); });
  auto finished = std::async(std::launch::async, [&] { q->finish(); });
  const bool released = finished.wait_for(10s) == std::future_status::ready;
  stuck.stall(false);  // before any check: the stalled copy ends either way
  EXPECT_TRUE(released) << "the on-queue copy waited for the budget's stalled place";
  finished.wait();
  EXPECT_NO_THROW(done.wait());
  EXPECT_EQ(seen, src);
  EXPECT_NO_THROW(held.wait());
  EXPECT_EQ(0, std::memcmp(dev_stuck.ref().handle, src.data(), many_chunks));
}

}  // namespace xfer::test
