// The staged copier on the caller's command queue (issue 37, item 3) on
// PoCL: a real queue of the caller's, in a context of its own, the way a
// program holds one. Device work queued there (a buffer copy standing in for
// a kernel) after a copy must see the copy's bytes, with no host wait between.
#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>
#include <xfer/mem/opencl/staged_step.hpp>

#include "../staged/staged_conformance.hpp"
#include "opencl/platform.hpp"
#include "opencl/shared_context_step.hpp"

namespace xfer::test {
namespace {

using mem::staged_error;

// The caller's side: PoCL's first device, a context and an in-order queue.
struct caller {
  opencl::found_device found;
  opencl::context ctx;
  opencl::command_queue queue;
  void* handle() const { return queue.get(); }
};

std::unique_ptr<caller> pocl_caller(std::string& why) {
  try {
    auto c = std::make_unique<caller>();
    c->found = opencl::find_device("pocl", 0);
    cl_int rc = CL_SUCCESS;
    c->ctx = opencl::context(clCreateContext(nullptr, 1, &c->found.device.id, nullptr, nullptr, &rc));
    opencl::check(rc, "clCreateContext");
    c->queue = opencl::make_queue(c->ctx, c->found.device, false);
    return c;
  } catch (const std::exception& e) {
    why = e.what();
    return nullptr;
  }
}

#define XFER_REQUIRE_POCL_CALLER(c)     \
  std::string why_;                     \
  auto c = pocl_caller(why_);           \
  if (!c) GTEST_SKIP() << "no PoCL: " << why_

std::vector<unsigned char> pattern(std::size_t bytes, unsigned seed) {
  std::vector<unsigned char> v(bytes);
  for (std::size_t i = 0; i < bytes; ++i) v[i] = pattern_byte(i, seed);
  return v;
}

cl_mem as_mem(const device_buffer& b) { return static_cast<cl_mem>(b.ref().handle); }

}  // namespace

// The step in the caller's context, so the caller's queue can use the
// copier's buffers: copy in, a device copy A -> B on the caller's queue,
// copy B out. Many small chunks keep the first copy running while the
// device copy is queued: without the hold it would copy A's zeros.
TEST(StagedOpenCLQueue, CopyDeviceWorkCopyOnTheCallersQueue) {
  XFER_REQUIRE_POCL_CALLER(c);
  auto step = opencl::make_staged_step(c->found.platform, c->found.device, c->ctx);
  mem::staged_copier copier(*step, with_tuning(small_chunks(4096, 2, 2)));
  const std::size_t bytes = 300 * 4096 + 5;
  device_buffer a(*step, bytes), b(*step, bytes);
  const unsigned char zero = 0;
  opencl::check(clEnqueueFillBuffer(c->queue.get(), as_mem(a), &zero, 1, 0, bytes, 0, nullptr, nullptr), "fill");
  opencl::check(clEnqueueFillBuffer(c->queue.get(), as_mem(b), &zero, 1, 0, bytes, 0, nullptr, nullptr), "fill");
  opencl::check(clFinish(c->queue.get()), "clFinish");
  const auto src = pattern(bytes, 21);
  std::vector<unsigned char> back(bytes, 0xEE);
  auto in = copier.copy_to_device_on(a.ref(), 0, src.data(), bytes, c->handle());
  opencl::check(clEnqueueCopyBuffer(c->queue.get(), as_mem(a), as_mem(b), 0, 0, bytes, 0, nullptr, nullptr),
                "clEnqueueCopyBuffer");
  auto out = copier.copy_to_host_on(back.data(), b.ref(), 0, bytes, c->handle());
  out.wait();
  EXPECT_NO_THROW(in.wait());
  EXPECT_EQ(back, src);
  opencl::check(clFinish(c->queue.get()), "clFinish");  // let go: a held queue would not finish
}

// Work queued on the caller's queue before a copy to the host (fills, the
// last one writing 0x77) lands before the copier reads the buffer, in both
// forms: ordered after the queue, and on it.
TEST(StagedOpenCLQueue, CopyToHostWaitsForTheWorkQueuedBefore) {
  XFER_REQUIRE_POCL_CALLER(c);
  auto step = opencl::make_staged_step(c->found.platform, c->found.device, c->ctx);
  mem::staged_copier copier(*step, with_tuning(small_chunks()));
  const std::size_t bytes = std::size_t{8} << 20;
  device_buffer dev(*step, bytes);
  for (const bool on : {false, true}) {
    for (int i = 0; i < 8; ++i) {
      const unsigned char fill = i == 7 ? 0x77 : static_cast<unsigned char>(i + 1);
      opencl::check(clEnqueueFillBuffer(c->queue.get(), as_mem(dev), &fill, 1, 0, bytes, 0, nullptr, nullptr),
                    "clEnqueueFillBuffer");
    }
    std::vector<unsigned char> back(bytes, 0);
    (on ? copier.copy_to_host_on(back.data(), dev.ref(), 0, bytes, c->handle())
        : copier.copy_to_host_async(back.data(), dev.ref(), 0, bytes, c->handle()))
        .wait();
    std::size_t wrong = 0;
    for (unsigned char x : back) wrong += x != 0x77;
    EXPECT_EQ(wrong, 0u) << (on ? "on" : "after") << " the queue: read before the fills ended";
  }
}

// The step's own context (the installed make_staged_step), the caller's
// queue in another: the mark is waited for on the host, the hold is a user
// event of the caller's context.
TEST(StagedOpenCLQueue, QueueOfAnotherContextOfTheDevice) {
  XFER_REQUIRE_POCL_CALLER(c);
  auto step = opencl::make_staged_step("pocl");
  mem::staged_copier copier(*step, with_tuning(small_chunks()));
  const std::size_t bytes = 64 * 4096;
  device_buffer dev(*step, bytes);
  const auto src = pattern(bytes, 22);
  std::vector<unsigned char> back(bytes);
  copier.copy_to_device_on(dev.ref(), 0, src.data(), bytes, c->handle()).wait();
  copier.copy_to_host_on(back.data(), dev.ref(), 0, bytes, c->handle()).wait();
  EXPECT_EQ(back, src);
  cl_event after = nullptr;
  auto done = copier.copy_to_device_on(dev.ref(), 0, src.data(), bytes, c->handle());
  opencl::check(clEnqueueMarkerWithWaitList(c->queue.get(), 0, nullptr, &after), "clEnqueueMarkerWithWaitList");
  opencl::check(clWaitForEvents(1, &after), "clWaitForEvents");  // released: it would hang otherwise
  clReleaseEvent(after);
  EXPECT_NO_THROW(done.wait());
}

TEST(StagedOpenCLQueue, NullQueueIsRefused) {
  XFER_REQUIRE_POCL_CALLER(c);
  auto step = opencl::make_staged_step(c->found.platform, c->found.device, c->ctx);
  mem::staged_copier copier(*step, with_tuning(small_chunks()));
  device_buffer dev(*step, 4096);
  std::vector<unsigned char> host(4096);
  try {
    (void)copier.copy_to_host_on(host.data(), dev.ref(), 0, host.size(), nullptr);
    FAIL() << "no error";
  } catch (const staged_error& e) {
    EXPECT_EQ(e.why(), staged_error::reason::bad_argument) << e.what();
  }
  // The blocking path through a marked queue still works afterwards.
  copier.copy_to_device_async(dev.ref(), 0, host.data(), host.size(), c->handle()).wait();
}

// A queue of another device (PoCL lists one per kind it was built with:
// where it has a second, its queue is refused as a bad argument naming it).
TEST(StagedOpenCLQueue, QueueOfAnotherDeviceIsRefused) {
  XFER_REQUIRE_POCL_CALLER(c);
  std::unique_ptr<mem::device_step> other;
  try {
    other = opencl::make_staged_step("pocl", 1);
  } catch (const std::exception& e) {
    GTEST_SKIP() << "PoCL has one device here: " << e.what();
  }
  mem::staged_copier copier(*other, with_tuning(small_chunks()));
  device_buffer dev(*other, 4096);
  std::vector<unsigned char> host(4096);
  try {
    (void)copier.copy_to_device_on(dev.ref(), 0, host.data(), host.size(), c->handle());
    FAIL() << "no error";
  } catch (const staged_error& e) {
    EXPECT_EQ(e.why(), staged_error::reason::bad_argument) << e.what();
    EXPECT_NE(e.cause().find("belongs to device"), std::string::npos) << e.what();
  }
}

}  // namespace xfer::test
