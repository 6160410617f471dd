// The OpenCL halves of the timing protocol: the gate holds commands, the
// watchdog frees a stuck gate and core's loop falls back to running ungated,
// big batches split into gated sub-batches, and the core batches enough
// repetitions for a coarse profiling clock.
#include <atomic>
#include <chrono>
#include <gtest/gtest.h>
#include <thread>
#include <xfer/core/runner.hpp>

#include "opencl/gate.hpp"
#include "pocl.hpp"

namespace xfer::opencl {
namespace {

using namespace std::chrono_literals;

cl_int status_of(cl_event e) {
  cl_int s = 0;
  check(clGetEventInfo(e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof s, &s, nullptr), "clGetEventInfo");
  return s;
}

TEST(Gate, HoldsCommandsUntilOpened) {
  XFER_REQUIRE_POCL(b);
  auto& dev = b->context_for(0);
  cl_int rc = CL_SUCCESS;
  mem_object buf(clCreateBuffer(dev.ctx.get(), CL_MEM_READ_WRITE, 64, nullptr, &rc));
  check(rc, "clCreateBuffer");
  char host[64] = {};
  user_event_gate gate(dev.ctx, 10s);
  gate.close();
  const cl_event hold = gate.wait_event();
  ASSERT_NE(hold, nullptr);
  cl_event raw = nullptr;
  check(clEnqueueWriteBuffer(dev.queues[0].get(), buf.get(), CL_FALSE, 0, 64, host, 1, &hold, &raw), "write");
  event e(raw);
  clFlush(dev.queues[0].get());
  std::this_thread::sleep_for(20ms);
  EXPECT_NE(status_of(e.get()), CL_COMPLETE) << "the command ran through a closed gate";
  gate.open();
  check(clWaitForEvents(1, &raw), "clWaitForEvents");
  EXPECT_EQ(status_of(e.get()), CL_COMPLETE);
  EXPECT_FALSE(gate.forced());
  EXPECT_EQ(gate.wait_event(), nullptr);
}

TEST(Gate, WatchdogOpensAGateLeftClosed) {
  XFER_REQUIRE_POCL(b);
  auto& dev = b->context_for(0);
  user_event_gate gate(dev.ctx, 30ms);
  // The clock starts before close(), where the watchdog's 30 ms start: on a
  // loaded machine this thread may be descheduled between the two.
  const auto t0 = std::chrono::steady_clock::now();
  gate.close();
  const cl_event hold = gate.wait_event();
  // What a driver that blocks behind the gate amounts to: waiting on it.
  check(clWaitForEvents(1, &hold), "clWaitForEvents");
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 30ms);
  EXPECT_TRUE(gate.forced());
  gate.open();  // completing twice must be harmless
  gate.close();
  EXPECT_FALSE(gate.forced());
  gate.open();
}

// A driver that blocks inside an enqueue until the command can run (what
// NVIDIA's does with pageable memory), played by an enqueue that waits on the
// gate's own event: the watchdog opens the gate, and core's loop runs the
// sub-batch again ungated, runs ungated from then on, and says so.
TEST(Gate, AGateThatCannotHoldFallsBackUngatedAndSaysSo) {
  XFER_REQUIRE_POCL(b);
  auto& dev = b->context_for(0);
  user_event_gate gate(dev.ctx, 30ms);
  timed_batches loop(gate);
  wall_timer timer;
  std::size_t blocked = 0, calls = 0;
  const sample s = loop.run(timer, 3, [&](std::size_t, std::size_t) {
    ++calls;
    if (const cl_event hold = gate.wait_event()) {
      check(clWaitForEvents(1, &hold), "clWaitForEvents");
      ++blocked;
    }
  });
  EXPECT_EQ(blocked, 3u) << "each enqueue of the gated sub-batch waited on the gate";
  EXPECT_EQ(calls, 6u) << "the sub-batch ran again, ungated";
  EXPECT_NE(s.gate_fallback.find("the gate gave way (its watchdog opens it after 30 ms)"), std::string::npos)
      << s.gate_fallback;

  // Later batches never close the gate again.
  blocked = 0;
  const sample next = loop.run(timer, 3, [&](std::size_t, std::size_t) {
    if (gate.wait_event()) ++blocked;
  });
  EXPECT_EQ(blocked, 0u);
  EXPECT_EQ(next.gate_fallback, s.gate_fallback);
}

TEST(Batching, EventRoutesReportTheDeviceProfilingResolution) {
  XFER_REQUIRE_POCL(b);
  const auto& caps = b->context_for(0).caps;
  auto gated = b->prepare({b->name(), 0, route_kind::copy_async, direction::h2d, "aligned", 64});
  EXPECT_DOUBLE_EQ(gated->timer_resolution_s(), std::max<std::size_t>(caps.timer_resolution_ns, 1) * 1e-9);
  EXPECT_EQ(std::to_string(caps.timer_resolution_ns), b->devices()[0].details.at("profiling_timer_resolution_ns"));
  auto blocking = b->prepare({b->name(), 0, route_kind::copy_sync, direction::h2d, "aligned", 64});
  EXPECT_DOUBLE_EQ(blocking->timer_resolution_s(), wall_timer().resolution_s());
}

TEST(Batching, LargeBatchesRunAsGatedSubBatches) {
  XFER_REQUIRE_POCL(b);
  for (direction d : {direction::h2d, direction::bidir, direction::rw}) {
    auto t = b->prepare({b->name(), 0, route_kind::copy_async, d, "alloc-host-ptr", 64});
    const std::size_t reps = 2 * max_ops_behind_gate + 7;  // three sub-batches, the last one short
    const sample s = t->run(reps);
    EXPECT_GT(s.seconds, 0) << to_string(d);
    EXPECT_GT(s.wall_seconds, 0) << to_string(d);
    t->verify();
  }
}

// Reports a coarse clock (NVIDIA's ticks in 1 us) over a real PoCL transfer.
class coarse_clock final : public transfer {
 public:
  coarse_clock(std::unique_ptr<transfer> inner, double resolution) : inner_(std::move(inner)), res_(resolution) {}
  sample run(std::size_t reps) override { return inner_->run(reps); }
  void verify() override { inner_->verify(); }
  void poison_sample() override { inner_->poison_sample(); }
  void check_sample() override { inner_->check_sample(); }
  first_use setup_costs() const override { return inner_->setup_costs(); }
  clock_kind timer_kind() const override { return inner_->timer_kind(); }
  double timer_resolution_s() const override { return res_; }
  std::uint64_t bytes_per_rep() const override { return inner_->bytes_per_rep(); }

 private:
  std::unique_ptr<transfer> inner_;
  double res_;
};

TEST(Batching, ACoarseClockGetsLongerSamples) {
  XFER_REQUIRE_POCL(b);
  const point_spec p{b->name(), 0, route_kind::copy_async, direction::h2d, "alloc-host-ptr", 64};
  measure_options o;
  o.min_sample_s = 1e-9;  // let the clock's resolution decide alone
  o.min_sample_ticks = 100;
  o.max_time_s = 0.05;
  o.warmup_s = 0.005;
  o.max_samples = 20;
  std::atomic<bool> stop{false};
  const device_info dev = b->devices()[0];

  coarse_clock coarse(b->prepare(p), 1e-6);
  const point_result r = measure(coarse, p, dev, o, stop);
  ASSERT_EQ(to_string(r.status), std::string("ok")) << r.reason;
  // 100 ticks of 1 us: each sample spans about 100 us of device time. The
  // per-rep estimate comes from the warm-up, which on a busy 16-core machine
  // ran 4.5x slower than the samples (gate at aa8255f: 2 reps of 11 us), so
  // the bound allows a tenth.
  EXPECT_GE(r.reps_per_sample * r.stats.median, 0.1 * 100e-6) << r.reps_per_sample << " reps";
  EXPECT_GT(r.reps_per_sample, 1u);

  coarse_clock fine(b->prepare(p), 1e-9);
  const point_result f = measure(fine, p, dev, o, stop);
  ASSERT_EQ(to_string(f.status), std::string("ok")) << f.reason;
  EXPECT_LT(f.reps_per_sample, r.reps_per_sample);
}

}  // namespace
}  // namespace xfer::opencl
